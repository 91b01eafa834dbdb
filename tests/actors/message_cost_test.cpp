/// cost.message_seconds, the virtual twin's time a node spends on each
/// packet it sends: a node's packets leave one after another, that long
/// apart. The synchronous ring's step grows by it once per packet of the
/// step (they are sequential); a window's answers come back after the
/// packet's wait plus the round trip; a checkpoint drains the held packets
/// and the resumed run is the uninterrupted one; the spec check bounds it.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>

#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace ck = atrain::test::ckpt;

namespace {

constexpr double cost = 0.001;
constexpr double latency = 0.002;

atrain::proto::RunReport run(const std::string& config, std::vector<std::string> extra) {
  auto o = t::small_task({"cost.jitter=0", "cost.tau_seconds=0.01", "stop.time_seconds=3",
                          "link.latency_seconds=0.002"});
  o.insert(o.end(), extra.begin(), extra.end());
  auto r = atrain::run_experiment(t::config(config, o));
  BOOST_REQUIRE(r);
  BOOST_TEST(r->error().empty(), r->error());
  return *r;
}

/// Seconds per step of a run where every node steps once per gradient.
double seconds_per_step(const atrain::proto::RunReport& r) {
  return r.duration_seconds() / static_cast<double>(r.per_node(0).gradients());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(message_cost)

BOOST_AUTO_TEST_CASE(the_rings_step_grows_by_the_cost_of_each_sequential_packet) {
  // Each ring step sends its chunks one hop at a time: every hop now waits
  // `cost` more before it leaves, and nothing else changes.
  const auto free = run("algorithms/allreduce.textproto", {"cost.message_seconds=0"});
  const auto charged = run("algorithms/allreduce.textproto", {"cost.message_seconds=0.001"});
  const auto& n = charged.per_node(0);
  const double hops = static_cast<double>(n.messages_sent()) / static_cast<double>(n.gradients());
  const double grown = seconds_per_step(charged) - seconds_per_step(free);
  BOOST_TEST_MESSAGE("ring step " << seconds_per_step(free) << " s -> " << seconds_per_step(charged)
                                  << " s, " << hops << " packets per node and step");
  BOOST_TEST(hops >= 2.0);
  BOOST_TEST(std::abs(grown - hops * cost) <= 0.03 * seconds_per_step(charged));
  for (const auto& m : charged.per_node())  // every node steps alike
    BOOST_TEST(m.gradients() == n.gradients());
}

BOOST_AUTO_TEST_CASE(a_windows_answers_wait_for_the_packets_departure) {
  // R-FAST behind the outbox's window: a route's round trip is 2 x latency
  // free, and with the cost at least one packet's wait more and at most the
  // wait of a whole step's packets from that node.
  const std::vector<std::string> window{"link.window=4", "stop.time_seconds=1"};
  auto with_cost = window;
  with_cost.push_back("cost.message_seconds=0.001");
  const auto free = run("quickstart.textproto", window);
  const auto charged = run("quickstart.textproto", with_cost);
  for (const auto& n : free.per_node())
    for (const auto& w : n.wire())
      BOOST_TEST(std::abs(w.round_trip_seconds() - 2 * latency) <= 1e-9);
  std::size_t routes = 0;
  for (const auto& n : charged.per_node()) {
    const auto per_step = static_cast<double>(n.wire_size());  // one packet per route and step
    for (const auto& w : n.wire()) {
      ++routes;
      BOOST_TEST(w.round_trip_seconds() >= 2 * latency + cost - 1e-9);
      BOOST_TEST(w.round_trip_seconds() <= 2 * latency + 2 * per_step * cost + 1e-9);
    }
  }
  BOOST_TEST(routes > 0u);
  BOOST_TEST(charged.gradients_total() == free.gradients_total());  // gradients cost the same
  BOOST_TEST(charged.messages_sent() < free.messages_sent());       // steps wait longer
}

BOOST_AUTO_TEST_CASE(a_checkpoint_drains_the_held_packets) {
  ck::remove_scratch files;
  ck::expect_resume_equals_uninterrupted("quickstart.textproto",
                                         t::small_task({"cost.message_seconds=0.001"}), 0.2, 0.4,
                                         0.6, "message_cost");
}

BOOST_AUTO_TEST_CASE(the_spec_check_bounds_it) {
  BOOST_TEST(t::quickstart_refusal({"cost.message_seconds=-0.001"}).find("cost.message_seconds") !=
             std::string::npos);
  BOOST_TEST(t::quickstart_refusal({"cost.message_seconds=2"}).find("must be <= 1") !=
             std::string::npos);
  BOOST_TEST(t::quickstart_refusal({"cost.message_seconds=0.5"}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
