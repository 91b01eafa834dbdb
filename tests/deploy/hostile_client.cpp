/// A CAF client without credentials against an `atrain node` host (issue 7,
/// "Remote input is untrusted"): messages of unknown type, spawn requests
/// with a wrong secret, a malformed spec, an invalid spec and node ids out
/// of range are each refused with an error, and counted by the host.
///
/// usage: hostile_client HOST:PORT SECRET_FILE SPEC
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <caf/io/all.hpp>

#include "atrain/actors/deploy.hpp"
#include "atrain/messages/spec.hpp"
#include "atrain/messages/wire.hpp"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok   " : "FAIL ") << what << std::endl;
  failures += ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: hostile_client HOST:PORT SECRET_FILE SPEC\n";
    return 2;
  }
  caf::actor_system_config cfg;
  atrain::register_message_types(cfg);
  atrain::configure_networking(cfg, {});
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  auto hp = atrain::split_host_port(argv[1]);
  auto host = sys.middleman().remote_actor(hp->first, hp->second);
  if (!host) {
    std::cerr << "cannot connect: " << sys.render(host.error()) << "\n";
    return 1;
  }
  std::ifstream in{argv[2]};
  std::string secret;
  in >> secret;
  auto spec = atrain::load_spec(argv[3]);
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
    expect_error("a message of unknown type", "unexpected_message", std::string{"hello host"});
    expect_error("an atom it does not know", "unexpected_message", atrain::stop_atom::value,
                 std::uint64_t{42});
    atrain::spawn_request r;
    r.secret = "guessed";
    r.spec = good;
    r.nodes = {0};
    r.base_dir = std::filesystem::absolute(spec.base_dir.empty() ? "." : spec.base_dir).string();
    r.supervisor = caf::actor_cast<caf::actor>(self);
    expect_error("a spawn request with a wrong secret", "wrong shared secret",
                 atrain::spawn_atom::value, r);
    r.secret = secret;
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
    self->request(*host, timeout, atrain::stats_atom::value)
      .receive(
        [&](std::uint64_t runs, std::uint64_t refused, std::uint64_t unexpected) {
          check(runs == 0 && refused == 5 && unexpected == 2,
                "the host counted 0 runs, " + std::to_string(refused) + " refused requests, " +
                  std::to_string(unexpected) + " unexpected messages");
        },
        [&](caf::error& e) { check(false, "stats: " + sys.render(e)); });
  }
  if (failures > 0)
    return 1;
  std::cout << "hostile client OK" << std::endl;
  return 0;
}
