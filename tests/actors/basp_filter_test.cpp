/// The guard's message filter (actors/basp_filter.hpp) on frames written by
/// CAF's own serializer, as CAF 0.17.6's BASP instance writes them: who may
/// address what, and that a refused frame stops the stream before its last
/// byte goes on.
#include <boost/test/unit_test.hpp>

#include <caf/binary_serializer.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp/header.hpp>

#include "atrain/actors/basp_filter.hpp"
#include "atrain/messages/wire.hpp"

namespace {

using caf::io::basp::message_type;
constexpr std::uint64_t async_id = 0x1000000000000000;

struct filter_config : caf::actor_system_config {
  filter_config() {
    atrain::register_message_types(*this);
    load<caf::io::middleman>();
    set("scheduler.max-threads", 1);
    set("logger.console-verbosity", caf::atom("quiet"));
  }
};

struct filter_fixture {
  filter_config cfg;
  caf::actor_system sys{cfg};
  caf::node_id driver_a = node(1);
  caf::node_id driver_b = node(2);
  caf::actor spawner = spawn_registered();
  caf::actor run_a = spawn_registered();
  caf::actor run_b = spawn_registered();
  caf::actor unowned = spawn_registered();
  std::shared_ptr<atrain::run_owners> owners = std::make_shared<atrain::run_owners>();
  std::shared_ptr<const std::set<std::string>> types =
    std::make_shared<const std::set<std::string>>(atrain::atrain_remote_types(sys));

  filter_fixture() {
    owners->add(driver_a, {run_a.id()});
    owners->add(driver_b, {run_b.id()});
  }

  ~filter_fixture() {  // the system waits for its actors when it ends
    for (const auto& a : {spawner, run_a, run_b, unowned}) {
      sys.registry().erase(a.id());
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    }
  }

  static caf::node_id node(std::uint8_t tag) {
    caf::node_id::default_data::host_id_type host{};
    host.fill(tag);
    return caf::make_node_id(1000u + tag, host);
  }

  /// An actor CAF knows by id (as every actor a remote peer was told of).
  caf::actor spawn_registered() {
    // One unused argument: CAF 0.17.6 dereferences a null argument tuple for
    // a function actor spawned without any (UBSan; see basp_guard_test.cpp).
    auto a = sys.spawn([](int) -> caf::behavior { return {[](int) {}}; }, 0);
    sys.registry().put(a.id(), caf::actor_cast<caf::strong_actor_ptr>(a));
    return a;
  }

  [[nodiscard]] atrain::basp_message_filter filter() const {
    return atrain::basp_message_filter{const_cast<caf::actor_system&>(sys), spawner.id(), owners,
                                       types};
  }

  /// Header and whole payload of one frame, as the checker hands them over.
  atrain::basp_frame frame(message_type op, std::uint64_t dest, std::uint8_t flags,
                           std::uint64_t data, const std::function<void(caf::serializer&)>& body) {
    atrain::basp_frame f;
    f.operation = static_cast<std::uint8_t>(op);
    f.flags = flags;
    f.operation_data = data;
    f.dest_actor = dest;
    caf::binary_serializer sink{sys, f.prefix};
    body(sink);
    f.payload_len = static_cast<std::uint32_t>(f.prefix.size());
    return f;
  }

  atrain::basp_frame handshake(const caf::node_id& who) {
    return frame(message_type::client_handshake, 0, 0, 0,
                 [&](caf::serializer& s) { BOOST_REQUIRE(!s(const_cast<caf::node_id&>(who))); });
  }

  atrain::basp_frame direct(std::uint64_t dest, caf::message msg, std::uint8_t flags = 0,
                            std::uint64_t data = async_id,
                            std::vector<caf::strong_actor_ptr> stages = {}) {
    return frame(message_type::direct_message, dest, flags, data,
                 [&](caf::serializer& s) { BOOST_REQUIRE(!s(stages, msg)); });
  }

  caf::message exit_message() {
    return caf::make_message(caf::exit_msg{spawner.address(), caf::exit_reason::kill});
  }
};

bool has(const std::string& why, const std::string& needle) {
  return why.find(needle) != std::string::npos;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(basp_filter, filter_fixture)

BOOST_AUTO_TEST_CASE(a_peer_reaches_its_own_runs_actors_and_the_spawners_vocabulary_only) {
  auto f = filter();
  BOOST_TEST(f.judge(handshake(driver_a)) == "");
  BOOST_TEST(f.judge(direct(run_a.id(), caf::make_message(atrain::stop_atom::value))) == "");
  BOOST_TEST(f.judge(direct(run_a.id(), exit_message())) == "");  // a crash fault of its own run
  auto why = f.judge(direct(run_b.id(), exit_message()));
  BOOST_TEST(has(why, "of another peer's run"), why);
  why = f.judge(direct(unowned.id(), exit_message()));
  BOOST_TEST(has(why, "belongs to no run of this peer"), why);
  why = f.judge(direct(spawner.id(), exit_message()));
  BOOST_TEST(has(why, "(@<>+@exit) to the spawner"), why);
  atrain::spawn_request r;
  BOOST_TEST(f.judge(direct(spawner.id(), caf::make_message(atrain::spawn_atom::value, r))) == "");
  BOOST_TEST(f.judge(direct(spawner.id(), caf::make_message(atrain::stats_atom::value))) == "");
  why = f.judge(direct(spawner.id(), caf::make_message(std::string{"hello"})));
  BOOST_TEST(has(why, "to the spawner, which takes spawn requests only"), why);
  // No such actor (any more): CAF drops it, so it passes.
  BOOST_TEST(f.judge(direct(999999, exit_message())) == "");
  // A response goes only to a request that waits for it.
  BOOST_TEST(f.judge(direct(unowned.id(), caf::make_message(caf::error{}), 0,
                            caf::message_id::response_flag_mask | 7)) == "");
  // Once its run ends, its actors are nobody's.
  owners->remove({run_a.id()});
  why = f.judge(direct(run_a.id(), exit_message()));
  BOOST_TEST(has(why, "belongs to no run of this peer"), why);
}

BOOST_AUTO_TEST_CASE(types_stacks_names_routes_and_handshakes_atrain_never_sends_are_refused) {
  auto f = filter();
  BOOST_TEST(f.judge(handshake(driver_a)) == "");
  auto why = f.judge(direct(run_a.id(), caf::make_message(3.5f)));  // float: not in atrain's set
  BOOST_TEST(has(why, "type 'float', which atrain does not send"), why);
  why = f.judge(direct(run_a.id(), caf::make_message(atrain::stop_atom::value), 0, async_id,
                       {caf::actor_cast<caf::strong_actor_ptr>(run_a)}));
  BOOST_TEST(has(why, "forwarding stack"), why);
  const auto spawn_serv = static_cast<std::uint64_t>(caf::atom("SpawnServ"));
  const auto named = caf::io::basp::header::named_receiver_flag;
  auto info = caf::make_message(caf::sys_atom::value, caf::get_atom::value, std::string{"info"});
  BOOST_TEST(f.judge(direct(spawn_serv, info, named)) == "");  // CAF's greeting
  why = f.judge(direct(static_cast<std::uint64_t>(caf::atom("ConfigServ")),
                       caf::make_message(caf::get_atom::value, std::string{"x"}), named));
  BOOST_TEST(has(why, "to a named actor of CAF's"), why);
  auto routed = [&](const caf::node_id& to) {
    return frame(message_type::routed_message, run_a.id(), 0, async_id, [&](caf::serializer& s) {
      std::vector<caf::strong_actor_ptr> stages;
      auto msg = caf::make_message(atrain::stop_atom::value);
      BOOST_REQUIRE(!s(driver_b, const_cast<caf::node_id&>(to), stages, msg));
    });
  };
  BOOST_TEST(f.judge(routed(sys.node())) == "");
  why = f.judge(routed(driver_b));
  BOOST_TEST(has(why, "routed message for another node"), why);
  BOOST_TEST(f.judge(handshake(driver_a)) == "");  // CAF repeats it to select the connection
  why = f.judge(handshake(driver_b));
  BOOST_TEST(has(why, "naming another node"), why);
  auto monitor = [&](const caf::actor& a) {
    return frame(message_type::monitor_message, a.id(), 0, 0,
                 [&](caf::serializer& s) { BOOST_REQUIRE(!s(driver_a, sys.node())); });
  };
  BOOST_TEST(f.judge(monitor(run_a)) == "");
  why = f.judge(monitor(run_b));
  BOOST_TEST(has(why, "another peer's run"), why);
}

// Through the stream checker, split at every byte: a refused message stops
// the stream at its last byte (so CAF never holds it whole); others pass.
BOOST_AUTO_TEST_CASE(the_checker_refuses_at_the_last_byte_of_a_refused_message) {
  std::vector<char> stream;
  auto append = [&](const atrain::basp_frame& f) {
    caf::io::basp::header hdr{static_cast<message_type>(f.operation),
                              f.flags,
                              f.payload_len,
                              f.operation_data,
                              0,
                              f.dest_actor};
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    BOOST_REQUIRE(!sink(hdr));
    stream.insert(stream.end(), buf.begin(), buf.end());
    stream.insert(stream.end(), f.prefix.begin(), f.prefix.end());
  };
  append(handshake(driver_a));
  append(direct(run_a.id(), caf::make_message(atrain::stop_atom::value)));
  const auto good = stream.size();
  append(direct(run_b.id(), exit_message()));
  auto f = std::make_shared<atrain::basp_message_filter>(filter());
  atrain::basp_stream_checker c{1u << 20, [f](const atrain::basp_frame& x) { return f->judge(x); }};
  std::size_t at = 0;
  while (at < stream.size() && c.consume(stream.data() + at, 1))
    ++at;
  BOOST_TEST(at == stream.size() - 1);  // the refusal came with the last byte
  BOOST_TEST(at > good);
  BOOST_TEST(c.filtered());
  BOOST_TEST(has(c.reason(), "of another peer's run"), c.reason());
  BOOST_TEST(c.headers() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
