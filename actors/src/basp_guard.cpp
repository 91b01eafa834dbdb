/// The BASP guard of a host without TLS (see basp_guard.hpp).
#include "atrain/actors/basp_guard.hpp"

#include <arpa/inet.h>
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

#include "atrain/messages/wire.hpp"

namespace atrain {

bool basp_stream_checker::consume(const char* data, std::size_t n) {
  while (n > 0 && !refused()) {
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

void basp_stream_checker::check_header() {
  const auto op = header_[0];
  std::uint32_t len = 0;
  std::memcpy(&len, header_.data() + 4, sizeof len);
  len = ntohl(len);
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
         std::to_string(s.auth_timeout) + ", too many unauthenticated " +
         std::to_string(s.too_many) + ", idle " + std::to_string(s.idle) + ", BASP header " +
         std::to_string(s.basp) + ", over the buffer bound " + std::to_string(s.buffered) +
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
  relay(connection_handle c, std::string p, std::uint64_t s, std::uint32_t max)
    : client{c}, peer{std::move(p)}, serial{s}, checker{max} {}
};

struct guard_state {
  basp_guard_options opts;
  basp_guard_stats stats;
  std::uint16_t port = 0;
  caf::actor basp;
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
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    refuse(self, p, st.stats.buffered,
           std::string{"cannot open a socket pair to CAF: "} + std::strerror(errno));
    return;
  }
  const auto proof = auth::mac_of(st.opts.secret, false, p->host_nonce.data(), peer_nonce);
  self->write(p->client, proof.size(), proof.data());
  self->flush(p->client);
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

caf::behavior guard(guard_ptr self, caf::io::doorman_ptr door, basp_guard_options opts,
                    caf::actor basp) {
  self->state.opts = std::move(opts);
  self->state.basp = std::move(basp);
  self->state.port = door->port();
  self->add_doorman(std::move(door));
  return {
    [=](const caf::io::new_connection_msg& msg) {
      auto& st = self->state;
      const auto peer =
        self->remote_addr(msg.handle) + ":" + std::to_string(self->remote_port(msg.handle));
      auto p = std::make_shared<relay>(msg.handle, peer, ++st.serials, st.opts.max_payload);
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
      std::vector<char> hello(auth::magic, auth::magic + sizeof auth::magic);
      hello.insert(hello.end(), p->host_nonce.begin(), p->host_nonce.end());
      self->write(msg.handle, hello.size(), hello.data());
      self->flush(msg.handle);
      self->configure_read(msg.handle, caf::io::receive_policy::exactly(auth::response_size));
      arm_timeout(self, *p, st.opts.auth_timeout);
    },
    [=](const caf::io::new_data_msg& msg) {
      auto& st = self->state;
      auto i = st.relays.find(msg.handle);
      if (i == st.relays.end())
        return;
      auto p = i->second;
      const bool from_client = msg.handle == p->client;
      if (!p->authenticated) {
        on_response(self, p, msg.buf);
        return;
      }
      if (from_client) {
        p->last_heard = self->clock().now();
        if (!p->checker.consume(msg.buf.data(), msg.buf.size())) {
          refuse(self, p, st.stats.basp, p->checker.reason());
          return;
        }
      }
      if (!forward(self, *p, from_client, msg.buf))
        refuse(self, p, st.stats.buffered,
               "more than " + std::to_string(st.opts.max_buffered) + " bytes waiting to be sent " +
                 (from_client ? "to CAF" : "to the peer"));
    },
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

/// Waits until `fd` is ready for `events` or `deadline` passes.
[[nodiscard]] bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd pfd{fd, events, 0};
    const int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r > 0)
      return true;
    if (r < 0 && errno != EINTR)
      return false;
  }
}

[[nodiscard]] caf::error failure(std::string what) {
  return caf::make_error(caf::sec::cannot_connect_to_node, std::move(what));
}

/// Reads exactly `n` bytes; an error says what happened instead.
[[nodiscard]] caf::error read_exactly(int fd, unsigned char* out, std::size_t n,
                                      std::chrono::steady_clock::time_point deadline,
                                      const char* what) {
  std::size_t got = 0;
  while (got < n) {
    if (!wait_for(fd, POLLIN, deadline))
      return failure(std::string{"no "} + what + " in time");
    const auto r = ::recv(fd, out + got, n - got, 0);
    if (r == 0)
      return failure(std::string{"the host closed the connection instead of sending its "} + what +
                     (got == 0 && std::string{what} == "proof"
                        ? " (it refused our response: a wrong shared secret?)"
                        : ""));
    if (r < 0 && errno != EAGAIN && errno != EINTR)
      return failure(std::string{"reading the "} + what + ": " + std::strerror(errno));
    if (r > 0)
      got += static_cast<std::size_t>(r);
  }
  return caf::none;
}

[[nodiscard]] caf::error write_all(int fd, const unsigned char* data, std::size_t n,
                                   std::chrono::steady_clock::time_point deadline) {
  std::size_t put = 0;
  while (put < n) {
    if (!wait_for(fd, POLLOUT, deadline))
      return failure("cannot send the response in time");
    const auto r = ::send(fd, data + put, n - put, MSG_NOSIGNAL);
    if (r < 0 && errno != EAGAIN && errno != EINTR)
      return failure(std::string{"sending the response: "} + std::strerror(errno));
    if (r > 0)
      put += static_cast<std::size_t>(r);
  }
  return caf::none;
}

/// A non-blocking TCP connection to `host`:`port`, connected by `deadline`.
[[nodiscard]] caf::expected<int> tcp_connect(const std::string& host, std::uint16_t port,
                                             std::chrono::steady_clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0)
    return failure(host + ": " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard{found, ::freeaddrinfo};
  std::string why = "no address";
  for (auto* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ||
        (errno == EINPROGRESS && wait_for(fd, POLLOUT, deadline))) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0)
        return fd;
      why = std::strerror(err);
    } else {
      why = errno == EINPROGRESS ? "timed out" : std::strerror(errno);
    }
    ::close(fd);
  }
  return failure("cannot connect: " + why);
}

}  // namespace

caf::expected<basp_guard> spawn_basp_guard(caf::actor_system& sys, basp_guard_options opts) {
  if (opts.secret.empty() || !opts.target)
    return caf::make_error(caf::sec::invalid_argument,
                           "the BASP guard needs a secret and a target");
  auto door = sys.middleman().backend().new_tcp_doorman(opts.port, opts.host.c_str(), true);
  if (!door)
    return door.error();
  basp_guard g;
  g.port = (*door)->port();
  auto basp = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  g.actor = sys.middleman().spawn_broker(guard, std::move(*door), std::move(opts), basp);
  return g;
}

caf::expected<caf::actor> connect_authenticated(caf::actor_system& sys, const std::string& host,
                                                std::uint16_t port, const std::string& secret,
                                                caf::timespan timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto fd = tcp_connect(host, port, deadline);
  if (!fd)
    return fd.error();
  auto fail = [&](caf::error e) -> caf::expected<caf::actor> {
    ::close(*fd);
    return e;
  };
  std::array<unsigned char, auth::hello_size> hello{};
  if (auto e = read_exactly(*fd, hello.data(), hello.size(), deadline, "challenge"))
    return fail(std::move(e));
  if (std::memcmp(hello.data(), auth::magic, sizeof auth::magic) != 0)
    return fail(failure("the host's first bytes are not an atrain challenge (not an `atrain "
                        "node` with a shared secret, or one of an older version?)"));
  const auto* host_nonce = hello.data() + sizeof auth::magic;
  const auto mine = auth::fresh_nonce();
  std::array<unsigned char, auth::response_size> response{};
  std::copy(mine.begin(), mine.end(), response.begin());
  const auto m = auth::mac_of(secret, true, host_nonce, mine.data());
  std::copy(m.begin(), m.end(), response.begin() + auth::nonce_size);
  if (auto e = write_all(*fd, response.data(), response.size(), deadline))
    return fail(std::move(e));
  auth::mac proof{};
  if (auto e = read_exactly(*fd, proof.data(), proof.size(), deadline, "proof"))
    return fail(std::move(e));
  const auto expected = auth::mac_of(secret, false, host_nonce, mine.data());
  if (!auth::same_mac(proof.data(), expected.data()))
    return fail(failure("the host's proof does not match: it does not hold the shared secret"));
  // Authenticated both ways: the socket goes to CAF's BASP broker as if
  // its middleman had connected it (the handler middleman_actor uses).
  auto scribe = sys.middleman().backend().new_scribe(*fd);
  auto basp = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::scoped_actor self{sys};
  caf::expected<caf::actor> out = caf::make_error(caf::sec::cannot_connect_to_node);
  self->request(basp, timeout, caf::connect_atom::value, std::move(scribe), port)
    .receive(
      [&](caf::node_id&, caf::strong_actor_ptr& whom, std::set<std::string>&) {
        if (whom)
          out = caf::actor_cast<caf::actor>(std::move(whom));
        else
          out = caf::make_error(caf::sec::no_actor_published_at_port, port);
      },
      [&](caf::error& e) { out = std::move(e); });
  return out;
}

caf::expected<void> close_automatic_connection_port(caf::actor_system& sys) {
  if (!caf::get_or(sys.config(), "middleman.enable-automatic-connections", false))
    return caf::unit;
  const std::string key = "basp.default-connectivity-tcp";
  const auto timeout = std::chrono::seconds{10};
  auto config_serv = caf::actor_cast<caf::actor>(sys.registry().get(caf::atom("ConfigServ")));
  if (!config_serv)
    return caf::make_error(caf::sec::runtime_error, "no ConfigServ in this actor system");
  caf::scoped_actor self{sys};
  caf::error err;
  std::uint16_t open_port = 0;
  auto take = [&](caf::message& m) {
    if (m.match_elements<std::uint16_t, caf::io::network::address_listing>())
      open_port = m.get_as<std::uint16_t>(0);
  };
  // The BASP broker puts the entry when it starts, which may be just now:
  // subscribe before asking, so that a put after the answer still arrives.
  self->send(config_serv, caf::subscribe_atom::value, key);
  self->request(config_serv, timeout, caf::get_atom::value, key)
    .receive([&](const std::string&, caf::message& m) { take(m); },
             [&](caf::error& e) { err = std::move(e); });
  if (!err && open_port == 0)
    self->receive([&](caf::update_atom, const std::string&, caf::message& m) { take(m); },
                  caf::after(timeout) >> [] {});
  self->send(config_serv, caf::unsubscribe_atom::value, key);
  if (err)
    return err;
  // CAF opens the port with its BASP broker, at the first publish or
  // connection: call this after one.
  if (open_port == 0)
    return caf::make_error(caf::sec::runtime_error,
                           "CAF's automatic-connection port is not open (yet)");
  self->request(sys.middleman().actor_handle(), timeout, caf::close_atom::value, open_port)
    .receive([] {}, [&](caf::error& e) { err = std::move(e); });
  if (err)
    return caf::make_error(caf::sec::runtime_error,
                           "cannot close CAF's automatic-connection port " +
                             std::to_string(open_port) + ": " + sys.render(err));
  caf::io::network::address_listing where;
  self->send(config_serv, caf::put_atom::value, key,
             caf::make_message(std::uint16_t{0}, std::move(where)));
  return caf::unit;
}

}  // namespace atrain
