/// The peer's side of the BASP guard (see basp_guard.hpp): a driver's
/// authenticated connection, and closing CAF's automatic-connection port.
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <caf/io/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/network/interfaces.hpp>

#include "atrain/actors/basp_guard.hpp"

namespace atrain {

namespace {

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
