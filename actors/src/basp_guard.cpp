/// The BASP guard of a host (see basp_guard.hpp).
#include "atrain/actors/basp_guard.hpp"

#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>

#include <caf/io/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/network/interfaces.hpp>

#include "atrain/actors/basp_filter.hpp"
#include "atrain/actors/exceptions.hpp"
#include "atrain/messages/wire.hpp"
#include "guard_tls.hpp"

namespace atrain {

bool basp_stream_checker::consume(const char* data, std::size_t n) {
  while (n > 0 && !refused()) {
    if (prefix_want_ > 0) {
      take_prefix(data, n);
      continue;
    }
    if (payload_left_ > 0) {
      const auto skip = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, n));
      payload_left_ -= skip;
      data += skip;
      n -= skip;
      continue;
    }
    const auto take = std::min(basp_header_size - header_fill_, n);
    std::memcpy(header_.data() + header_fill_, data, take);
    header_fill_ += take;
    data += take;
    n -= take;
    if (header_fill_ == basp_header_size) {
      header_fill_ = 0;
      check_header();
    }
  }
  return !refused();
}

void basp_stream_checker::take_prefix(const char*& data, std::size_t& n) {
  const auto take = std::min(prefix_want_, n);
  frame_.prefix.insert(frame_.prefix.end(), data, data + take);
  prefix_want_ -= take;
  payload_left_ -= take;
  data += take;
  n -= take;
  if (prefix_want_ == 0)
    inspect();
}

void basp_stream_checker::inspect() {
  reason_ = inspect_(frame_);
  filtered_ = !reason_.empty();
}

namespace {

template <class T>
[[nodiscard]] T read_network(const unsigned char* p) {
  T x = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    x = static_cast<T>((x << 8) | p[i]);
  return x;
}

}  // namespace

void basp_stream_checker::check_header() {
  const auto op = header_[0];
  const auto len = read_network<std::uint32_t>(header_.data() + 4);
  if (op > basp_last_operation)
    reason_ =
      "unknown BASP operation " + std::to_string(op) + " in header " + std::to_string(headers_ + 1);
  else if (headers_ == 0 && op != basp_client_handshake)
    reason_ =
      "the first BASP header has operation " + std::to_string(op) + ", not a client handshake (1)";
  else if (len > max_payload_)
    reason_ = "BASP header " + std::to_string(headers_ + 1) + " announces a payload of " +
              std::to_string(len) + " bytes (limit " + std::to_string(max_payload_) + ")";
  else {
    ++headers_;
    payload_left_ = len;
    if (!inspect_)
      return;
    frame_.operation = op;
    frame_.flags = header_[3];
    frame_.payload_len = len;
    frame_.operation_data = read_network<std::uint64_t>(header_.data() + 8);
    frame_.source_actor = read_network<std::uint64_t>(header_.data() + 16);
    frame_.dest_actor = read_network<std::uint64_t>(header_.data() + 24);
    frame_.prefix.clear();
    prefix_want_ = std::min<std::size_t>(len, basp_prefix_limit);
    if (prefix_want_ == 0)
      inspect();
  }
}

namespace auth {

nonce fresh_nonce() {
  nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) {
    std::cerr << "atrain: OpenSSL has no random bytes for an authentication nonce\n";
    std::abort();
  }
  return n;
}

mac mac_of(const std::string& secret, bool client, const unsigned char* host_nonce,
           const unsigned char* peer_nonce) {
  std::string label = client ? "atrain/1 client" : "atrain/1 server";
  std::vector<unsigned char> data(label.begin(), label.end());
  data.insert(data.end(), host_nonce, host_nonce + nonce_size);
  data.insert(data.end(), peer_nonce, peer_nonce + nonce_size);
  mac out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), data.data(), data.size(),
       out.data(), &len);
  return out;
}

bool same_mac(const unsigned char* a, const unsigned char* b) noexcept {
  return CRYPTO_memcmp(a, b, mac_size) == 0;
}

}  // namespace auth

std::string counters_text(const basp_guard_stats& s) {
  return "accepted " + std::to_string(s.accepted) + " connections, authenticated " +
         std::to_string(s.authenticated) + ", refused " + std::to_string(s.refused) +
         " (wrong response " + std::to_string(s.wrong_mac) + ", no response in time " +
         std::to_string(s.auth_timeout) + ", TLS handshake " + std::to_string(s.tls) +
         ", too many unauthenticated " + std::to_string(s.too_many) + ", idle " +
         std::to_string(s.idle) + ", BASP header " + std::to_string(s.basp) + ", message filter " +
         std::to_string(s.filtered) + ", over the buffer bound " + std::to_string(s.buffered) +
         "), closed by the peer before authenticating " + std::to_string(s.gave_up) +
         ", open now " + std::to_string(s.open);
}

namespace {

using caf::io::connection_handle;
using guard_timeout_atom = caf::atom_constant<caf::atom("gtimeout")>;

/// Bytes a read hands over at most; also the size of each read buffer.
constexpr std::size_t chunk_bytes = 64 * 1024;
/// Flow control: above this many bytes queued behind the write in flight on
/// one side, the guard stops reading the other side and asks for write
/// acknowledgements; once at most the low mark waits it reads again. (Acks
/// only while halted: each is one more broker message.)
constexpr std::uint64_t high_water = 1u << 20;
constexpr std::uint64_t low_water = 256u << 10;

/// One peer connection and, once it authenticated, the guard's end of the
/// socket pair whose other end CAF's BASP broker holds.
struct relay {
  connection_handle client;
  connection_handle inner;  // invalid until authenticated
  std::string peer;
  /// Tells this connection's timeouts from those of an earlier one that had
  /// the same handle (the socket's number).
  std::uint64_t serial;
  auth::nonce host_nonce = auth::fresh_nonce();
  bool authenticated = false;
  caf::actor_clock::time_point last_heard;
  basp_stream_checker checker;
  /// Whether reading a side is halted because the other one is behind.
  bool client_halted = false;
  bool inner_halted = false;
  /// TLS hosts: the peer's TLS session (its handshake is the authentication).
  std::unique_ptr<guard_tls::session> tls;
  relay(connection_handle c, std::string p, std::uint64_t s, std::uint32_t max,
        basp_stream_checker::inspector inspect)
    : client{c}, peer{std::move(p)}, serial{s}, checker{max, std::move(inspect)} {}
};

struct guard_state {
  basp_guard_options opts;
  basp_guard_stats stats;
  std::uint16_t port = 0;
  caf::actor basp;
  /// What the message filter of each connection allows (basp_filter.hpp).
  std::shared_ptr<const std::set<std::string>> types;
  std::uint64_t serials = 0;
  std::size_t unauthenticated = 0;
  std::map<connection_handle, std::shared_ptr<relay>> relays;  // by either handle
  static inline const char* name = "atrain_basp_guard";
};
using guard_ptr = caf::stateful_actor<guard_state, caf::io::broker>*;

void log(guard_ptr self, const std::string& line) {
  if (self->state.opts.log)
    self->state.opts.log(line);
  else
    std::cerr << "atrain node: " << line << std::endl;
}

/// Peers connected now: those waiting to authenticate, and the
/// authenticated ones (two handles each).
void count_open(guard_state& st) {
  st.stats.open = st.unauthenticated + (st.relays.size() - st.unauthenticated) / 2;
}

/// Ends a relay: both sides closed (a refused peer at once, without
/// waiting for anything still to be sent to it).
/// `p` by value: callers pass the map's own element, which the first erase
/// below destroys (a use-after-free when `p` was a reference to it).
void drop(guard_ptr self, std::shared_ptr<relay> p, bool hard) {
  auto& st = self->state;
  if (hard)  // the default multiplexer's handle is the socket
    ::shutdown(static_cast<int>(p->client.id()), SHUT_RDWR);
  self->close(p->client);
  st.relays.erase(p->client);
  if (p->authenticated) {
    self->close(p->inner);
    st.relays.erase(p->inner);
  } else {
    --st.unauthenticated;
  }
  count_open(st);
}

/// Closes `p`, logging the peer, why and the count (one line per refusal).
void refuse(guard_ptr self, const std::shared_ptr<relay>& p, std::uint64_t& counter,
            const std::string& why) {
  auto& st = self->state;
  ++st.stats.refused;
  ++counter;
  log(self, "BASP guard: closed the connection from " + p->peer + ": " + why + " (" +
              std::to_string(st.stats.refused) + " refused so far)");
  drop(self, p, true);
}

[[nodiscard]] std::string seconds_text(caf::timespan t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t).count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

void arm_timeout(guard_ptr self, const relay& p, caf::timespan after) {
  self->delayed_send(self, after, guard_timeout_atom::value, p.client, p.serial);
}

/// Forwards `buf` from one side of `p` to the other, halting the source
/// while too much waits to go out; false when the bound on buffered bytes
/// is passed anyway.
bool forward(guard_ptr self, relay& p, bool from_client, const std::vector<char>& buf) {
  const auto dst = from_client ? p.inner : p.client;
  const auto src = from_client ? p.client : p.inner;
  auto& halted = from_client ? p.client_halted : p.inner_halted;
  self->write(dst, buf.size(), buf.data());
  self->flush(dst);
  const auto waiting = self->wr_buf(dst).size();
  if (waiting > self->state.opts.max_buffered)
    return false;
  if (!halted && waiting > high_water) {
    self->halt(src);
    self->ack_writes(dst, true);
    halted = true;
  }
  return true;
}

void hand_to_basp(guard_ptr self, const std::shared_ptr<relay>& p, const int (&pair)[2]);

/// A socket pair to CAF's BASP broker, or `p` refused.
[[nodiscard]] bool open_pair(guard_ptr self, const std::shared_ptr<relay>& p, int (&pair)[2]) {
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0)
    return true;
  refuse(self, p, self->state.stats.buffered,
         std::string{"cannot open a socket pair to CAF: "} + std::strerror(errno));
  return false;
}

/// Sends what `p`'s TLS session has for the peer; false over the bound.
[[nodiscard]] bool flush_tls(guard_ptr self, relay& p) {
  const auto out = p.tls->take_output();
  return out.empty() || forward(self, p, false, out);
}

/// Plaintext from the peer: the BASP framing check, then on to CAF.
void from_peer(guard_ptr self, const std::shared_ptr<relay>& p, const std::vector<char>& buf) {
  auto& st = self->state;
  p->last_heard = self->clock().now();
  if (!p->checker.consume(buf.data(), buf.size()))
    return refuse(self, p, p->checker.filtered() ? st.stats.filtered : st.stats.basp,
                  p->checker.reason());
  if (!forward(self, *p, true, buf))
    refuse(self, p, st.stats.buffered,
           "more than " + std::to_string(st.opts.max_buffered) +
             " bytes waiting to be sent to CAF");
}

/// Ciphertext from a TLS peer: the handshake (its end authenticates the
/// peer and hands the connection to BASP), then data.
void on_tls_bytes(guard_ptr self, const std::shared_ptr<relay>& p, const std::vector<char>& buf) {
  auto& st = self->state;
  std::vector<char> plain;
  const bool was_established = p->tls->established();
  const auto s = p->tls->feed(buf.data(), buf.size(), plain);
  if (!flush_tls(self, *p))
    return refuse(self, p, st.stats.buffered, "TLS output over the buffer bound");
  using status = guard_tls::session::status;
  if (s == status::failed)
    return refuse(self, p, was_established ? st.stats.basp : st.stats.tls,
                  "TLS " + std::string{was_established ? "session" : "handshake"} +
                    " failed: " + p->tls->reason());
  if (s == status::closed)
    return drop(self, p, false);
  if (s == status::handshaking)
    return;
  if (!was_established) {
    int pair[2];
    if (!open_pair(self, p, pair))
      return;
    hand_to_basp(self, p, pair);
  }
  if (!plain.empty())
    from_peer(self, p, plain);
}

/// The peer's response arrived (exactly response_size bytes): on a match the
/// proof goes out and the connection goes to BASP through a socket pair.
void on_response(guard_ptr self, const std::shared_ptr<relay>& p, const std::vector<char>& buf) {
  auto& st = self->state;
  const auto* bytes = reinterpret_cast<const unsigned char*>(buf.data());
  const auto* peer_nonce = bytes;
  const auto expected = auth::mac_of(st.opts.secret, true, p->host_nonce.data(), peer_nonce);
  if (buf.size() != auth::response_size ||
      !auth::same_mac(expected.data(), bytes + auth::nonce_size)) {
    refuse(self, p, st.stats.wrong_mac,
           "authentication failed (a response not made with the shared secret for this "
           "connection's challenge: wrong secret, replayed or not an atrain peer)");
    return;
  }
  int pair[2];
  if (!open_pair(self, p, pair))
    return;
  const auto proof = auth::mac_of(st.opts.secret, false, p->host_nonce.data(), peer_nonce);
  self->write(p->client, proof.size(), proof.data());
  self->flush(p->client);
  hand_to_basp(self, p, pair);
}

/// `p` authenticated: its connection goes to BASP through the socket pair.
void hand_to_basp(guard_ptr self, const std::shared_ptr<relay>& p, const int (&pair)[2]) {
  auto& st = self->state;
  p->inner = self->add_scribe(pair[0]);
  p->authenticated = true;
  p->last_heard = self->clock().now();
  --st.unauthenticated;
  ++st.stats.authenticated;
  st.relays.emplace(p->inner, p);
  count_open(st);
  // CAF's BASP broker takes the other end as a connection to the actor
  // published at the guard's port (its handler for set-ups without a
  // doorman) and writes its server handshake into it.
  auto basp_end = self->system().middleman().backend().new_scribe(pair[1]);
  self->send(st.basp, caf::publish_atom::value, std::move(basp_end), st.port,
             caf::actor_cast<caf::strong_actor_ptr>(st.opts.target), std::set<std::string>{});
  for (auto h : {p->client, p->inner})
    self->configure_read(h, caf::io::receive_policy::at_most(chunk_bytes));
  // The authentication timeout, when it fires, goes on as the idle check.
}

/// A new connection: refused over the limit of unauthenticated ones, else
/// its challenge (secret) or its TLS handshake begins, within the timeout.
void on_connection(guard_ptr self, const caf::io::new_connection_msg& msg) {
  auto& st = self->state;
  const auto peer =
    self->remote_addr(msg.handle) + ":" + std::to_string(self->remote_port(msg.handle));
  auto filter = std::make_shared<basp_message_filter>(self->system(), st.opts.target.id(),
                                                      st.opts.owners, st.types);
  auto p = std::make_shared<relay>(msg.handle, peer, ++st.serials, st.opts.max_payload,
                                   [filter](const basp_frame& f) { return filter->judge(f); });
  st.relays.emplace(msg.handle, p);
  ++st.unauthenticated;
  ++st.stats.accepted;
  count_open(st);
  if (st.unauthenticated > st.opts.max_unauthenticated) {
    refuse(self, p, st.stats.too_many,
           "too many connections waiting to authenticate (limit " +
             std::to_string(st.opts.max_unauthenticated) + ")");
    return;
  }
  if (st.opts.tls) {  // the peer speaks first: its ClientHello
    p->tls = std::make_unique<guard_tls::session>(st.opts.tls.get());
    self->configure_read(msg.handle, caf::io::receive_policy::at_most(chunk_bytes));
    arm_timeout(self, *p, st.opts.auth_timeout);
    return;
  }
  std::vector<char> hello(auth::magic, auth::magic + sizeof auth::magic);
  hello.insert(hello.end(), p->host_nonce.begin(), p->host_nonce.end());
  self->write(msg.handle, hello.size(), hello.data());
  self->flush(msg.handle);
  self->configure_read(msg.handle, caf::io::receive_policy::exactly(auth::response_size));
  arm_timeout(self, *p, st.opts.auth_timeout);
}

/// Bytes from the peer (authentication, then BASP to check and relay) or
/// from CAF's end of the socket pair (relayed to the peer, within the bound).
void on_data(guard_ptr self, const caf::io::new_data_msg& msg) {
  auto& st = self->state;
  auto i = st.relays.find(msg.handle);
  if (i == st.relays.end())
    return;
  auto p = i->second;
  const bool from_client = msg.handle == p->client;
  if (from_client && p->tls)
    return on_tls_bytes(self, p, msg.buf);
  if (!p->authenticated)
    return on_response(self, p, msg.buf);
  if (from_client)
    return from_peer(self, p, msg.buf);
  if (p->tls && !p->tls->write(msg.buf.data(), msg.buf.size()))
    return refuse(self, p, st.stats.basp, "TLS session failed: " + p->tls->reason());
  if (p->tls ? !flush_tls(self, *p) : !forward(self, *p, false, msg.buf))
    refuse(self, p, st.stats.buffered,
           "more than " + std::to_string(st.opts.max_buffered) +
             " bytes waiting to be sent to the peer");
}

caf::behavior guard(guard_ptr self, caf::io::doorman_ptr door, basp_guard_options opts,
                    caf::actor basp) {
  name_exceptions(self);
  self->state.opts = std::move(opts);
  self->state.basp = std::move(basp);
  self->state.types =
    std::make_shared<const std::set<std::string>>(atrain_remote_types(self->system()));
  self->state.port = door->port();
  self->add_doorman(std::move(door));
  return {
    [=](const caf::io::new_connection_msg& msg) { on_connection(self, msg); },
    [=](const caf::io::new_data_msg& msg) { on_data(self, msg); },
    [=](const caf::io::data_transferred_msg& msg) {
      auto& st = self->state;
      auto i = st.relays.find(msg.handle);
      if (i == st.relays.end())
        return;
      auto& p = *i->second;
      const bool to_client = msg.handle == p.client;
      auto& halted = to_client ? p.inner_halted : p.client_halted;
      if (halted && msg.remaining <= low_water) {
        self->trigger(to_client ? p.inner : p.client);
        self->ack_writes(msg.handle, false);
        halted = false;
      }
    },
    [=](guard_timeout_atom, connection_handle hdl, std::uint64_t serial) {
      auto& st = self->state;
      auto i = st.relays.find(hdl);
      if (i == st.relays.end() || i->second->serial != serial)
        return;  // closed meanwhile (the handle may be another connection's now)
      auto p = i->second;
      if (!p->authenticated) {
        refuse(self, p, st.stats.auth_timeout,
               "no authentication within " + seconds_text(st.opts.auth_timeout));
        return;
      }
      const auto quiet = self->clock().now() - p->last_heard;
      if (quiet >= st.opts.idle_timeout)
        refuse(self, p, st.stats.idle,
               "authenticated, then nothing for " + seconds_text(st.opts.idle_timeout));
      else
        arm_timeout(self, *p, st.opts.idle_timeout - quiet);
    },
    [=](const caf::io::connection_closed_msg& msg) {
      auto& st = self->state;
      auto i = st.relays.find(msg.handle);
      if (i == st.relays.end())
        return;
      auto p = i->second;
      if (!p->authenticated) {
        ++st.stats.gave_up;
        log(self, "BASP guard: " + p->peer + " closed its connection before authenticating (" +
                    std::to_string(st.stats.gave_up) + " so far)");
      }
      drop(self, p, false);
    },
    [=](const caf::io::acceptor_closed_msg&) {
      log(self, "BASP guard: the public port closed");
      self->quit();
    },
    [=](stats_atom) { return counters_text(self->state.stats); },
  };
}

}  // namespace

caf::expected<std::shared_ptr<ssl_ctx_st>> make_guard_tls_context(const std::string& certificate,
                                                                  const std::string& key,
                                                                  const std::string& ca) {
  return guard_tls::make_server_context(certificate, key, ca);
}

caf::expected<basp_guard> spawn_basp_guard(caf::actor_system& sys, basp_guard_options opts) {
  if ((opts.secret.empty() && !opts.tls) || !opts.target || !opts.owners)
    return caf::make_error(caf::sec::invalid_argument,
                           "the BASP guard needs a secret or a TLS context, a target and the "
                           "target's run owners");
  auto door = sys.middleman().backend().new_tcp_doorman(opts.port, opts.host.c_str(), true);
  if (!door)
    return door.error();
  basp_guard g;
  g.port = (*door)->port();
  auto basp = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  g.actor = sys.middleman().spawn_broker(guard, std::move(*door), std::move(opts), basp);
  return g;
}

}  // namespace atrain
