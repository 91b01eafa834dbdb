/// Hostile CAF clients against an `atrain node` host (issues 7 and 16).
///
/// `hostile_client attack HOST:PORT [WRONG_SECRET_FILE]`: a plain CAF client
/// that knows only the port (issue 16's attack: connect, then kill the
/// spawner with one exit message), and the same through atrain's own
/// authenticating connect with a wrong secret. Exit 0 when both are refused
/// before any BASP (each prints "refused: REASON"); exit 1 when either
/// connects (the attack is then carried out, and says so).
///
/// `hostile_client spawn HOST:PORT SECRET_FILE SPEC`: a peer holding the
/// secret (authenticated as a driver is) sends what the spawner must refuse:
/// spawn requests with a wrong secret, a malformed spec, an invalid spec and
/// node ids out of range are each refused with an error, and counted by the
/// host. Then what the host's message filter refuses (basp_filter.hpp): a
/// string and an atom the spawner does not take, an exit message to it — each ends the connection, and a
/// new one finds the spawner alive, its counts as before.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <caf/io/all.hpp>

#include "atrain/actors/basp_guard.hpp"

#include "atrain/actors/deploy.hpp"
#include "atrain/messages/spec.hpp"
#include "atrain/messages/wire.hpp"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok   " : "FAIL ") << what << std::endl;
  failures += ok ? 0 : 1;
}

/// The spawner's counts: no run, the five refused requests, no message of
/// unexpected type (the guard keeps those away from it).
void expect_counts(caf::actor_system& sys, caf::scoped_actor& self, const caf::actor& host,
                   const std::string& when) {
  self->request(host, std::chrono::seconds{10}, atrain::stats_atom::value)
    .receive(
      [&](std::uint64_t runs, std::uint64_t refused, std::uint64_t unexpected) {
        check(runs == 0 && refused == 5 && unexpected == 0,
              when + ": the host counted " + std::to_string(runs) + " runs, " +
                std::to_string(refused) + " refused requests, " + std::to_string(unexpected) +
                " unexpected messages");
      },
      [&](caf::error& e) { check(false, when + ": stats: " + sys.render(e)); });
}

caf::expected<caf::actor> connect(caf::actor_system& sys, const std::string& where,
                                  const std::string& secret) {
  auto hp = atrain::split_host_port(where);
  if (!hp)
    return hp.error();
  return atrain::connect_authenticated(sys, hp->first, hp->second, secret,
                                       std::chrono::seconds{10});
}

}  // namespace

/// Carries out issue 16's attack on a host that let us connect.
int attack_succeeded(caf::actor_system& sys, const caf::actor& spawner, const std::string& how) {
  std::cout << "ATTACK CONNECTED (" << how << "): sending the spawner an exit (kill)" << std::endl;
  caf::anon_send_exit(spawner, caf::exit_reason::kill);
  caf::scoped_actor self{sys};
  self->request(spawner, std::chrono::seconds{3}, atrain::stats_atom::value)
    .receive(
      [&](caf::message&) { std::cout << "the spawner still answers" << std::endl; },
      [&](caf::error& e) { std::cout << "the spawner is gone: " << sys.render(e) << std::endl; });
  return 1;
}

int attack(caf::actor_system& sys, const std::string& where, const char* wrong_secret_file) {
  auto hp = atrain::split_host_port(where);
  if (!hp)
    return 2;
  auto plain = sys.middleman().remote_actor(hp->first, hp->second);
  if (plain)
    return attack_succeeded(sys, *plain, "plain CAF, no secret");
  std::cout << "refused: plain CAF client without the secret: " << sys.render(plain.error())
            << std::endl;
  if (wrong_secret_file != nullptr) {
    auto wrong = atrain::read_secret_file(wrong_secret_file);
    if (!wrong)
      return 2;
    auto h =
      atrain::connect_authenticated(sys, hp->first, hp->second, *wrong, std::chrono::seconds{10});
    if (h)
      return attack_succeeded(sys, *h, "a wrong secret");
    std::cout << "refused: a wrong secret: " << sys.render(h.error()) << std::endl;
  }
  std::cout << "attack refused" << std::endl;
  return 0;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "attack" && (argc == 3 || argc == 4)) || (mode == "spawn" && argc == 5))) {
    std::cerr << "usage: hostile_client attack HOST:PORT [WRONG_SECRET_FILE]\n"
                 "       hostile_client spawn HOST:PORT SECRET_FILE SPEC\n";
    return 2;
  }
  caf::actor_system_config cfg;
  atrain::register_message_types(cfg);
  atrain::configure_networking(cfg, {});
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::seconds{2}});
  caf::actor_system sys{cfg};
  if (mode == "attack")
    return attack(sys, argv[2], argc == 4 ? argv[3] : nullptr);
  auto hp = atrain::split_host_port(argv[2]);
  auto secret = atrain::read_secret_file(argv[3]);
  if (!hp || !secret)
    return 2;
  auto host = connect(sys, argv[2], *secret);
  if (!host) {
    std::cerr << "cannot connect: " << sys.render(host.error()) << "\n";
    return 1;
  }
  auto spec = atrain::load_spec(argv[4]);
  std::string good;
  spec.spec.SerializeToString(&good);
  {
    caf::scoped_actor self{sys};
    const auto timeout = std::chrono::seconds{10};
    auto expect_error = [&](const std::string& what, const std::string& needle, auto... xs) {
      self->request(*host, timeout, xs...)
        .receive([&](caf::message& m) { check(false, what + ": answered " + to_string(m)); },
                 [&](caf::error& e) {
                   const auto text = sys.render(e);
                   check(text.find(needle) != std::string::npos, what + ": " + text);
                 });
    };
    atrain::spawn_request r;
    r.secret = "guessed";
    r.spec = good;
    r.nodes = {0};
    r.base_dir = std::filesystem::absolute(spec.base_dir.empty() ? "." : spec.base_dir).string();
    r.supervisor = caf::actor_cast<caf::actor>(self);
    expect_error("a spawn request with a wrong secret", "wrong shared secret",
                 atrain::spawn_atom::value, r);
    r.secret = *secret;
    r.spec = std::string{"\xff\xff\xff garbage", 12};
    expect_error("a malformed spec", "not a binary", atrain::spawn_atom::value, r);
    auto invalid = spec.spec;
    invalid.set_nodes(0);
    invalid.SerializeToString(&r.spec);
    expect_error("an invalid spec", "nodes: must be >= 1", atrain::spawn_atom::value, r);
    r.spec = good;
    r.nodes = {99};
    expect_error("node ids out of range", "out of range", atrain::spawn_atom::value, r);
    r.nodes = {0, 0};
    expect_error("a node requested twice", "requested twice", atrain::spawn_atom::value, r);
    expect_counts(sys, self, *host, "after the bad spawn requests");
  }
  // Each of these ends the connection (the guard refuses it before CAF):
  // the request gets no answer; a new connection finds the spawner alive.
  auto filtered = [&](const std::string& what, auto send) {
    auto h = connect(sys, argv[2], *secret);
    if (!h)
      return check(false, what + ": cannot connect: " + sys.render(h.error()));
    caf::scoped_actor self{sys};
    send(self, *h);
    self->request(*h, std::chrono::seconds{3}, atrain::stats_atom::value)
      .receive(
        [&](caf::message& m) { check(false, what + ": still answered " + to_string(m)); },
        [&](caf::error& e) { check(true, what + ": connection ended (" + sys.render(e) + ")"); });
    auto again = connect(sys, argv[2], *secret);
    if (!again)
      return check(false, what + ": cannot reconnect: " + sys.render(again.error()));
    expect_counts(sys, self, *again, what);
  };
  filtered("a string to the spawner",
           [](auto& self, const caf::actor& h) { self->send(h, std::string{"hello host"}); });
  filtered("an atom the spawner does not take", [](auto& self, const caf::actor& h) {
    self->send(h, atrain::stop_atom::value, std::uint64_t{42});
  });
  filtered("an exit message to the spawner",
           [](auto&, const caf::actor& h) { caf::anon_send_exit(h, caf::exit_reason::kill); });
  if (failures > 0)
    return 1;
  std::cout << "hostile client OK" << std::endl;
  return 0;
}
