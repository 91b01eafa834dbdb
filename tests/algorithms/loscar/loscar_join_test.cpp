/// LOSCAR-SGD joins (docs/RELIABILITY.md "Joining nodes"): no round waits for
/// a node absent from the start; a joiner counts from the round after the
/// one being collected at its join (the next round boundary) and starts
/// from the aggregator's average. Every mean is checked against the vectors
/// of the workers that merged it.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "algorithms/loscar/loscar.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;
using atrain::loscar_merge_record;
using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(loscar_join)

BOOST_AUTO_TEST_CASE(rounds_go_on_without_absent_workers_and_joiners_count_from_the_next_round) {
  // 10 workers planned, 8 at the start (the aggregator on node 0); 8 joins
  // at 0.2 s, 9 at 0.4 s.
  const std::vector<std::string> sets{
    "nodes=10", "algorithm.loscar.step_size=0.3", "stop.stop_at_target=false",
    "stop.time_seconds=1", "faults.join=[{node: 8 at_seconds: 0.2}, {node: 9 at_seconds: 0.4}]"};
  std::map<std::uint64_t, std::map<std::uint32_t, loscar_merge_record>> merges;  // round, node
  const auto r =
    drive("loscar.textproto", sets, [&](const atrain::run_plan&, atrain::run_probe& p) {
      harvest(p, atrain::loscar_take_merges, [&](std::uint32_t i, loscar_merge_record& m) {
        BOOST_TEST(merges[m.round].count(i) == 0u,
                   "node " << i << " merged round " << m.round << " twice");
        merges[m.round][i] = std::move(m);
      });
    });
  BOOST_TEST(r.error().empty(), r.error());
  BOOST_REQUIRE(r.faults_size() == 2);
  std::vector<std::uint64_t> join(2);
  for (int j = 0; j < 2; ++j) {
    const auto& e = r.faults(j).effect();
    BOOST_TEST(r.faults(j).kind() == "join");
    const auto at = e.find("joining round ");
    BOOST_REQUIRE(at != std::string::npos);
    join[static_cast<std::size_t>(j)] = std::stoull(e.substr(at + 14));
  }
  BOOST_TEST(join[0] < join[1]);
  const auto plan = t::config("algorithms/loscar.textproto", sets);
  const std::size_t dim = plan->dim();
  const auto kk = atrain::loscar_k(plan->spec.algorithm().loscar().sparsity(), dim);
  std::size_t complete = 0;
  double worst_mean = 0;
  for (const auto& [round, by_node] : merges) {
    // Who merged it: the 8 from the start, and each joiner from its round on.
    for (std::uint32_t j = 0; j < 2; ++j)
      BOOST_TEST(by_node.count(8 + j) == (round >= join[j] ? 1u : 0u),
                 "round " << round << ", node " << 8 + j);
    const std::size_t expect_n = 8 + (round >= join[0] ? 1 : 0) + (round >= join[1] ? 1 : 0);
    if (by_node.size() != expect_n)
      continue;  // cut by the stop
    ++complete;
    const auto& mean = by_node.begin()->second.mean;
    // The mean of the vectors of every worker that merged it, except in the
    // round each joiner was dropped from (it sent none).
    for (std::size_t j = 0; j < kk; ++j) {
      double s = 0;
      for (const auto& [i, m] : by_node) {
        BOOST_TEST((m.mean == mean), "round " << round << ": node " << i << "'s mean differs");
        s += m.y_s[j];
      }
      const double expect = s / static_cast<double>(by_node.size());
      worst_mean = std::max(worst_mean, std::abs(mean[j] - expect) / (1.0 + std::abs(expect)));
    }
  }
  BOOST_TEST(complete > 10u);  // rounds of about 70 ms over 1 s
  BOOST_TEST(worst_mean < 1e-6);
  BOOST_TEST(merges.rbegin()->first > join[1] + 5);  // rounds went on after the joins
  BOOST_TEST(r.per_node(9).gradients() > 0u);
  BOOST_TEST(r.final().test_accuracy() > 0.8);
  BOOST_TEST_MESSAGE("loscar 8 -> 10: joins in rounds " << join[0] << " and " << join[1] << "; "
                                                        << complete << " rounds complete, worst "
                                                        << "mean deviation " << worst_mean << "; "
                                                        << r.faults(0).effect());
}

BOOST_AUTO_TEST_SUITE_END()
