/// Watching TLS handshakes through OpenSSL's ex_data hook (see tls_watch.hpp).
#include "atrain/actors/tls_watch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace atrain {

namespace {

/// What one SSL object's handshake has shown so far.
struct watched {
  std::string peer;
  std::string alert;
  bool reported = false;
};

std::once_flag installed;
int index = -1;
std::atomic<std::uint64_t> refused{0};
std::mutex sink_mutex;  // guards sink and last_outgoing
std::function<void(const tls_refusal&)> sink;
std::string last_outgoing;

std::string peer_of(const SSL* ssl) {
  const int fd = SSL_get_fd(ssl);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return "an unknown peer (" + std::string{fd < 0 ? "no socket" : std::strerror(errno)} + ")";
  char host[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return std::string{host} + ":" + std::to_string(ntohs(a->sin_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
  inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
  return "[" + std::string{host} + "]:" + std::to_string(ntohs(a->sin6_port));
}

/// OpenSSL's reasons for the failed call, the certificate check, the alert.
std::string reason_of(const SSL* ssl, const watched& w) {
  std::string out;
  if (const auto code = ERR_peek_error(); code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    const char* r = ERR_reason_error_string(code);
    out = r ? r : buf;
  }
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK)
    out += std::string{out.empty() ? "" : " "} +
           "(certificate check: " + X509_verify_cert_error_string(verify) + ")";
  if (!w.alert.empty())
    out += std::string{out.empty() ? "" : "; "} + w.alert;
  return out.empty() ? "the handshake failed without a reason from OpenSSL" : out;
}

void report(const SSL* ssl, watched& w) {
  w.reported = true;
  tls_refusal r;
  r.peer = w.peer.empty() ? peer_of(ssl) : w.peer;
  r.incoming = SSL_is_server(ssl) != 0;
  r.reason = reason_of(ssl, w);
  r.count = ++refused;
  std::lock_guard<std::mutex> guard{sink_mutex};
  if (!r.incoming)
    last_outgoing = r.reason;
  if (sink)
    sink(r);
}

void on_info(const SSL* ssl, int where, int ret) {
  auto* w = static_cast<watched*>(SSL_get_ex_data(ssl, index));
  if (!w)
    return;
  if ((where & SSL_CB_HANDSHAKE_DONE) != 0)
    // An established session's peer closing without close_notify (CAF never
    // sends one) is an end, not an error left in the thread's queue.
    SSL_set_options(const_cast<SSL*>(ssl), SSL_OP_IGNORE_UNEXPECTED_EOF);
  if (w->reported)
    return;
  if ((where & SSL_CB_HANDSHAKE_START) && w->peer.empty())
    w->peer = peer_of(ssl);
  if ((where & SSL_CB_ALERT) && (ret >> 8) == SSL3_AL_FATAL && w->alert.empty())
    w->alert = std::string{(where & SSL_CB_READ) ? "the peer sent" : "we sent"} + " alert '" +
               SSL_alert_desc_string_long(ret) + "'";
  // A handshake call that returns with an error queued failed (want-read
  // and want-write leave the queue empty).
  if ((where & SSL_CB_EXIT) && ret <= 0 && ERR_peek_error() != 0) {
    report(ssl, *w);
    // CAF 0.17.6's session code never drains OpenSSL's per-thread error
    // queue (only a log statement it compiles out would), and every session
    // of the multiplexer shares that thread: the next SSL_get_error of an
    // established session, after a read that merely had no data, would see
    // this error and CAF would close that session too (issue 16: a bare
    // TCP connect + close ended a running TLS job). Empty, SSL_get_error
    // still reports this handshake's failure (SSL_ERROR_SYSCALL), and CAF
    // closes this one only.
    ERR_clear_error();
  }
}

void on_new(void* parent, void*, CRYPTO_EX_DATA* ad, int idx, long, void*) {
  auto* ssl = static_cast<SSL*>(parent);
  auto* w = new watched;
  if (CRYPTO_set_ex_data(ad, idx, w) != 1) {
    delete w;
    return;
  }
  SSL_set_info_callback(ssl, on_info);
}

void on_free(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<watched*>(ptr);
}

}  // namespace

void watch_tls_handshakes() {
  std::call_once(installed,
                 [] { index = SSL_get_ex_new_index(0, nullptr, on_new, nullptr, on_free); });
}

void on_tls_refusal(std::function<void(const tls_refusal&)> s) {
  std::lock_guard<std::mutex> guard{sink_mutex};
  sink = std::move(s);
}

std::uint64_t tls_handshakes_refused() noexcept {
  return refused.load();
}

std::string last_outgoing_tls_refusal() {
  std::lock_guard<std::mutex> guard{sink_mutex};
  return last_outgoing;
}

}  // namespace atrain
