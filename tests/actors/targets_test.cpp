/// Time to target (actors/targets.hpp): the sustained time against a brute
/// force over every start and every window after it; the target judged on
/// the evaluated model or the worst node, read back from a run's own rows.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "atrain/actors/targets.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;

namespace {

using rows_t = std::vector<std::pair<double, double>>;

/// The definition, literally: the first k >= window-1 such that for every
/// j >= k the mean of rows j-window+1..j is >= target.
std::optional<double> brute_force(const rows_t& rows, double target, std::uint32_t window) {
  for (std::size_t k = window - 1; k < rows.size(); ++k) {
    bool stays = true;
    for (std::size_t j = k; j < rows.size() && stays; ++j) {
      double sum = 0;
      for (std::size_t i = j + 1 - window; i <= j; ++i)
        sum += rows[i].second;
      stays = sum / window >= target;
    }
    if (stays)
      return rows[k].first;
  }
  return std::nullopt;
}

/// (time, accuracy) of a run's rows as `stop` judges them, recomputed here.
rows_t judged_rows(const atrain::proto::RunReport& r, bool worst) {
  rows_t out;
  for (const auto& m : r.metrics())
    out.emplace_back(m.time_seconds(), worst ? m.node_test_accuracy_min() : m.test_accuracy());
  return out;
}

std::optional<double> first_at(const rows_t& rows, double target) {
  for (const auto& [time, acc] : rows)
    if (acc >= target)
      return time;
  return std::nullopt;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(targets)

BOOST_AUTO_TEST_CASE(the_sustained_time_is_the_definitions_on_random_and_oscillating_runs) {
  // An oscillating run: its first crossing is early, it sustains only late.
  rows_t osc;
  for (int k = 0; k < 40; ++k)
    osc.emplace_back(0.1 * k, k < 30 ? (k % 2 == 0 ? 0.9 : 0.5) : 0.9);
  BOOST_TEST(first_at(osc, 0.85).value() == 0.0);
  const auto s = atrain::sustained_time(osc, 0.85, 4);
  BOOST_REQUIRE(s.has_value());
  BOOST_TEST(*s == brute_force(osc, 0.85, 4).value());
  BOOST_TEST(*s > 2.9);  // not before the oscillation ends
  std::mt19937 gen{11};
  std::uniform_real_distribution<double> acc{0.6, 1.0};
  int sustained = 0;
  for (int trial = 0; trial < 300; ++trial) {
    rows_t rows;
    const auto n = 1 + gen() % 30;
    for (std::uint32_t k = 0; k < n; ++k)
      rows.emplace_back(0.05 * k, std::min(1.0, acc(gen) + 0.01 * k));
    const std::uint32_t window = 1 + gen() % 6;
    const auto got = atrain::sustained_time(rows, 0.8, window);
    const auto want = brute_force(rows, 0.8, window);
    BOOST_TEST(got.has_value() == want.has_value());
    if (got && want)
      BOOST_TEST(*got == *want);
    sustained += got ? 1 : 0;
  }
  BOOST_TEST(sustained > 30);  // both outcomes were exercised
  BOOST_TEST(sustained < 270);
  BOOST_TEST(!atrain::sustained_time(osc, 0.85, 41).has_value());  // fewer rows than the window
}

// D-PSGD with one class per node: its nodes' own models lag its average, so
// the worst-node basis reaches a target later (or never); each time is the
// one the run's own rows give.
BOOST_AUTO_TEST_CASE(the_target_is_judged_on_the_evaluated_model_or_the_worst_node) {
  const std::vector<std::string> common = {"nodes=8",
                                           "stop.stop_at_target=false",
                                           "stop.time_seconds=2",
                                           "eval.period_seconds=0.1",
                                           "progress=false",
                                           "shard.policy=PATHOLOGICAL",
                                           "shard.classes_per_node=1",
                                           "stop.target_accuracy=0.8",
                                           "stop.sustained_evaluations=3"};
  auto run = [&](const char* basis) {
    auto sets = common;
    sets.push_back(std::string{"stop.target_basis="} + basis);
    auto r = atrain::run_experiment(t::config("algorithms/dpsgd.textproto", sets));
    BOOST_REQUIRE(r);
    BOOST_REQUIRE(r->error().empty());
    return *r;
  };
  const auto avg = run("EVALUATED_MODEL");
  const auto worst = run("WORST_NODE");
  BOOST_TEST(avg.target_basis() == "evaluated model");
  BOOST_TEST(worst.target_basis() == "worst node");
  // The same run either way (the basis only reads the rows).
  BOOST_TEST(avg.trace_hash() == worst.trace_hash());
  const auto a = first_at(judged_rows(avg, false), 0.8);
  const auto w = first_at(judged_rows(worst, true), 0.8);
  BOOST_REQUIRE(a.has_value());
  BOOST_TEST(avg.time_to_target() == *a);
  BOOST_TEST(worst.has_time_to_target() == w.has_value());
  if (w)
    BOOST_TEST(worst.time_to_target() == *w);
  BOOST_TEST((!w || *w > *a));  // the worst node lags the average
  const auto sa = brute_force(judged_rows(avg, false), 0.8, 3);
  BOOST_TEST(avg.has_sustained_time_to_target() == sa.has_value());
  if (sa)
    BOOST_TEST(avg.sustained_time_to_target() == *sa);
  BOOST_TEST_MESSAGE("dpsgd one class per node: evaluated model at "
                     << *a << " s, worst node " << (w ? std::to_string(*w) : "never")
                     << ", sustained (evaluated) " << (sa ? std::to_string(*sa) : "never"));
}

BOOST_AUTO_TEST_CASE(a_worst_node_basis_without_scored_nodes_and_an_empty_window_are_refused) {
  const auto refusal = t::quickstart_refusal;
  auto msg = refusal({"stop.target_basis=WORST_NODE", "eval.node_models=0"});
  BOOST_TEST(msg.find("stop.target_basis: WORST_NODE needs the nodes' own models scored") !=
               std::string::npos,
             msg);
  msg = refusal({"stop.sustained_evaluations=0"});
  BOOST_TEST(msg.find("stop.sustained_evaluations: = 0; must be in 1..10000") != std::string::npos,
             msg);
  BOOST_TEST(refusal({"stop.target_basis=WORST_NODE"}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
