#pragma once
/// Mutual TLS inside the BASP guard (issue 16): the guard of a TLS host
/// terminates TLS itself, over memory buffers, so that a TLS host gets the
/// same front end as a secret-mode one (handshake and idle timeouts, the
/// bound on unauthenticated connections and on buffered bytes, the BASP
/// framing check, every refusal logged) and CAF listens on no port. Peers
/// (caf_openssl clients: TLS 1.2, "HIGH:!aNULL:!MD5", certificates both
/// ways) see no difference.
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>

struct ssl_ctx_st;  // OpenSSL's SSL_CTX
struct ssl_st;      // OpenSSL's SSL
struct bio_st;      // OpenSSL's BIO

namespace atrain::guard_tls {

/// A server context: our certificate and key, peers must present a
/// certificate the CA signed. An error names the file and OpenSSL's reason.
[[nodiscard]] caf::expected<std::shared_ptr<ssl_ctx_st>>
make_server_context(const std::string& certificate, const std::string& key, const std::string& ca);

/// One TLS server session; bytes go in and out through the guard.
class session {
public:
  enum class status { handshaking, established, failed, closed };

  explicit session(ssl_ctx_st* ctx);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// Ciphertext from the peer; what it decrypts to is appended to `plain`.
  [[nodiscard]] status feed(const char* data, std::size_t n, std::vector<char>& plain);
  /// Plaintext for the peer (after the handshake); false on a TLS error.
  [[nodiscard]] bool write(const char* data, std::size_t n);
  /// Ciphertext waiting to go to the peer (handshake, alerts, data).
  [[nodiscard]] std::vector<char> take_output();
  [[nodiscard]] bool established() const noexcept { return established_; }
  /// Why the session failed (OpenSSL's reason, the certificate check's).
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

private:
  [[nodiscard]] status fail(int ret);
  [[nodiscard]] status read_plain(std::vector<char>& plain);

  ssl_st* ssl_ = nullptr;
  bio_st* in_ = nullptr;   // the peer's ciphertext, read by OpenSSL
  bio_st* out_ = nullptr;  // ciphertext OpenSSL wrote for the peer
  bool established_ = false;
  std::string reason_;
};

}  // namespace atrain::guard_tls
