/// Joins asked for by an embedding service (docs/RELIABILITY.md "Joining
/// nodes"): a run spawned with spawn_run in the service's own actor system
/// answers (join_atom, node) requests — a node absent from the start joins,
/// a node present from the start or joined already is refused with the
/// reason — and its report records the join.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

#include "atrain/engine.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;

namespace {

struct service_config : caf::actor_system_config {
  service_config() {
    atrain::register_message_types(*this);
    set("scheduler.policy", caf::atom("sharing"));  // as apps/examples/embed.cpp
    set("scheduler.max-threads", 2);
  }
};

/// The answer to (join_atom, node): "joined", or the error's text.
std::string ask_join(caf::scoped_actor& self, const caf::actor& run, std::uint32_t node) {
  std::string out;
  self->request(run, std::chrono::seconds(30), atrain::join_atom::value, node)
    .receive([&] { out = "joined"; }, [&](caf::error& e) { out = atrain::error_text(e); });
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(join_api)

BOOST_AUTO_TEST_CASE(a_spawned_run_answers_join_requests_on_the_real_clock) {
  // Nodes 10 and 11 join "when asked"; the service asks for 10 only.
  auto plan = t::config("beyond/elastic_join.textproto",
                        {"clock=REAL", "progress=false", "faults.join=[{node: 10}, {node: 11}]",
                         "stop.stop_at_target=false", "stop.time_seconds=30"});
  service_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto run = atrain::spawn_run(sys, plan, caf::actor{self});
  BOOST_REQUIRE(run);
  const auto present = ask_join(self, *run, 3);
  BOOST_TEST(present.find("node 3 cannot join: only a node absent from the start joins") !=
               std::string::npos,
             present);
  BOOST_TEST(ask_join(self, *run, 10) == "joined");
  const auto again = ask_join(self, *run, 10);
  BOOST_TEST(again.find("node 10 has joined already") != std::string::npos, again);
  // Two evaluations after the join, stop; the run still reports.
  int rows = 0;
  bool done = false;
  atrain::proto::RunReport report;
  while (!done)
    self->receive(
      [&](atrain::metric_atom, const atrain::metric_sample&) {
        if (++rows == 2)
          self->send(*run, atrain::stop_atom::value);
      },
      [&](atrain::done_atom, const atrain::report_bytes& b) {
        report.ParseFromString(b.bytes);
        done = true;
      },
      caf::after(std::chrono::seconds(120)) >>
        [&] {
          BOOST_FAIL("no report within 120 s");
          done = true;
        });
  BOOST_TEST(report.error().empty(), report.error());
  BOOST_REQUIRE(report.faults_size() == 2);
  BOOST_TEST(report.faults(0).effect().find("joined at") != std::string::npos,
             report.faults(0).effect());
  BOOST_TEST(report.faults(1).effect().find("joined") == std::string::npos,
             report.faults(1).effect());
  BOOST_TEST(report.per_node(11).gradients() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
