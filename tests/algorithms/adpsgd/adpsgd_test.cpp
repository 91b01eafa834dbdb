/// AD-PSGD (ALGORITHMS.md §6) on the actor runtime: the bipartite split, no
/// deadlock and an average-preserving exchange under delaying, duplicating
/// and reordering links, the quickstart target and replay.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>

#include "algorithms/adpsgd/adpsgd.hpp"
#include "fixtures.hpp"
#include "gossip_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

namespace {

std::vector<std::string> spec(std::vector<std::string> extra) {
  return g::with({"algorithm.adpsgd.step_size=2", "topology.builder=RING", "progress=false"},
                 std::move(extra));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(adpsgd)

BOOST_AUTO_TEST_CASE(a_graph_that_is_not_bipartite_is_refused_naming_topology) {
  g::expect_refused(spec({"nodes=7"}), {"topology", "bipartite"});  // odd ring
  g::expect_refused(spec({"topology.builder=EXPONENTIAL"}), {"topology", "bipartite"});
  g::expect_refused(spec({"topology.builder=DIRECTED_RING"}), {"topology", "symmetric"});
}

BOOST_AUTO_TEST_CASE(reaches_the_target_over_lossy_acknowledged_links) {
  t::expect_target_over_lossy_links("adpsgd.textproto");
}

BOOST_AUTO_TEST_CASE(ten_thousand_exchanges_on_16_nodes_without_deadlock_each_preserving_the_sum) {
  // 16 nodes on a ring: 8 active, 8 passive; delayed, reordered and
  // duplicated packets, jittery gradients, one slow passive node.
  auto plan = t::quickstart(
    spec({"nodes=16", "stop.time_seconds=24", "stop.stop_at_target=false", "eval.period_seconds=4",
          "link.latency_seconds=0.003", "link.reorder=0.5", "link.reorder_delay_seconds=0.02",
          "link.duplicate=0.2", "cost.jitter=0.6", "cost.slowdown=[{node: 5 factor: 4}]"}));
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  atrain::virtual_run run{plan, opts};
  g::exchange_book exchanges;  // (active, seq) -> the two sides' model changes
  while (run.step())
    g::harvest_exchanges(*probe, exchanges);
  auto report = run.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->stop_reason() == "time budget spent");
  std::size_t completed = 0, moved = 0, half = 0;
  double worst = 0;
  for (const auto& [key, s] : exchanges) {
    BOOST_TEST(s.passive_count == 1, "exchange served " << s.passive_count << " times");
    BOOST_TEST(s.active_count <= 1);
    if (s.active_count == 0) {
      ++half;  // served, reply still in flight when the run stopped
      continue;
    }
    ++completed;
    bool changed = false;
    for (std::size_t k = 0; k < s.active.size(); ++k) {
      // x_i + x_j is unchanged by the exchange (up to one float rounding
      // of the shared average).
      const double residual = std::abs(s.active[k] + s.passive[k]);
      worst = std::max(worst, residual / (1.0 + std::abs(s.active[k])));
      changed = changed || s.active[k] != 0.0;
    }
    moved += changed ? 1 : 0;
  }
  BOOST_TEST_MESSAGE(completed << " exchanges completed (" << half << " in flight at the stop), "
                               << moved << " moved the models; worst relative sum residual "
                               << worst << "; gradients " << report->gradients_total());
  BOOST_TEST(completed >= 10000u);
  BOOST_TEST(half <= 8u);  // at most one outstanding exchange per active node
  BOOST_TEST(moved > completed / 2);
  BOOST_TEST(worst < 1e-6);
  BOOST_TEST(std::isfinite(report->final().train_loss()));
  for (const auto& n : report->per_node())
    BOOST_TEST(n.gradients() > 100u);  // everyone, even the slow passive node, progressed
}

BOOST_AUTO_TEST_CASE(malformed_packets_are_rejected_and_counted_never_applied) {
  // Node 1 is passive: a reply is a protocol violation there.
  g::expect_malformed_rejected(
    t::quickstart(spec({"stop.time_seconds=0.5", "stop.stop_at_target=false"})),
    atrain::adpsgd_request, atrain::adpsgd_reply, 1,
    // an exchange count no sender reaches in 0.5 s; an
    // incarnation (seq >> 40) with no restart scheduled
    {std::uint64_t{1} << 39, (std::uint64_t{1} << 40) + 1});
}

BOOST_AUTO_TEST_CASE(reaches_the_quickstart_target_with_its_config) {
  g::expect_target("adpsgd", t::config("algorithms/adpsgd.textproto", {"progress=false"}));
}

BOOST_AUTO_TEST_CASE(reaches_the_target_on_the_real_clock) {
  g::expect_target_real(
    t::config("quickstart_real.textproto",
              {"algorithm.adpsgd.step_size=2", "topology.builder=RING", "progress=false"}));
}

BOOST_AUTO_TEST_CASE(same_seed_same_trace_other_seed_differs) {
  g::expect_replay(spec({"stop.time_seconds=1", "stop.stop_at_target=false", "link.duplicate=0.2",
                         "link.reorder=0.3", "link.reorder_delay_seconds=0.01"}));
}

BOOST_AUTO_TEST_SUITE_END()
