/// loscar's restart tests (split from tests/actors/restart_test.cpp: same cases, same checks).
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "algorithms/loscar/loscar.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;
using atrain::loscar_merge_record;

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(loscar_restart)

BOOST_AUTO_TEST_CASE(loscar_worker_rejoins_with_the_aggregators_average_and_every_mean_is_exact) {
  // Worker 3 dies at 0.3 s and is back 0.2 s later; the aggregator is node
  // 2. The test rebuilds the aggregator's average from the means the live
  // workers merged (A = x^0, then A[S_r] = m_r, S_r drawn here) and checks
  // every mean against the vectors its contributors sent.
  const std::uint32_t k = 3;
  const std::size_t n = 8;
  std::map<std::uint64_t, std::map<std::uint32_t, loscar_merge_record>> merges;  // round, node
  std::vector<std::uint64_t> first_round_of(n, ~std::uint64_t{0});
  caf::actor_addr first_worker;
  std::vector<float> first_x;
  bool running = false, crashed = false, replaced_merged = false;
  std::uint64_t replacement_first_round = 0;
  const auto r = drive(
    "loscar.textproto",
    // A small step (the config's tuned one reaches the target by 0.5 s): the
    // run goes on well past the restart at 0.5 s.
    {"algorithm.loscar.aggregator=2", "algorithm.loscar.step_size=0.3",
     "faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}]"},
    [&](const atrain::run_plan&, atrain::run_probe& probe) {
      harvest(probe, atrain::loscar_take_merges, [&](std::uint32_t i, loscar_merge_record& m) {
        BOOST_TEST(merges[m.round].count(i) == 0u,
                   "node " << i << " merged round " << m.round << " twice");
        if (i == k && crashed && !replaced_merged) {
          replaced_merged = true;
          replacement_first_round = m.round;
        }
        merges[m.round][i] = std::move(m);
      });
      if (k >= probe.workers.size())
        return;
      if (!running && probe.models[k] != nullptr) {
        running = true;
        first_worker = probe.workers[k];
      }
      if (running && !crashed && probe.models[k] == nullptr)
        crashed = true;
      if (crashed && first_x.empty() && probe.models[k] != nullptr) {
        BOOST_TEST((probe.workers[k] != first_worker));
        first_x = *probe.models[k];
      }
    });
  expect_target(r);
  expect_restarted(r, 0, "the aggregator's average after round ");
  const auto& effect = r.faults(0).effect();
  const auto at = effect.find("joining round ");
  BOOST_REQUIRE(at != std::string::npos);
  const std::uint64_t join = std::stoull(effect.substr(at + 14));
  const bool dropped = effect.find("dropped from round") != std::string::npos;
  BOOST_REQUIRE(join > 0u);
  BOOST_REQUIRE(!first_x.empty());
  BOOST_TEST(replacement_first_round == join);
  auto plan = t::config("algorithms/loscar.textproto", {});
  const std::size_t dim = plan->dim();
  const auto kk = atrain::loscar_k(plan->spec.algorithm().loscar().sparsity(), dim);
  // The aggregator's average when the replacement started: every round up
  // to join - 1 applied in order, from the means the live workers received.
  std::vector<float> avg = plan->x0;
  std::size_t all_n = 0;
  double worst_mean = 0, worst_sum = 0;
  for (const auto& [round, by_node] : merges) {
    const auto& mean = by_node.begin()->second.mean;
    for (const auto& [i, m] : by_node)
      BOOST_TEST((m.mean == mean), "round " << round << ": node " << i << "'s mean differs");
    const auto sample = atrain::loscar_sample(plan->spec.seed(), round, dim, kk);
    BOOST_REQUIRE(sample.size() == mean.size());
    if (round < join)
      for (std::size_t j = 0; j < kk; ++j)
        avg[sample[j]] = mean[j];
    // A mean of the vectors of every worker (all merged it), or of the
    // others in the round the restarted worker was dropped from.
    const bool exact = by_node.size() == n || (dropped && round + 1 == join);
    if (!exact)
      continue;
    if (by_node.size() == n)
      ++all_n;
    else
      BOOST_TEST(by_node.count(k) == 0u);
    for (std::size_t j = 0; j < kk; ++j) {
      double s = 0, moved = 0;
      for (const auto& [i, m] : by_node) {
        s += m.y_s[j];
        moved += static_cast<double>(m.x[sample[j]]) - static_cast<double>(m.z[sample[j]]);
      }
      const double expect = s / static_cast<double>(by_node.size());
      worst_mean = std::max(worst_mean, std::abs(mean[j] - expect) / (1.0 + std::abs(expect)));
      // Delay-corrected: the merge moves the workers' sum by n m - sum y = 0.
      worst_sum = std::max(worst_sum, std::abs(moved) / (1.0 + std::abs(s)));
    }
  }
  BOOST_TEST(std::memcmp(first_x.data(), avg.data(), sizeof(float) * dim) == 0,
             "the replacement's first model is not the aggregator's average");
  BOOST_TEST(worst_mean < 1e-6);
  BOOST_TEST(worst_sum < 1e-5);
  BOOST_TEST(all_n > 20u);
  BOOST_TEST(r.per_node(k).gradients() > 0u);
  BOOST_TEST_MESSAGE("loscar: worker 3 rejoined in round "
                     << join << (dropped ? " (dropped from the round before)" : "")
                     << " with the aggregator's average (bit for bit); " << merges.size()
                     << " rounds, " << all_n << " merged by all 8, worst mean deviation "
                     << worst_mean << ", worst corrected-merge sum " << worst_sum << "; target at "
                     << r.time_to_target() << " s; " << effect);
}
BOOST_AUTO_TEST_SUITE_END()
