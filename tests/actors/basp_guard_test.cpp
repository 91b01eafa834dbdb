/// The BASP guard (actors/basp_guard.hpp): its header checker against headers
/// written by CAF's own serializer, split across reads at every byte, at the
/// limit and above it; and the guard itself on a real socket.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/binary_serializer.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp/header.hpp>

#include "atrain/actors/basp_filter.hpp"
#include "atrain/actors/basp_guard.hpp"
#include "atrain/messages/wire.hpp"

namespace {

using caf::io::basp::message_type;

struct guard_config : caf::actor_system_config {
  guard_config() {
    load<caf::io::middleman>();
    set("scheduler.max-threads", 1);
    set("logger.console-verbosity", caf::atom("quiet"));
  }
};

struct guard_fixture {
  guard_config cfg;
  caf::actor_system sys{cfg};

  /// A BASP header as CAF 0.17.6 puts it on the wire.
  std::vector<char> header(message_type op, std::uint32_t payload_len) {
    caf::io::basp::header hdr{op, 0, payload_len, 42, 7, 9};
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto err = sink(hdr);
    BOOST_REQUIRE_MESSAGE(!err, sys.render(err));
    BOOST_REQUIRE_EQUAL(buf.size(), atrain::basp_header_size);
    return buf;
  }
};

/// Feeds `bytes` to a fresh checker in reads of `step` bytes.
atrain::basp_stream_checker feed(const std::vector<char>& bytes, std::size_t step,
                                 std::uint32_t limit) {
  atrain::basp_stream_checker c{limit};
  for (std::size_t at = 0; at < bytes.size(); at += step)
    if (!c.consume(bytes.data() + at, std::min(step, bytes.size() - at)))
      break;
  return c;
}

/// Reads from `fd` until the peer closes (true) or a read fails otherwise.
bool closed_by_peer(int fd) {
  char buf[4096];
  for (;;) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0)
      return true;
    if (n < 0)
      return errno == ECONNRESET;
  }
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(basp_guard, guard_fixture)

BOOST_AUTO_TEST_CASE(headers_split_at_every_byte_are_followed_through_their_payloads) {
  // A handshake with a 100-byte payload, then an empty message; a third header
  // announces one byte more than the limit.
  const std::uint32_t limit = 1000;
  std::vector<char> stream = header(message_type::client_handshake, 100);
  stream.insert(stream.end(), 100, '\x07');  // payload bytes that look like an unknown op
  auto second = header(message_type::heartbeat, 0);
  stream.insert(stream.end(), second.begin(), second.end());
  const auto ok_part = stream.size();
  auto third = header(message_type::direct_message, limit + 1);
  stream.insert(stream.end(), third.begin(), third.end());
  for (std::size_t step = 1; step <= stream.size(); ++step) {
    auto c =
      feed({stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(ok_part)}, step, limit);
    BOOST_TEST_REQUIRE(!c.refused(), "step " << step << ": " << c.reason());
    BOOST_TEST(c.headers() == 2u);
    auto d = feed(stream, step, limit);
    BOOST_TEST_REQUIRE(d.refused(), "step " << step);
    BOOST_TEST(d.headers() == 2u);
    BOOST_TEST(d.reason().find("payload of 1001 bytes (limit 1000)") != std::string::npos,
               d.reason());
  }
}

BOOST_AUTO_TEST_CASE(a_header_exactly_at_the_limit_passes_and_one_above_does_not) {
  const std::uint32_t limit = atrain::default_max_basp_payload;
  auto at = feed(header(message_type::client_handshake, limit), 5, limit);
  BOOST_TEST(!at.refused());
  BOOST_TEST(at.headers() == 1u);
  auto above = feed(header(message_type::client_handshake, limit + 1), 5, limit);
  BOOST_TEST(above.refused());
  auto huge = feed(header(message_type::client_handshake, 0xffffffffu), 32, limit);
  BOOST_TEST(huge.refused());
  BOOST_TEST(huge.reason().find("payload of 4294967295 bytes") != std::string::npos, huge.reason());
}

BOOST_AUTO_TEST_CASE(a_client_handshake_first_then_any_known_operation) {
  const auto handshake = header(message_type::client_handshake, 0);
  for (auto op = 0; op <= atrain::basp_last_operation + 1; ++op) {
    auto first = feed(header(static_cast<message_type>(op), 0), 32, 16);
    BOOST_TEST(first.refused() == (op != 1), op);
    auto stream = handshake;
    auto next = header(static_cast<message_type>(op), 0);
    stream.insert(stream.end(), next.begin(), next.end());
    auto later = feed(stream, 32, 16);
    BOOST_TEST(later.refused() == (op > atrain::basp_last_operation), op);
    if (later.refused())
      BOOST_TEST(later.reason().find("unknown BASP operation 7 in header 2") != std::string::npos,
                 later.reason());
  }
}

/// A raw TCP connection to the guard on 127.0.0.1:`port`.
int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

/// Answers the guard's challenge on `fd` with `secret`; returns the MAC the
/// guard's proof must carry.
atrain::auth::mac answer(int fd, const std::string& secret) {
  unsigned char hello[atrain::auth::hello_size];
  BOOST_REQUIRE(::recv(fd, hello, sizeof hello, MSG_WAITALL) == sizeof hello);
  BOOST_REQUIRE(std::memcmp(hello, atrain::auth::magic, sizeof atrain::auth::magic) == 0);
  const auto* host_nonce = hello + sizeof atrain::auth::magic;
  const auto mine = atrain::auth::fresh_nonce();
  const auto m = atrain::auth::mac_of(secret, true, host_nonce, mine.data());
  std::vector<unsigned char> response(mine.begin(), mine.end());
  response.insert(response.end(), m.begin(), m.end());
  BOOST_REQUIRE(::send(fd, response.data(), response.size(), 0) ==
                static_cast<ssize_t>(response.size()));
  return atrain::auth::mac_of(secret, false, host_nonce, mine.data());
}

BOOST_AUTO_TEST_CASE(the_guard_authenticates_then_closes_a_connection_announcing_too_much) {
  // One (unused) spawn argument: CAF 0.17.6 builds a function actor spawned
  // without arguments from a null argument tuple and dereferences it
  // (init_fun_factory.hpp:99, UBSan: reference binding to null pointer).
  auto target = sys.spawn([](int) -> caf::behavior { return {[](int x) { return x; }}; }, 0);
  std::vector<std::string> lines;
  const std::string secret = "0123456789abcdef-guard";
  atrain::basp_guard_options opts;
  opts.secret = secret;
  opts.target = target;
  opts.max_payload = 1 << 20;
  opts.owners = std::make_shared<atrain::run_owners>();
  opts.log = [&](const std::string& l) { lines.push_back(l); };  // read after the guard ends
  auto guard = atrain::spawn_basp_guard(sys, opts);
  BOOST_REQUIRE_MESSAGE(guard, (guard ? std::string{} : sys.render(guard.error())));
  // A wrong secret: closed after the response, no proof, no BASP.
  const int wrong = connect_to(guard->port);
  answer(wrong, "not the secret at all");
  BOOST_TEST(closed_by_peer(wrong));
  ::close(wrong);
  // The right one: the guard's proof, then CAF's server handshake (through
  // the socket pair); then the client announces 4 GiB - 1.
  const int fd = connect_to(guard->port);
  const auto expected = answer(fd, secret);
  unsigned char proof[atrain::auth::proof_size];
  BOOST_REQUIRE(::recv(fd, proof, sizeof proof, MSG_WAITALL) == sizeof proof);
  BOOST_TEST(atrain::auth::same_mac(proof, expected.data()));
  char first[atrain::basp_header_size];
  BOOST_REQUIRE(::recv(fd, first, sizeof first, MSG_WAITALL) == sizeof first);
  BOOST_TEST(first[0] == static_cast<char>(message_type::server_handshake));
  auto bad = header(message_type::client_handshake, 0xffffffffu);
  BOOST_REQUIRE(::send(fd, bad.data(), bad.size(), 0) == static_cast<ssize_t>(bad.size()));
  BOOST_TEST(closed_by_peer(fd));
  ::close(fd);
  caf::scoped_actor self{sys};
  self->request(guard->actor, std::chrono::seconds{10}, atrain::stats_atom::value)
    .receive(
      [&](const std::string& counters) {
        BOOST_TEST(counters.find("accepted 2 connections, authenticated 1, refused 2 (wrong "
                                 "response 1,") != std::string::npos,
                   counters);
        BOOST_TEST(counters.find("BASP header 1,") != std::string::npos, counters);
        BOOST_TEST(counters.find("open now 0") != std::string::npos, counters);
      },
      [&](caf::error& e) { BOOST_FAIL(sys.render(e)); });
  self->send_exit(guard->actor, caf::exit_reason::user_shutdown);
  self->wait_for(guard->actor);
  BOOST_REQUIRE_EQUAL(lines.size(), 2u);
  BOOST_TEST(lines[0].find("authentication failed") != std::string::npos, lines[0]);
  BOOST_TEST(lines[1].find("closed the connection from 127.0.0.1:") != std::string::npos, lines[1]);
  BOOST_TEST(lines[1].find("payload of 4294967295 bytes (limit 1048576)") != std::string::npos,
             lines[1]);
  self->send_exit(target, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
