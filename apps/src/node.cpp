/// `atrain node`: a host process of multi-host runs (DESIGN.md "Across
/// machines"). It publishes the spawner of actors/host.hpp and serves until
/// SIGINT or SIGTERM.
///
/// Who may use it: with TLS (--tls-*), peers holding a certificate of the
/// same CA (mutual TLS through caf_openssl); without TLS, peers presenting
/// the shared secret (--secret-file), and only on loopback unless
/// --allow-remote says otherwise.
#include "node.hpp"

#include <csignal>
#include <iostream>

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "atrain/actors/deploy.hpp"
#include "atrain/actors/host.hpp"
#include "commands.hpp"

namespace atrain::cli {

namespace {

struct node_args {
  std::string listen = "127.0.0.1:7420";
  std::string secret_file;
  std::string data_root;
  tls_files tls;
  bool allow_remote = false;
  std::size_t max_runs = 4;
};

[[nodiscard]] bool parse_node(const std::vector<std::string>& args, node_args& n) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--allow-remote") {
      n.allow_remote = true;
      continue;
    }
    if (i + 1 >= args.size()) {
      std::cerr << "atrain node: " << (a.rfind("--", 0) == 0 ? a + " needs a value" : "unexpected argument '" + a + "'") << "\n";
      return false;
    }
    const auto& v = args[++i];
    if (a == "--listen")
      n.listen = v;
    else if (a == "--secret-file")
      n.secret_file = v;
    else if (a == "--data-root")
      n.data_root = v;
    else if (a == "--tls-cert")
      n.tls.certificate = v;
    else if (a == "--tls-key")
      n.tls.key = v;
    else if (a == "--tls-ca")
      n.tls.ca = v;
    else if (a == "--max-runs" && v.find_first_not_of("0123456789") == std::string::npos &&
             !v.empty() && std::stoul(v) >= 1 && std::stoul(v) <= 64)
      n.max_runs = std::stoul(v);
    else {
      std::cerr << "atrain node: unknown option or bad value '" << a << " " << v << "'\n";
      return false;
    }
  }
  return true;
}

[[nodiscard]] bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" ||
         host.rfind("127.", 0) == 0;
}

} // namespace

int node(const std::vector<std::string>& args) {
  node_args n;
  if (!parse_node(args, n))
    return 2;
  auto hp = split_host_port(n.listen);
  if (!hp) {
    std::cerr << "atrain node: --listen " << caf::to_string(hp.error()) << "\n";
    return 2;
  }
  const int tls_given = !n.tls.certificate.empty() + !n.tls.key.empty() + !n.tls.ca.empty();
  if (tls_given != 0 && tls_given != 3) {
    std::cerr << "atrain node: --tls-cert, --tls-key and --tls-ca go together\n";
    return 2;
  }
  if (auto ok = check_tls_files(n.tls); !ok) {
    std::cerr << "atrain node: " << caf::to_string(ok.error()) << "\n";
    return 2;
  }
  host_options opts;
  opts.data_root = n.data_root;
  opts.max_runs = n.max_runs;
  if (!n.secret_file.empty()) {
    auto secret = read_secret_file(n.secret_file);
    if (!secret) {
      std::cerr << "atrain node: " << caf::to_string(secret.error()) << "\n";
      return 2;
    }
    opts.secret = *secret;
  }
  if (!n.tls.enabled() && opts.secret.empty()) {
    std::cerr << "atrain node: without TLS a host needs --secret-file: peers must present the "
                 "shared secret before anything is spawned\n";
    return 2;
  }
  if (!n.tls.enabled() && !is_loopback(hp->first) && !n.allow_remote) {
    std::cerr << "atrain node: refusing to listen on " << hp->first
              << " without TLS (the shared secret would cross the network in clear): give "
                 "--tls-cert/--tls-key/--tls-ca, or --allow-remote on a network you trust\n";
    return 2;
  }
  // SIGINT/SIGTERM are taken by sigwait below: block them before CAF's
  // threads start so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  caf::actor_system_config cfg;
  register_message_types(cfg);
  configure_real_clock(cfg, 0);
  configure_networking(cfg, n.tls);
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  auto spawner = spawn_host(sys, opts);
  auto port = n.tls.enabled()
                ? caf::openssl::publish(spawner, hp->second, hp->first.c_str(), true)
                : sys.middleman().publish(spawner, hp->second, hp->first.c_str(), true);
  if (!port) {
    std::cerr << "atrain node: cannot listen on " << n.listen << ": " << sys.render(port.error())
              << "\n";
    caf::anon_send_exit(spawner, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::cout << "atrain node: listening on " << hp->first << ":" << *port << " ("
            << (n.tls.enabled() ? "mutual TLS" : "shared secret") << ")" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "atrain node: stopping (signal " << sig << ")" << std::endl;
  caf::anon_send_exit(spawner, caf::exit_reason::user_shutdown);
  return 0;
}

} // namespace atrain::cli
