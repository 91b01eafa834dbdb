/// `atrain node`: a host process of multi-host runs (DESIGN.md "Across
/// machines"). It publishes the spawner of actors/host.hpp and serves until
/// SIGINT or SIGTERM.
///
/// Who may use it: with TLS (--tls-*), peers holding a certificate of the
/// same CA (mutual TLS through caf_openssl); without TLS, peers presenting
/// the shared secret (--secret-file), and only on loopback unless
/// --allow-remote says otherwise. Without TLS the public port belongs to the
/// BASP guard (actors/basp_guard.hpp), which refuses oversized and unknown
/// BASP headers before CAF allocates anything for them; CAF's own BASP port
/// is on 127.0.0.1 only.
#include "node.hpp"

#include <algorithm>
#include <csignal>
#include <iostream>

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "atrain/actors/basp_guard.hpp"
#include "atrain/actors/deploy.hpp"
#include "atrain/actors/host.hpp"
#include "atrain/actors/tls_watch.hpp"
#include "commands.hpp"

namespace atrain::cli {

namespace {

struct node_args {
  std::string listen = "127.0.0.1:7420";
  std::string secret_file;
  std::string data_root;
  tls_files tls;
  bool allow_remote = false;
  bool guard = true;
  std::size_t max_runs = 4;
  std::uint32_t max_message_mb = default_max_basp_payload >> 20;
};

void node_usage(std::ostream& out) {
  out << "usage: atrain node [--listen HOST:PORT] [--secret-file F] [--data-root DIR]\n"
         "                   [--tls-cert F --tls-key F --tls-ca F] [--allow-remote] [--max-runs N]\n"
         "                   [--max-message-mb N] [--no-guard]\n"
         "Serves as a host of multi-host runs until SIGINT/SIGTERM.\n"
         "  --listen HOST:PORT   where peers connect (default 127.0.0.1:7420; port 0 picks one)\n"
         "  --secret-file F      the shared secret peers present (required without TLS)\n"
         "  --data-root DIR      where relative dataset paths resolve (default: the driver's)\n"
         "  --tls-cert/-key/-ca  mutual TLS: only peers with a certificate of that CA connect\n"
         "  --allow-remote       without TLS, listen beyond loopback (the secret crosses in clear)\n"
         "  --max-runs N         runs served at once (1..64, default 4)\n"
         "  --max-message-mb N   without TLS: a BASP header announcing more than N MiB closes the\n"
         "                       connection before anything is allocated (1..4095, default "
      << (default_max_basp_payload >> 20)
      << ";\n"
         "                       atrain's own messages stay far below it)\n"
         "  --no-guard           without TLS: CAF listens on HOST:PORT itself, without the BASP\n"
         "                       guard (for measuring the guard's cost; loopback only)\n";
}

/// Whether `v` is a whole number in [1, max].
[[nodiscard]] bool is_count(const std::string& v, unsigned long max) {
  return !v.empty() && v.size() <= 6 && v.find_first_not_of("0123456789") == std::string::npos &&
         std::stoul(v) >= 1 && std::stoul(v) <= max;
}

[[nodiscard]] bool parse_node(const std::vector<std::string>& args, node_args& n) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--allow-remote") {
      n.allow_remote = true;
      continue;
    }
    if (a == "--no-guard") {
      n.guard = false;
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
    else if (a == "--max-runs" && is_count(v, 64))
      n.max_runs = std::stoul(v);
    else if (a == "--max-message-mb" && is_count(v, 4095))
      n.max_message_mb = static_cast<std::uint32_t>(std::stoul(v));
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

/// Puts the BASP guard on the public address in front of CAF's BASP port
/// (`basp_port`, on 127.0.0.1) and sends direct connections between hosts
/// through it too.
[[nodiscard]] caf::expected<basp_guard>
serve_through_guard(caf::actor_system& sys, const std::pair<std::string, std::uint16_t>& listen,
                    std::uint16_t basp_port, std::uint32_t max_message_mb) {
  basp_guard_options g;
  g.host = listen.first;
  g.port = listen.second;
  g.basp_port = basp_port;
  g.max_payload = max_message_mb << 20;
  auto guard = spawn_basp_guard(sys, std::move(g));
  if (!guard)
    return guard.error();
  if (auto ok = replace_automatic_connection_port(sys, listen.first, guard->port); !ok)
    return ok.error();
  return guard;
}

/// The host's report on itself at exit (stderr, with the refusals).
void log_counters(caf::actor_system& sys, const caf::actor& spawner, bool tls) {
  std::string line = "atrain node: stopping;";
  caf::scoped_actor self{sys};
  self->request(spawner, std::chrono::seconds{2}, stats_atom::value)
    .receive(
      [&](std::uint64_t runs, std::uint64_t refused, std::uint64_t unexpected) {
        line += " served " + std::to_string(runs) + " runs, refused " + std::to_string(refused) +
                " spawn requests, ignored " + std::to_string(unexpected) + " unexpected messages";
      },
      [&](caf::error& e) { line += " (no counters from the spawner: " + sys.render(e) + ")"; });
  if (tls)
    line += ", refused " + std::to_string(tls_handshakes_refused()) + " TLS handshakes";
  std::cerr << line + "\n" << std::flush;
}

} // namespace

int node(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--help") != args.end()) {
    node_usage(std::cout);
    return 0;
  }
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
  if (!n.guard && (n.tls.enabled() || !is_loopback(hp->first))) {
    std::cerr << "atrain node: --no-guard is for measurements on loopback without TLS only\n";
    return 2;
  }
  // SIGINT/SIGTERM are taken by sigwait below: block them before CAF's
  // threads start so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  if (n.tls.enabled())
    on_tls_refusal([](const tls_refusal& r) {
      // one write per line: the network thread and the spawner both log
      std::cerr << ((r.incoming ? "atrain node: refused a TLS connection from "
                                : "atrain node: a TLS connection to ") +
                    r.peer + (r.incoming ? "" : " failed") + ": " + r.reason + " (" +
                    std::to_string(r.count) + " TLS handshake" + (r.count == 1 ? "" : "s") +
                    " refused so far)\n")
                << std::flush;
    });
  caf::actor_system_config cfg;
  register_message_types(cfg);
  configure_real_clock(cfg, 0);
  configure_networking(cfg, n.tls);
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  auto spawner = spawn_host(sys, opts);
  const bool guarded = !n.tls.enabled() && n.guard;
  auto port = n.tls.enabled() ? caf::openssl::publish(spawner, hp->second, hp->first.c_str(), true)
              : guarded       ? sys.middleman().publish(spawner, 0, "127.0.0.1", true)
                              : sys.middleman().publish(spawner, hp->second, hp->first.c_str(), true);
  basp_guard guard;
  if (port && guarded) {
    auto g = serve_through_guard(sys, *hp, *port, n.max_message_mb);
    if (g)
      guard = *g;
    port = g ? caf::expected<std::uint16_t>{guard.port} : g.error();
  } else if (port && n.tls.enabled()) {
    // CAF's automatic-connection port would take plain BASP from anyone.
    if (auto ok = replace_automatic_connection_port(sys, "", 0); !ok)
      port = ok.error();
  }
  if (!port) {
    std::cerr << "atrain node: cannot listen on " << n.listen << ": " << sys.render(port.error())
              << "\n";
    caf::anon_send_exit(spawner, caf::exit_reason::user_shutdown);
    if (guard.actor)
      caf::anon_send_exit(guard.actor, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::cout << "atrain node: listening on " << hp->first << ":" << *port << " ("
            << (n.tls.enabled() ? "mutual TLS"
                : guarded       ? "shared secret, BASP guard up to " +
                                    std::to_string(n.max_message_mb) + " MiB"
                                : "shared secret, no guard")
            << ")" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "atrain node: stopping (signal " << sig << ")" << std::endl;
  log_counters(sys, spawner, n.tls.enabled());
  caf::anon_send_exit(spawner, caf::exit_reason::user_shutdown);
  if (guard.actor)
    caf::anon_send_exit(guard.actor, caf::exit_reason::user_shutdown);
  return 0;
}

} // namespace atrain::cli
