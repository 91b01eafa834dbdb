/// `atrain node`: a host process of multi-host runs (docs/ARCHITECTURE.md "Across
/// machines"). It publishes the spawner of actors/host.hpp and serves until
/// SIGINT or SIGTERM.
///
/// Who may use it: with TLS (--tls-*), peers holding a certificate of the
/// same CA (mutual TLS, terminated by the guard); without TLS, peers that
/// prove they hold the shared secret (--secret-file) by a challenge-response
/// before any BASP, and only on loopback unless --allow-remote says
/// otherwise. Either way the public port belongs to the BASP guard
/// (actors/basp_guard.hpp), which authenticates peers, bounds what the
/// unauthenticated may hold, hands authenticated ones to CAF over a socket
/// pair (CAF listens on no port) and refuses oversized and unknown BASP
/// headers before CAF allocates anything for them.
#include "node.hpp"

#include <algorithm>
#include <csignal>
#include <iostream>

#include <caf/io/all.hpp>

#include "atrain/actors/basp_filter.hpp"
#include "atrain/actors/basp_guard.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/deploy.hpp"
#include "atrain/actors/host.hpp"
#include "commands.hpp"
#include "interrupt.hpp"
#include "options.hpp"

namespace atrain::cli {

namespace {

[[nodiscard]] bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

/// Puts the BASP guard on the public address: peers authenticate there
/// (mutual TLS, or the shared secret) and reach `spawner` through it; CAF
/// listens nowhere.
[[nodiscard]] caf::expected<basp_guard>
serve_through_guard(caf::actor_system& sys, const node_args& n,
                    const std::pair<std::string, std::uint16_t>& listen, const host_options& opts,
                    const caf::actor& spawner) {
  basp_guard_options g;
  g.host = listen.first;
  g.port = listen.second;
  if (n.tls.enabled()) {
    auto tls = make_guard_tls_context(n.tls.certificate, n.tls.key, n.tls.ca);
    if (!tls)
      return tls.error();
    g.tls = std::move(*tls);
  } else {
    g.secret = opts.secret;
  }
  g.target = spawner;
  g.owners = opts.owners;
  g.max_payload = n.max_message_mb << 20;
  g.auth_timeout = std::chrono::milliseconds{n.auth_timeout_ms};
  g.idle_timeout = std::chrono::seconds{n.idle_timeout_s};
  g.max_unauthenticated = n.max_unauthenticated;
  g.log = [](const std::string& line) {  // one write per line: several threads log
    std::cerr << "atrain node: " + line + "\n" << std::flush;
  };
  auto guard = spawn_basp_guard(sys, std::move(g));
  if (!guard)
    return guard.error();
  if (auto ok = close_automatic_connection_port(sys); !ok)
    return ok.error();
  return guard;
}

/// The host's report on itself at exit (stderr, with the refusals).
void log_counters(caf::actor_system& sys, const caf::actor& spawner, const caf::actor& guard) {
  std::string line = "atrain node: stopping;";
  caf::scoped_actor self{sys};
  self->request(spawner, std::chrono::seconds{2}, stats_atom::value)
    .receive(
      [&](std::uint64_t runs, std::uint64_t refused, std::uint64_t unexpected) {
        line += " served " + std::to_string(runs) + " runs, refused " + std::to_string(refused) +
                " spawn requests, ignored " + std::to_string(unexpected) + " unexpected messages";
      },
      [&](caf::error& e) { line += " (no counters from the spawner: " + sys.render(e) + ")"; });
  if (guard)
    self->request(guard, std::chrono::seconds{2}, stats_atom::value)
      .receive(
        [&](const std::string& counters) { line += "; BASP guard: " + counters; },
        [&](caf::error& e) { line += " (no counters from the guard: " + sys.render(e) + ")"; });
  std::cerr << line + "\n" << std::flush;
}

}  // namespace

int node(const node_args& n) {
  auto hp = split_host_port(n.listen);
  if (!hp) {
    std::cerr << "atrain node: --listen: " << error_text(hp.error()) << "\n";
    return 2;
  }
  if (auto ok = check_tls_files(n.tls); !ok) {
    std::cerr << "atrain node: " << error_text(ok.error()) << "\n";
    return 2;
  }
  host_options opts;
  opts.data_root = n.data_root;
  opts.max_runs = n.max_runs;
  if (!n.secret_file.empty()) {
    auto secret = read_secret_file(n.secret_file);
    if (!secret) {
      std::cerr << "atrain node: --secret-file: " << error_text(secret.error()) << "\n";
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
              << " without TLS (the secret never crosses the network, but the connection is "
                 "not encrypted): give --tls-cert/--tls-key/--tls-ca, or --allow-remote on a "
                 "network you trust\n";
    return 2;
  }
  if (!n.guard && (n.tls.enabled() || !is_loopback(hp->first))) {
    std::cerr << "atrain node: --no-guard is for measurements on loopback without TLS only\n";
    return 2;
  }
  // SIGINT/SIGTERM are taken by sigwait below: block them before CAF's
  // threads start so that every thread inherits the mask.
  const sigset_t stop_signals = block_stop_signals();
  caf::actor_system_config cfg;
  register_message_types(cfg);
  configure_real_clock(cfg, n.threads);
  configure_networking(cfg, n.tls);
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  if (auto err = apply_caf(cfg, n.caf)) {
    std::cerr << "atrain node: CAF options: " << error_text(err) << "\n";
    return 2;
  }
  caf::actor_system sys{cfg};
  opts.owners = std::make_shared<run_owners>();
  auto spawner = spawn_host(sys, opts);
  const bool guarded = n.guard;  // --no-guard: loopback without TLS only (above)
  basp_guard guard;
  caf::expected<std::uint16_t> port = std::uint16_t{0};
  if (guarded) {
    auto g = serve_through_guard(sys, n, *hp, opts, spawner);
    if (g)
      guard = *g;
    port = g ? caf::expected<std::uint16_t>{guard.port} : g.error();
  } else {
    port = sys.middleman().publish(spawner, hp->second, hp->first.c_str(), true);
    // CAF's automatic-connection port would take plain BASP from anyone.
    if (port)
      if (auto ok = close_automatic_connection_port(sys); !ok)
        port = ok.error();
  }
  if (!port) {
    std::cerr << "atrain node: cannot listen on " << n.listen << ": " << error_text(port.error())
              << "\n";
    caf::anon_send_exit(spawner, caf::exit_reason::user_shutdown);
    if (guard.actor)
      caf::anon_send_exit(guard.actor, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::cout << "atrain node: listening on " << hp->first << ":" << *port << " ("
            << (!guarded ? std::string{"shared secret, no guard"}
                         : std::string{n.tls.enabled() ? "mutual TLS" : "shared secret"} +
                             ", authenticated by the BASP guard (messages up to " +
                             std::to_string(n.max_message_mb) + " MiB)")
            << ")" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "atrain node: stopping (signal " << sig << ")" << std::endl;
  log_counters(sys, spawner, guard.actor);
  caf::anon_send_exit(spawner, caf::exit_reason::user_shutdown);
  if (guard.actor)
    caf::anon_send_exit(guard.actor, caf::exit_reason::user_shutdown);
  return 0;
}

}  // namespace atrain::cli
