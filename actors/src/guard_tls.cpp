/// Mutual TLS inside the BASP guard (see guard_tls.hpp).
#include "guard_tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>

#include <caf/sec.hpp>

namespace atrain::guard_tls {

namespace {

/// OpenSSL's queued reasons, oldest first; empties the queue (which the
/// network thread's sessions share: a failure left in it would end the next
/// session that looks).
[[nodiscard]] std::string drain_errors() {
  std::string out;
  while (const auto e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string{buf};
  }
  return out;
}

[[nodiscard]] caf::error tls_error(const std::string& what) {
  const auto why = drain_errors();
  return caf::make_error(caf::sec::invalid_argument, what + (why.empty() ? "" : ": " + why));
}

}  // namespace

caf::expected<std::shared_ptr<ssl_ctx_st>>
make_server_context(const std::string& certificate, const std::string& key, const std::string& ca) {
  std::shared_ptr<SSL_CTX> ctx{SSL_CTX_new(TLS_server_method()), SSL_CTX_free};
  if (!ctx)
    return tls_error("cannot create a TLS context");
  // What caf_openssl 0.17.6 clients speak; no renegotiation (a peer could
  // make the guard redo handshakes at will).
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), certificate.c_str()) != 1)
    return tls_error(certificate + ": cannot use as a PEM certificate");
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM) != 1)
    return tls_error(key + ": cannot use as a PEM private key");
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    return tls_error(key + ": does not match the certificate " + certificate);
  if (SSL_CTX_load_verify_locations(ctx.get(), ca.c_str(), nullptr) != 1)
    return tls_error(ca + ": cannot use as a PEM CA certificate");
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  if (SSL_CTX_set_cipher_list(ctx.get(), "HIGH:!aNULL:!MD5") != 1)
    return tls_error("cannot set the cipher list");
  return ctx;
}

session::session(ssl_ctx_st* ctx) : ssl_{SSL_new(ctx)} {
  if (!ssl_) {
    reason_ = "cannot create a TLS session: " + drain_errors();
    return;
  }
  // The handshake watch (tls_watch.hpp) hooks every SSL object: the guard
  // logs its own refusals, with the peer it knows.
  SSL_set_info_callback(ssl_, nullptr);
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl_, in_, out_);  // the session owns both from here
  SSL_set_accept_state(ssl_);
}

session::~session() {
  if (ssl_)
    SSL_free(ssl_);
}

session::status session::fail(int ret) {
  const int kind = SSL_get_error(ssl_, ret);
  std::string why = drain_errors();
  if (const auto v = SSL_get_verify_result(ssl_); v != X509_V_OK)
    why +=
      (why.empty() ? "" : "; ") + std::string{"certificate: "} + X509_verify_cert_error_string(v);
  if (why.empty())
    why = kind == SSL_ERROR_SYSCALL ? "the peer's TLS stream ended abruptly"
                                    : "TLS error " + std::to_string(kind);
  reason_ = std::move(why);
  return status::failed;
}

session::status session::read_plain(std::vector<char>& plain) {
  char buf[16 * 1024];
  for (;;) {
    const int r = SSL_read(ssl_, buf, sizeof buf);
    if (r > 0) {
      plain.insert(plain.end(), buf, buf + r);
      continue;
    }
    const int kind = SSL_get_error(ssl_, r);
    if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE)
      return status::established;
    if (kind == SSL_ERROR_ZERO_RETURN)
      return status::closed;
    return fail(r);
  }
}

session::status session::feed(const char* data, std::size_t n, std::vector<char>& plain) {
  if (!ssl_)
    return status::failed;
  if (n > 0 && BIO_write(in_, data, static_cast<int>(n)) != static_cast<int>(n))
    return fail(-1);
  if (!established_) {
    const int r = SSL_do_handshake(ssl_);
    if (r != 1) {
      const int kind = SSL_get_error(ssl_, r);
      if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE)
        return status::handshaking;
      return fail(r);
    }
    established_ = true;
  }
  return read_plain(plain);
}

bool session::write(const char* data, std::size_t n) {
  while (n > 0) {
    const int r = SSL_write(ssl_, data, static_cast<int>(std::min<std::size_t>(n, 1u << 30)));
    if (r <= 0) {
      static_cast<void>(fail(r));  // reason() says why
      return false;
    }
    data += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

std::vector<char> session::take_output() {
  std::vector<char> out(BIO_ctrl_pending(out_));
  if (!out.empty())
    out.resize(static_cast<std::size_t>(
      std::max(0, BIO_read(out_, out.data(), static_cast<int>(out.size())))));
  return out;
}

}  // namespace atrain::guard_tls
