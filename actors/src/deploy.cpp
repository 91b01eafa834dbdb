/// Connecting a run to its hosts (see deploy.hpp).
#include "atrain/actors/deploy.hpp"

#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "atrain/actors/basp_guard.hpp"
#include "atrain/actors/checkpoint.hpp"  // error_text
#include "atrain/actors/tls_watch.hpp"
#include "atrain/messages/spec.hpp"

namespace atrain {

namespace {

[[nodiscard]] caf::error failure(std::string what) {
  return caf::make_error(caf::sec::runtime_error, std::move(what));
}

[[nodiscard]] std::string openssl_reason() {
  const auto code = ERR_get_error();
  if (code == 0)
    return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

[[nodiscard]] std::string resolve(const run_plan& plan, const std::string& p) {
  loaded_spec ls;
  ls.base_dir = plan.base_dir;
  return p.empty() ? p : resolve_path(ls, p);
}

/// This process's open sockets (file descriptors).
[[nodiscard]] std::set<int> open_sockets() {
  std::set<int> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator{"/proc/self/fd", ec}) {
    std::error_code link_ec;
    const auto target = std::filesystem::read_symlink(e.path(), link_ec).string();
    if (!link_ec && target.rfind("socket:", 0) == 0)
      out.insert(std::atoi(e.path().filename().c_str()));
  }
  return out;
}

/// getpeername() of `fd` as bytes (empty: not a connected socket).
[[nodiscard]] std::string peer_of(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return {};
  return std::string{reinterpret_cast<const char*>(&a), len};
}

[[nodiscard]] std::uint16_t port_of(const std::string& peer) {
  sockaddr_storage a{};
  std::memcpy(&a, peer.data(), std::min(peer.size(), sizeof a));
  if (a.ss_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}

/// The socket CAF got for a connection to `port` just made (open now, not
/// `before`): its descriptor and peer, or -1 when there is not exactly one.
[[nodiscard]] std::pair<int, std::string> new_connection(const std::set<int>& before,
                                                         std::uint16_t port) {
  std::pair<int, std::string> found{-1, {}};
  int count = 0;
  for (int fd : open_sockets())
    if (before.count(fd) == 0)
      if (auto peer = peer_of(fd); !peer.empty() && port_of(peer) == port && ++count == 1)
        found = {fd, std::move(peer)};
  return count == 1 ? found : std::pair<int, std::string>{-1, {}};
}

}  // namespace

caf::expected<void> check_tls_files(const tls_files& tls) {
  if (!tls.enabled())
    return caf::unit;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  if (!ctx)
    return failure("cannot create a TLS context: " + openssl_reason());
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.certificate.c_str()) != 1)
    return failure(tls.certificate + ": cannot use as a PEM certificate: " + openssl_reason());
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key.c_str(), SSL_FILETYPE_PEM) != 1)
    return failure(tls.key + ": cannot use as a PEM private key: " + openssl_reason());
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    return failure(tls.key + ": does not match the certificate " + tls.certificate + ": " +
                   openssl_reason());
  if (SSL_CTX_load_verify_locations(ctx.get(), tls.ca.c_str(), nullptr) != 1)
    return failure(tls.ca + ": cannot use as a PEM CA certificate: " + openssl_reason());
  return caf::unit;
}

void configure_real_clock(caf::actor_system_config& cfg, std::size_t threads) {
  // Work stealing resumes the actor that was just made ready first (LIFO),
  // so a worker and its buffer ping-pong on one thread and starve the
  // neighbours' packets (measured: staleness in the hundreds of wakes).
  // The shared FIFO queue keeps every node's messages flowing.
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-threads",
          threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency()));
}

void configure_networking(caf::actor_system_config& cfg, const tls_files& tls) {
  cfg.load<caf::io::middleman>();
  if (tls.enabled()) {
    cfg.load<caf::openssl::manager>();
    watch_tls_handshakes();  // refused handshakes: peer and reason (caf_openssl logs none)
    // With any of these set caf_openssl verifies the peer on both ends
    // (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT); with none it
    // would fall back to anonymous ciphers, which we never allow.
    cfg.openssl_certificate = tls.certificate;
    cfg.openssl_key = tls.key;
    cfg.openssl_cafile = tls.ca;
  }
  // A killed peer closes its sockets and is seen at once; a frozen or cut
  // off one only through missing heartbeats.
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds{500}});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::seconds{4}});
  // No direct connections between hosts: CAF would make them itself, in
  // plain BASP without authentication (and open a port for them on every
  // interface). Hosts reach each other through the driver (CAF routes).
  cfg.set("middleman.enable-automatic-connections", false);
  cfg.set("middleman.app-identifiers", std::vector<std::string>{"atrain-0"});
}

caf::expected<std::string> read_secret_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  if (!in)
    return failure(path + ": cannot read the secret file");
  auto s = text.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.pop_back();
  if (s.size() < 16)
    return failure(path + ": the secret must have at least 16 characters");
  return s;
}

caf::expected<std::pair<std::string, std::uint16_t>> split_host_port(const std::string& s) {
  std::string why;
  auto hp = parse_host_port(s, why);
  if (!hp)
    return failure("'" + s + "': " + why);
  return *hp;
}

caf::expected<deploy_options> deploy_options_of(const run_plan& plan, deploy_options flags) {
  const auto& d = plan.deploy;
  deploy_options o = std::move(flags);
  if (o.hosts.empty())
    o.hosts = d.hosts;
  if (o.placement.empty())
    o.placement = d.placement;
  if (!o.tls.enabled() && !d.tls_certificate.empty())
    o.tls = {resolve(plan, d.tls_certificate), resolve(plan, d.tls_key), resolve(plan, d.tls_ca)};
  if (o.secret.empty() && !d.secret_file.empty()) {
    auto secret = read_secret_file(resolve(plan, d.secret_file));
    if (!secret)
      return secret.error();
    o.secret = std::move(*secret);
  }
  if (o.hosts.empty())
    return o;
  if (plan.virtual_clock())
    return failure("only REAL-clock runs span hosts (the spec says clock: VIRTUAL)");
  for (const auto& h : o.hosts)
    if (auto hp = split_host_port(h); !hp)
      return hp.error();
  if (!o.placement.empty() && o.placement.size() != plan.nodes())
    return failure("the placement names " + std::to_string(o.placement.size()) + " hosts for " +
                   std::to_string(plan.nodes()) + " nodes");
  for (auto h : o.placement)
    if (h >= o.hosts.size())
      return failure("the placement names host " + std::to_string(h) + " of " +
                     std::to_string(o.hosts.size()));
  if (o.secret.empty() && !o.tls.enabled())
    return failure("a multi-host run needs the hosts' shared secret (--secret-file or "
                   "deploy.secret_file) or TLS (--tls-cert/--tls-key/--tls-ca)");
  if (auto ok = check_tls_files(o.tls); !ok)
    return ok.error();
  return o;
}

caf::expected<std::shared_ptr<const deployment>>
connect_hosts(caf::actor_system& sys, const run_plan& plan, const deploy_options& opts) {
  auto d = std::make_shared<deployment>();
  d->secret = opts.secret;
  for (const auto& name : opts.hosts) {
    auto hp = split_host_port(name);
    if (!hp)
      return hp.error();
    const auto refused_before = tls_handshakes_refused();
    const auto sockets_before = open_sockets();
    // Without TLS the host's guard wants the shared secret's
    // challenge-response before any BASP (basp_guard.hpp).
    auto h = opts.tls.enabled() ? caf::openssl::remote_actor(sys, hp->first, hp->second)
                                : connect_authenticated(sys, hp->first, hp->second, opts.secret,
                                                        std::chrono::seconds{10});
    const auto tls_why = opts.tls.enabled() && tls_handshakes_refused() != refused_before
                           ? " (TLS handshake: " + last_outgoing_tls_refusal() + ")"
                           : std::string{};
    if (!h)
      return failure("cannot reach host " + name + ": " + error_text(h.error()) + tls_why +
                     (opts.tls.enabled() ? " (with TLS: is it an `atrain node` with a certificate "
                                           "of the same CA?)"
                                         : " (is `atrain node --listen " + name +
                                             "` running, with the same --secret-file?)"));
    d->hosts.push_back(*h);
    d->names.push_back(name);
    auto [fd, peer] = new_connection(sockets_before, hp->second);
    d->sockets.push_back(fd);
    d->peers.push_back(std::move(peer));
  }
  // The driver only connects out: should a CAF option have turned automatic
  // connections on, the port CAF opened for them (plain BASP on every
  // interface, even with TLS) goes.
  if (auto ok = close_automatic_connection_port(sys); !ok)
    return failure("cannot close CAF's automatic-connection port: " + error_text(ok.error()));
  d->host_of = placement_of(opts, plan.nodes());
  return std::shared_ptr<const deployment>{std::move(d)};
}

bool abandon_host(const deployment& d, std::size_t h) {
  if (h >= d.sockets.size() || d.sockets[h] < 0 || d.peers[h].empty())
    return false;
  const int fd = d.sockets[h];
  if (peer_of(fd) != d.peers[h])  // closed by CAF meanwhile (the number may be reused)
    return false;
  const linger reset{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  // CAF's next write fails (EPIPE), its multiplexer drops the socket and
  // closes it: with linger 0 the kernel discards the unsent bytes and resets.
  return ::shutdown(fd, SHUT_RDWR) == 0;
}

std::vector<std::uint32_t> placement_of(const deploy_options& opts, std::size_t nodes) {
  if (!opts.placement.empty() || opts.hosts.empty())
    return opts.placement;
  std::vector<std::uint32_t> out(nodes);
  for (std::size_t i = 0; i < nodes; ++i)
    out[i] = static_cast<std::uint32_t>(i % opts.hosts.size());
  return out;
}

void record_deploy(const deployment& d, proto::Deployment& out) {
  *out.mutable_hosts() = {d.names.begin(), d.names.end()};
  *out.mutable_placement() = {d.host_of.begin(), d.host_of.end()};
}

caf::expected<void> check_resume_deploy(const proto::Checkpoint& ck, const std::string& file,
                                        const deploy_options& opts, std::size_t nodes) {
  const auto& was = ck.spec().deploy();
  auto where = [](std::size_t hosts) {
    return hosts == 0 ? std::string{"in one process"}
                      : "across " + std::to_string(hosts) + " host" + (hosts > 1 ? "s" : "");
  };
  const std::string advice = " (resume with the deploy it was taken with: as many hosts, "
                             "the nodes placed alike; the addresses may change)";
  const auto hosts = static_cast<std::size_t>(was.hosts_size());
  if (hosts != opts.hosts.size())
    return failure(file + ": was taken " + where(hosts) + "; this run would run " +
                   where(opts.hosts.size()) + advice);
  if (hosts == 0)
    return caf::unit;
  const auto now = placement_of(opts, nodes);
  for (std::size_t i = 0; i < nodes && i < now.size(); ++i)
    if (static_cast<int>(i) >= was.placement_size() || was.placement(static_cast<int>(i)) != now[i])
      return failure(file + ": node " + std::to_string(i) + " ran on host " +
                     (static_cast<int>(i) < was.placement_size()
                        ? std::to_string(was.placement(static_cast<int>(i)))
                        : std::string{"?"}) +
                     " when it was taken; this run places it on host " + std::to_string(now[i]) +
                     advice);
  return caf::unit;
}

std::vector<proto::Checkpoint> checkpoint_parts(const proto::Checkpoint& ck,
                                                const std::vector<std::uint32_t>& host_of,
                                                std::size_t hosts) {
  proto::Checkpoint shell = ck;  // one copy: every field but the per-node ones
  shell.clear_links();
  shell.clear_evaluator();
  shell.clear_nodes();
  std::vector<proto::Checkpoint> parts(hosts, shell);
  for (const auto& s : ck.nodes()) {
    const auto h = s.node() < host_of.size() ? host_of[s.node()] : hosts;
    for (std::size_t k = 0; k < hosts; ++k) {
      auto* entry = parts[k].add_nodes();
      if (k == h)
        *entry = s;
      else
        entry->set_node(s.node());
    }
  }
  return parts;
}

}  // namespace atrain
