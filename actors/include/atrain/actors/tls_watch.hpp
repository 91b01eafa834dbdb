#pragma once
/// TLS handshakes that fail in this process, with the peer's address and
/// the reason. caf_openssl (0.17.6) has no hook of its own: each session
/// makes its own SSL_CTX with a null verify callback, and a failed
/// SSL_accept/SSL_connect only closes the connection (its log lines are
/// compiled out). The watch uses OpenSSL's own global hook instead: an SSL
/// ex_data index whose "new" callback runs for every SSL object, giving it
/// an info callback that records the peer (getpeername on the SSL's socket)
/// at the handshake's start, the alerts sent or received, and the handshake
/// call that ended in an error (OpenSSL clears the thread's error queue at
/// the start of each handshake call, so an error there is this one's).
/// It also keeps one failed handshake from closing established sessions
/// (issue 16): CAF 0.17.6 never drains the error queue, which every session
/// of the network thread shares, so the watch empties it once the failure is
/// recorded, and lets an established session's peer close without
/// close_notify (SSL_OP_IGNORE_UNEXPECTED_EOF) instead of queueing an error.
#include <cstdint>
#include <functional>
#include <string>

namespace atrain {

struct tls_refusal {
  std::string peer;         ///< "ADDR:PORT" of the other end ("an unknown peer" if unavailable)
  std::string reason;       ///< OpenSSL's reason, the certificate check's result, the alert
  bool incoming = false;    ///< we accepted the connection (else we connected out)
  std::uint64_t count = 0;  ///< refusals in this process so far, this one included
};

/// Starts watching (idempotent; before the actor system opens connections:
/// configure_networking does it when TLS is on).
void watch_tls_handshakes();

/// Where refusals go besides the count (empty: only counted). It runs on
/// CAF's network thread: it must not block.
void on_tls_refusal(std::function<void(const tls_refusal&)> sink);

/// Failed TLS handshakes since the watch started.
[[nodiscard]] std::uint64_t tls_handshakes_refused() noexcept;

/// The reason of the last failed handshake this process started as a
/// client ("" if none): what a driver adds to "cannot reach host".
[[nodiscard]] std::string last_outgoing_tls_refusal();

}  // namespace atrain
