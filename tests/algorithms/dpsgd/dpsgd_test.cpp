/// D-PSGD (ALGORITHMS.md §5) on the actor runtime: its mixing matrix, what
/// prepare_run refuses, lockstep rounds under duplicating and reordering
/// links, the quickstart target and replay.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>

#include "algorithms/dpsgd/dpsgd.hpp"
#include "fixtures.hpp"
#include "gossip_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

namespace {

std::vector<std::string> spec(std::vector<std::string> extra) {
  return g::with({"algorithm.dpsgd.step_size=1", "progress=false"}, std::move(extra));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dpsgd)

BOOST_AUTO_TEST_CASE(mixing_matrix_is_symmetric_doubly_stochastic_metropolis_hastings) {
  for (const char* builder : {"EXPONENTIAL", "RING", "STAR", "COMPLETE"}) {
    auto plan = t::quickstart(spec({std::string{"topology.builder="} + builder, "nodes=8"}));
    const auto& gr = plan->topo->g_r;
    const auto w = atrain::dpsgd_weights(*plan->topo);
    BOOST_TEST(atrain::is_symmetric(w));
    BOOST_TEST(atrain::is_doubly_stochastic(w));
    BOOST_TEST(atrain::respects_graph(w, gr));
    for (std::uint32_t i = 0; i < gr.size(); ++i)
      for (auto j : gr.out(i)) {
        const double deg = static_cast<double>(std::max(gr.out(i).size(), gr.out(j).size()));
        BOOST_TEST(std::abs(w(i, j) - 1.0 / (1.0 + deg)) < 1e-15);
      }
  }
}

BOOST_AUTO_TEST_CASE(a_directed_graph_is_refused_naming_topology) {
  g::expect_refused(spec({"topology.builder=DIRECTED_RING"}), {"topology", "symmetric"});
}

BOOST_AUTO_TEST_CASE(reaches_the_target_over_lossy_acknowledged_links) {
  t::expect_target_over_lossy_links("dpsgd.textproto");
}

BOOST_AUTO_TEST_CASE(rounds_stay_in_lockstep_under_duplication_reordering_and_stragglers) {
  // A node is at most one round ahead of a neighbour: gradient counts differ
  // by at most the graph's diameter (ring of 8: 4) plus one, however slow node 3.
  auto plan = t::quickstart(spec(
    {"topology.builder=RING", "stop.time_seconds=3", "stop.stop_at_target=false",
     "eval.period_seconds=1", "link.duplicate=0.3", "link.reorder=0.5",
     "link.reorder_delay_seconds=0.02", "cost.jitter=0.5", "cost.slowdown=[{node: 3 factor: 3}]"}));
  auto report = atrain::run_experiment(plan);
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->stop_reason() == "time budget spent");
  std::uint64_t lo = ~0ULL, hi = 0;
  for (const auto& n : report->per_node()) {
    lo = std::min(lo, n.gradients());
    hi = std::max(hi, n.gradients());
    BOOST_TEST(n.staleness_max() == 0.0);
  }
  BOOST_TEST_MESSAGE("gradients per node in [" << lo << ", " << hi << "]");
  BOOST_TEST(lo > 50u);  // the straggler paces everyone: ~3 s / 30 ms
  BOOST_TEST(hi - lo <= 5u);
  BOOST_TEST(hi < 3.0 / 0.01 / 2);  // nobody ran at its own pace
  BOOST_TEST(std::isfinite(report->final().train_loss()));
}

namespace {

/// Gradients per node after 2 virtual s of lockstep rounds (no jitter, ring
/// of 8) with link latency `latency` and `order`.
std::vector<std::uint64_t> gradients_in_2s(double latency, const std::string& order) {
  auto plan = t::quickstart(
    spec({"topology.builder=RING", "stop.time_seconds=2", "stop.stop_at_target=false",
          "eval.period_seconds=1", "cost.tau_seconds=0.01", "cost.jitter=0",
          "link.latency_seconds=" + std::to_string(latency), "algorithm.dpsgd.order=" + order}));
  auto report = atrain::run_experiment(plan);
  BOOST_REQUIRE(report);
  BOOST_REQUIRE_MESSAGE(report->error().empty(), report->error());
  std::vector<std::uint64_t> out;
  for (const auto& n : report->per_node())
    out.push_back(n.gradients());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(
  a_round_costs_the_larger_of_compute_and_latency_with_overlap_their_sum_without) {
  // Round k starts at k R and its gradient is done tau later, so 2 s hold
  // floor((2 - tau) / R) + 1 gradients; R = max(tau, latency) with OVERLAP
  // (Lian et al.), tau + latency with SEND_AFTER_GRADIENT.
  const double tau = 0.01;
  for (const double latency : {0.004, 0.02}) {
    for (const bool overlap : {true, false}) {
      const double round = overlap ? std::max(tau, latency) : tau + latency;
      const double want = std::floor((2 - tau) / round + 1e-9) + 1;
      const auto got = gradients_in_2s(latency, overlap ? "OVERLAP" : "SEND_AFTER_GRADIENT");
      BOOST_TEST_CONTEXT("latency " << latency << (overlap ? " OVERLAP" : " SEND_AFTER_GRADIENT")) {
        for (const auto n : got)
          BOOST_TEST(std::abs(static_cast<double>(n) - want) <= 1.0);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_order_is_refused_naming_the_field) {
  g::expect_refused(spec({"algorithm.dpsgd.order=7"}), {"algorithm.dpsgd.order"});
}

BOOST_AUTO_TEST_CASE(malformed_packets_are_rejected_and_counted_never_applied) {
  g::expect_malformed_rejected(
    t::quickstart(spec({"stop.time_seconds=0.5", "stop.stop_at_target=false"})),
    atrain::dpsgd_model, atrain::dpsgd_model, 1000000);
}

BOOST_AUTO_TEST_CASE(reaches_the_quickstart_target_with_its_config) {
  g::expect_target("dpsgd", t::config("algorithms/dpsgd.textproto", {"progress=false"}));
}

BOOST_AUTO_TEST_CASE(reaches_the_target_on_the_real_clock) {
  g::expect_target_real(
    t::config("quickstart_real.textproto", {"algorithm.dpsgd.step_size=1", "progress=false"}));
}

BOOST_AUTO_TEST_CASE(same_seed_same_trace_other_seed_differs) {
  g::expect_replay(spec({"stop.time_seconds=1", "stop.stop_at_target=false", "link.duplicate=0.2",
                         "link.reorder=0.3", "link.reorder_delay_seconds=0.01"}));
}

BOOST_AUTO_TEST_SUITE_END()
