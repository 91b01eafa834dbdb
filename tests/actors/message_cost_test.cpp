/// cost.message_seconds, the virtual twin's CPU cost of a packet to the node
/// that sends it: a node that never waits (R-FAST) spends its run on its
/// gradients' tau plus that cost per packet it put on the wire, with and
/// with the outbox's window (packets charged as they leave); the charge is not busy time; what is
/// unpaid at a checkpoint is paid after the resume; the spec check bounds it.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace ck = atrain::test::ckpt;

namespace {

constexpr double tau = 0.01;
constexpr double cost = 0.004;
constexpr double horizon = 1.0;

atrain::proto::RunReport run(std::vector<std::string> extra) {
  extra.insert(extra.end(), {"cost.jitter=0", "cost.tau_seconds=0.01", "stop.time_seconds=1"});
  auto r = atrain::run_experiment(t::quickstart(t::small_task(extra)));
  BOOST_REQUIRE(r);
  BOOST_TEST(r->error().empty(), r->error());
  return *r;
}

/// Packets node n put on the wire: its sends but those merged, dropped or
/// still waiting at its outbox (the window).
std::uint64_t packets_left(const atrain::proto::NodeReport& n) {
  std::uint64_t held = 0;
  for (const auto& w : n.wire())
    held += w.merged() + w.dropped() + w.waiting();
  return n.messages_sent() - held;
}

/// Every node's run: gradients x tau + packets x cost fill the horizon, to
/// within the wake in progress at the stop (and the initial gradient at 0).
void expect_time_accounted(const atrain::proto::RunReport& charged,
                           const atrain::proto::RunReport& free) {
  BOOST_REQUIRE(charged.per_node_size() == free.per_node_size());
  for (int i = 0; i < charged.per_node_size(); ++i) {
    const auto& n = charged.per_node(i);
    const auto g = static_cast<double>(n.gradients());
    const auto p = static_cast<double>(packets_left(n));
    const double wake = tau + cost * p / g;  // one wake, its packets' cost included
    const double spent = g * tau + p * cost;
    BOOST_TEST(std::abs(spent - horizon) <= 2 * wake,
               "node " << n.node() << ": " << g << " gradients, " << p << " packets: " << spent
                       << " s of a " << horizon << " s run (one wake " << wake << " s)");
    // The charge is messaging, not compute: seconds per gradient stay tau.
    BOOST_TEST(std::abs(n.seconds_per_gradient() - tau) <= 1e-9);
    // And it is what slowed the node: the free run's wakes are tau alone.
    const auto& f = free.per_node(i);
    BOOST_TEST(std::abs(static_cast<double>(f.gradients()) * tau - horizon) <= 2 * tau);
    BOOST_TEST(g < 0.8 * static_cast<double>(f.gradients()));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(message_cost)

BOOST_AUTO_TEST_CASE(each_packet_delays_its_senders_next_gradient) {
  const auto free = run({"cost.message_seconds=0"});
  const auto charged = run({"cost.message_seconds=0.004"});
  expect_time_accounted(charged, free);
  BOOST_TEST(charged.trace_hash() != free.trace_hash());
  BOOST_TEST(charged.trace_hash() == run({"cost.message_seconds=0.004"}).trace_hash());
}

BOOST_AUTO_TEST_CASE(packets_behind_the_window_cost_when_they_leave) {
  // The twin's flow control: packets leave as requests when a slot frees
  // (outbox::dispatch), and those merged while waiting never leave.
  const std::vector<std::string> window{"link.latency_seconds=0.02", "link.window=2"};
  auto with_cost = window;
  with_cost.push_back("cost.message_seconds=0.004");
  const auto charged = run(with_cost);
  std::uint64_t requests = 0;
  for (const auto& n : charged.per_node())
    for (const auto& w : n.wire())
      requests += w.packets();
  BOOST_TEST(requests > 0u);  // else this case would not test the window's path
  expect_time_accounted(charged, run(window));
}

BOOST_AUTO_TEST_CASE(unpaid_packets_survive_a_checkpoint) {
  ck::remove_scratch files;
  ck::expect_resume_equals_uninterrupted("quickstart.textproto",
                                         t::small_task({"cost.message_seconds=0.004"}), 0.2, 0.4,
                                         0.6, "message_cost");
  // The saved state held packets not yet paid for, else the case proves nothing.
  const auto plan =
    t::config("quickstart.textproto", t::small_task({"cost.message_seconds=0.004"}));
  const auto saved = ck::load(ck::scratch("message_cost_A_1.ckpt"), *plan);
  std::uint64_t unpaid = 0;
  for (const auto& n : saved->nodes())
    unpaid += n.compute().unpaid_packets();
  BOOST_TEST(unpaid > 0u);
}

BOOST_AUTO_TEST_CASE(the_spec_check_bounds_it) {
  BOOST_TEST(t::quickstart_refusal({"cost.message_seconds=-0.001"}).find("cost.message_seconds") !=
             std::string::npos);
  BOOST_TEST(t::quickstart_refusal({"cost.message_seconds=2"}).find("must be <= 1") !=
             std::string::npos);
  BOOST_TEST(t::quickstart_refusal({"cost.message_seconds=0.5"}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
