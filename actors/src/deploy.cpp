/// Connecting a run to its hosts (see deploy.hpp).
#include "atrain/actors/deploy.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include <fstream>
#include <thread>
#include <sstream>

#include "atrain/actors/basp_guard.hpp"
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

} // namespace

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
  cfg.set("middleman.enable-automatic-connections", true);
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
  const auto& d = plan.spec.deploy();
  deploy_options o = std::move(flags);
  if (o.hosts.empty())
    o.hosts.assign(d.hosts().begin(), d.hosts().end());
  if (o.placement.empty())
    o.placement.assign(d.placement().begin(), d.placement().end());
  if (!o.tls.enabled() && d.tls().certificate().size() > 0)
    o.tls = {resolve(plan, d.tls().certificate()), resolve(plan, d.tls().key()),
             resolve(plan, d.tls().ca())};
  if (o.secret.empty() && !d.secret_file().empty()) {
    auto secret = read_secret_file(resolve(plan, d.secret_file()));
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
    return failure("the placement names " + std::to_string(o.placement.size()) +
                   " hosts for " + std::to_string(plan.nodes()) + " nodes");
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
    auto h = opts.tls.enabled() ? caf::openssl::remote_actor(sys, hp->first, hp->second)
                                : sys.middleman().remote_actor(hp->first, hp->second);
    if (!h)
      return failure("cannot reach host " + name + ": " + sys.render(h.error()) +
                     (opts.tls.enabled() ? " (with TLS: is it an `atrain node` with a certificate "
                                           "of the same CA?)"
                                         : " (is `atrain node --listen " + name + "` running?)"));
    d->hosts.push_back(*h);
    d->names.push_back(name);
  }
  // The driver only connects out: the port CAF opened for peers to connect
  // to it directly (with its first connection; plain BASP on every
  // interface, even with TLS) goes.
  if (auto ok = replace_automatic_connection_port(sys, "", 0); !ok)
    return failure("cannot close CAF's automatic-connection port: " + sys.render(ok.error()));
  for (std::uint32_t i = 0; i < plan.nodes(); ++i)
    d->host_of.push_back(opts.placement.empty() ? i % static_cast<std::uint32_t>(d->hosts.size())
                                                : opts.placement[i]);
  return std::shared_ptr<const deployment>{std::move(d)};
}

} // namespace atrain
