/// The BASP guard of a host without TLS (see basp_guard.hpp).
#include "atrain/actors/basp_guard.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include <caf/io/all.hpp>
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

namespace {

using caf::io::connection_handle;

/// Bytes a read hands over at most; also the size of each read buffer.
constexpr std::size_t chunk_bytes = 64 * 1024;
/// Flow control: above this many bytes queued behind the write in flight on
/// one side, the guard stops reading the other side and asks for write
/// acknowledgements; once at most the low mark waits it reads again. (Acks
/// only while halted: each is one more broker message.)
constexpr std::uint64_t high_water = 1u << 20;
constexpr std::uint64_t low_water = 256u << 10;

/// One client connection and its twin to the BASP port.
struct relay {
  connection_handle client;
  connection_handle inner;
  std::string peer;
  basp_stream_checker checker;
  /// Whether reading a side is halted because the other one is behind.
  bool client_halted = false;
  bool inner_halted = false;
  relay(connection_handle c, connection_handle i, std::string p, std::uint32_t max)
    : client{c}, inner{i}, peer{std::move(p)}, checker{max} {}
};

struct guard_state {
  basp_guard_options opts;
  basp_guard_stats stats;
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

/// A connection to 127.0.0.1:port that the multiplexer completes: connect()
/// on a non-blocking socket does not wait, and a scribe writes only once
/// the socket is writable, that is, connected.
[[nodiscard]] caf::expected<int> connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return caf::make_error(caf::sec::cannot_connect_to_node, std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return caf::make_error(caf::sec::cannot_connect_to_node, why);
  }
  return fd;
}

/// Ends a relay: both sides closed (a refused client at once, without
/// waiting for anything still to be sent to it).
/// `p` by value: callers pass the map's own element, which the first erase
/// below destroys (a use-after-free when `p` was a reference to it).
void drop(guard_ptr self, std::shared_ptr<relay> p, bool hard) {
  auto& st = self->state;
  if (hard)  // the default multiplexer's handle is the socket
    ::shutdown(static_cast<int>(p->client.id()), SHUT_RDWR);
  self->close(p->client);
  self->close(p->inner);
  st.relays.erase(p->client);
  st.relays.erase(p->inner);
}

void refuse(guard_ptr self, const std::shared_ptr<relay>& p) {
  auto& st = self->state;
  ++st.stats.refused;
  log(self, "BASP guard: closed the connection from " + p->peer + ": " + p->checker.reason() +
              " (" + std::to_string(st.stats.refused) + " refused so far)");
  drop(self, p, true);
}

/// Forwards `buf` from one side of `p` to the other, halting the source
/// while too much waits to go out.
void forward(guard_ptr self, relay& p, bool from_client, const std::vector<char>& buf) {
  const auto dst = from_client ? p.inner : p.client;
  const auto src = from_client ? p.client : p.inner;
  auto& halted = from_client ? p.client_halted : p.inner_halted;
  self->write(dst, buf.size(), buf.data());
  self->flush(dst);
  if (!halted && self->wr_buf(dst).size() > high_water) {
    self->halt(src);
    self->ack_writes(dst, true);
    halted = true;
  }
}

caf::behavior guard(guard_ptr self, caf::io::doorman_ptr door, basp_guard_options opts) {
  self->state.opts = std::move(opts);
  self->add_doorman(std::move(door));
  return {
    [=](const caf::io::new_connection_msg& msg) {
      auto& st = self->state;
      const auto peer =
        self->remote_addr(msg.handle) + ":" + std::to_string(self->remote_port(msg.handle));
      auto fd = connect_loopback(st.opts.basp_port);
      if (!fd) {
        log(self, "BASP guard: cannot reach the BASP port for " + peer + ": " +
                    self->system().render(fd.error()));
        ::shutdown(static_cast<int>(msg.handle.id()), SHUT_RDWR);
        self->close(msg.handle);
        return;
      }
      const auto inner = self->add_scribe(*fd);  // CAF sets TCP_NODELAY on both
      auto p = std::make_shared<relay>(msg.handle, inner, peer, st.opts.max_payload);
      st.relays.emplace(msg.handle, p);
      st.relays.emplace(inner, p);
      ++st.stats.accepted;
      for (auto h : {msg.handle, inner})
        self->configure_read(h, caf::io::receive_policy::at_most(chunk_bytes));
    },
    [=](const caf::io::new_data_msg& msg) {
      auto& st = self->state;
      auto i = st.relays.find(msg.handle);
      if (i == st.relays.end())
        return;
      auto p = i->second;
      const bool from_client = msg.handle == p->client;
      if (from_client && !p->checker.consume(msg.buf.data(), msg.buf.size())) {
        refuse(self, p);
        return;
      }
      forward(self, *p, from_client, msg.buf);
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
    [=](const caf::io::connection_closed_msg& msg) {
      auto& st = self->state;
      auto i = st.relays.find(msg.handle);
      if (i != st.relays.end())
        drop(self, i->second, false);
    },
    [=](const caf::io::acceptor_closed_msg&) {
      log(self, "BASP guard: the public port closed");
      self->quit();
    },
    [=](stats_atom) {
      auto& st = self->state;
      return caf::make_message(st.stats.accepted, st.stats.refused,
                               static_cast<std::uint64_t>(st.relays.size() / 2));
    },
  };
}

}  // namespace

caf::expected<basp_guard> spawn_basp_guard(caf::actor_system& sys, basp_guard_options opts) {
  auto door = sys.middleman().backend().new_tcp_doorman(opts.port, opts.host.c_str(), true);
  if (!door)
    return door.error();
  basp_guard g;
  g.port = (*door)->port();
  g.actor = sys.middleman().spawn_broker(guard, std::move(*door), std::move(opts));
  return g;
}

caf::expected<void> replace_automatic_connection_port(caf::actor_system& sys,
                                                      const std::string& host, std::uint16_t port) {
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
  if (host.empty())
    port = 0;
  else if (host == "0.0.0.0" || host == "::")
    where = caf::io::network::interfaces::list_addresses(true);
  else
    where[host.find(':') == std::string::npos ? caf::io::network::protocol::ipv4
                                              : caf::io::network::protocol::ipv6]
      .push_back(host);
  self->send(config_serv, caf::put_atom::value, key, caf::make_message(port, std::move(where)));
  return caf::unit;
}

}  // namespace atrain
