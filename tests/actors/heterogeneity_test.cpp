/// Heterogeneous data without a changed objective (docs/ALGORITHMS.md "Shards"): with
/// equal-size label-skewed shards (1/n) sum f_i is the centralized F, so Ring-AllReduce and
/// DASGD end at the same train loss as on iid shards, within the seed-to-seed noise; the
/// unequal-size split changes the objective and ends measurably elsewhere.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "fixtures.hpp"

namespace t = atrain::test;

namespace {

struct spread {
  double mean = 0;
  double sd = 0;  // sample standard deviation over the seeds
};

/// Train loss of config/algorithms/FILE at 16 nodes over the second half of a 4 s virtual
/// run, one per seed; also checks the report's data split (sizes, ζ² at x0).
spread final_loss(const std::string& file, const std::string& step,
                  const std::vector<std::string>& shard, bool equal) {
  std::vector<double> loss;
  for (const char* seed : {"1", "2", "3"}) {
    std::vector<std::string> o = {"nodes=16",
                                  std::string{"seed="} + seed,
                                  step,
                                  "stop.stop_at_target=false",
                                  "stop.time_seconds=4",
                                  "eval.period_seconds=0.25",
                                  "progress=false"};
    o.insert(o.end(), shard.begin(), shard.end());
    const auto plan = t::config("algorithms/" + file, o);
    const auto report = atrain::run_experiment(plan);
    BOOST_REQUIRE(report);
    BOOST_REQUIRE(report->error().empty());
    const auto& split = report->data_split();
    BOOST_REQUIRE(split.shard_rows_size() == 16);
    const auto [lo, hi] = std::minmax_element(split.shard_rows().begin(), split.shard_rows().end());
    BOOST_TEST((*hi - *lo <= 1) == equal,
               file << " " << shard[0] << ": rows " << *lo << ".." << *hi);
    BOOST_TEST(split.zeta2_x0() > 0);
    // The iterate's own noise averaged out: the mean train loss over the second half.
    double sum = 0;
    int rows = 0;
    for (const auto& row : report->metrics())
      if (row.time_seconds() >= 2.0) {
        sum += row.train_loss();
        ++rows;
      }
    BOOST_REQUIRE(rows >= 8);
    loss.push_back(sum / rows);
  }
  spread s;
  s.mean = std::accumulate(loss.begin(), loss.end(), 0.0) / loss.size();
  for (double l : loss)
    s.sd += (l - s.mean) * (l - s.mean) / (loss.size() - 1);
  s.sd = std::sqrt(s.sd);
  return s;
}

/// "Within noise": 3 standard errors of the difference of two 3-seed means.
double noise(const spread& a, const spread& b) {
  return 3 * std::sqrt((a.sd * a.sd + b.sd * b.sd) / 3);
}

void expect_same_objective(const std::string& file, const std::string& step) {
  const std::vector<std::string> iid = {"shard.policy=IID"};
  const std::vector<std::string> skew = {"shard.policy=LABEL_SKEW", "shard.dirichlet_alpha=0.1"};
  const std::vector<std::string> unequal = {"shard.policy=LABEL_SKEW_UNEQUAL",
                                            "shard.dirichlet_alpha=0.1"};
  const auto a = final_loss(file, step, iid, true);
  const auto b = final_loss(file, step, skew, true);
  const auto c = final_loss(file, step, unequal, false);
  BOOST_TEST_MESSAGE(file << ": train loss over 2-4 s, iid " << a.mean << " ± " << a.sd
                          << ", LABEL_SKEW " << b.mean << " ± " << b.sd << ", LABEL_SKEW_UNEQUAL "
                          << c.mean << " ± " << c.sd << "; noise band " << noise(a, b));
  BOOST_TEST(std::abs(b.mean - a.mean) <= noise(a, b), file << ": equal-size skew vs iid");
  // The same band, from the runs of the one objective, must not hold the unequal split.
  BOOST_TEST(std::abs(c.mean - a.mean) > noise(a, b), file << ": unequal skew vs iid");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(heterogeneous_data)

BOOST_AUTO_TEST_CASE(allreduce_reaches_the_iid_loss_on_equal_size_skew) {
  expect_same_objective("allreduce.textproto", "algorithm.allreduce.step_size=2");
}

BOOST_AUTO_TEST_CASE(dasgd_reaches_the_iid_loss_on_equal_size_skew) {
  expect_same_objective("dasgd.textproto", "algorithm.dasgd.step_size=0.1");
}

BOOST_AUTO_TEST_CASE(what_the_data_makes_impossible_is_refused_naming_the_field) {
  const auto refusal = t::quickstart_refusal;
  // a9a has 2 classes.
  auto msg = refusal({"shard={policy: PATHOLOGICAL classes_per_node: 3}"});
  BOOST_TEST(msg.find("shard.classes_per_node: must be <= the dataset's 2 classes (got 3)") !=
               std::string::npos,
             msg);
  msg = refusal({"shard={policy: FEATURE_SKEW clusters: 50}", "dataset.max_train_samples=40"});
  BOOST_TEST(msg.find("shard.clusters: 50 clusters but only 40 training rows") != std::string::npos,
             msg);
  BOOST_TEST(refusal({"shard={policy: PATHOLOGICAL classes_per_node: 2}"}).empty());
}

// Node-level truth: Ring-AllReduce's nodes at rest all hold the evaluated
// model, so their own figures are its figures; under the hardest split (PATHOLOGICAL,
// one class per node) D-PSGD's nodes disagree, and the worst node is below
// the mean, which stays below the best-possible 1.
BOOST_AUTO_TEST_CASE(node_figures_are_the_nodes_own_models) {
  const std::vector<std::string> common = {"nodes=8",
                                           "stop.stop_at_target=false",
                                           "stop.time_seconds=1",
                                           "eval.period_seconds=0.25",
                                           "progress=false",
                                           "eval.node_models=8"};
  auto ring = common;
  ring.push_back("dataset.max_train_samples=4000");
  const auto r = atrain::run_experiment(t::config("algorithms/allreduce.textproto", ring));
  BOOST_REQUIRE(r);
  BOOST_REQUIRE(r->metrics_size() >= 4);
  // A row taken mid-step (some nodes have descended, some not: consensus
  // error > 0) holds two models; at rest every node holds the evaluated one.
  int at_rest = 0;
  for (const auto& row : r->metrics()) {
    BOOST_TEST(row.nodes_evaluated() == 8u);
    BOOST_TEST(row.node_test_accuracy_min() <= row.node_test_accuracy_mean() + 1e-12);  // sum order
    if (row.consensus_error() != 0)
      continue;
    ++at_rest;
    BOOST_TEST(row.node_test_accuracy_mean() == row.test_accuracy(),
               boost::test_tools::tolerance(1e-12));
    BOOST_TEST(row.node_test_accuracy_min() == row.test_accuracy(),
               boost::test_tools::tolerance(1e-12));
    BOOST_TEST(row.node_train_loss_max() == row.train_loss(), boost::test_tools::tolerance(1e-12));
  }
  BOOST_TEST(at_rest >= 2);
  auto gossip = common;
  gossip.insert(gossip.end(), {"shard.policy=PATHOLOGICAL", "shard.classes_per_node=1"});
  const auto d = atrain::run_experiment(t::config("algorithms/dpsgd.textproto", gossip));
  BOOST_REQUIRE(d);
  BOOST_REQUIRE(d->error().empty());
  bool apart = false;
  for (const auto& row : d->metrics()) {
    BOOST_TEST(row.nodes_evaluated() == 8u);
    BOOST_TEST(row.node_test_accuracy_min() <= row.node_test_accuracy_mean() + 1e-12);  // sum order
    BOOST_TEST(row.worst_node() < 8u);
    apart = apart || row.node_test_accuracy_min() < row.node_test_accuracy_mean() - 0.01;
  }
  BOOST_TEST(apart);
  // Off: no node scored, the fields stay zero.
  auto off = common;
  off.back() = "eval.node_models=0";
  const auto z = atrain::run_experiment(t::config("algorithms/allreduce.textproto", off));
  BOOST_REQUIRE(z);
  for (const auto& row : z->metrics())
    BOOST_TEST(row.nodes_evaluated() == 0u);
  BOOST_TEST_MESSAGE("dpsgd PATHOLOGICAL k=1 final: evaluated "
                     << d->final().test_accuracy() << ", nodes mean "
                     << d->final().node_test_accuracy_mean() << ", worst node "
                     << d->final().worst_node() << " at " << d->final().node_test_accuracy_min());
}

// zeta^2 where the run ended and at the centralized optimum: a run stopped
// before its first gradient ends at x0 (zeta2_final is zeta2_x0); a long
// Ring-AllReduce run on equal-size skew ends near x* (L-BFGS, whose gradient
// there is ~0), so its zeta^2 approaches zeta^2(x*), far above iid's.
BOOST_AUTO_TEST_CASE(zeta2_at_the_stop_and_at_the_optimum) {
  const std::vector<std::string> skew = {"nodes=16", "shard.policy=LABEL_SKEW",
                                         "shard.dirichlet_alpha=0.1", "stop.stop_at_target=false",
                                         "progress=false"};
  auto still = skew;
  still.insert(still.end(), {"stop.time_seconds=0.005", "eval.period_seconds=0.005"});
  const auto r0 = atrain::run_experiment(t::config("algorithms/allreduce.textproto", still));
  BOOST_REQUIRE(r0);
  BOOST_REQUIRE(r0->messages_sent() == 0u);  // the first gradients are not done: no step
  BOOST_REQUIRE(r0->data_split().has_zeta2_final());
  BOOST_TEST(r0->data_split().zeta2_final() == r0->data_split().zeta2_x0());

  auto ran = skew;
  ran.insert(ran.end(), {"stop.time_seconds=20", "eval.period_seconds=1",
                         "algorithm.allreduce.step_size=2", "algorithm.allreduce.decay=0.001"});
  const auto plan = t::config("algorithms/allreduce.textproto", ran);
  const auto r = atrain::run_experiment(plan);
  BOOST_REQUIRE(r);
  auto split = r->data_split();
  BOOST_REQUIRE(atrain::add_optimum_heterogeneity(*plan, split));
  BOOST_TEST(split.optimum_gradient_norm() <= 1e-5);
  BOOST_TEST(split.optimum_loss() <= r->final().train_loss() + 1e-6);  // x* is the minimum
  auto iid_split = split;
  const auto iid = t::config("algorithms/allreduce.textproto", {"nodes=16", "progress=false"});
  BOOST_REQUIRE(atrain::add_optimum_heterogeneity(*iid, iid_split));
  BOOST_TEST_MESSAGE("LABEL_SKEW 0.1, 16 nodes: zeta2 at x0 "
                     << split.zeta2_x0() << ", at the stop " << split.zeta2_final() << ", at x* "
                     << split.zeta2_optimum() << " (F " << split.optimum_loss() << "); iid at x* "
                     << iid_split.zeta2_optimum());
  BOOST_TEST(std::abs(split.zeta2_final() - split.zeta2_optimum()) <= 0.25 * split.zeta2_optimum());
  BOOST_TEST(split.zeta2_optimum() > 20 * iid_split.zeta2_optimum());
  // A non-convex model has no x* to report.
  auto mlp_split = split;
  const auto mlp = t::config("algorithms/allreduce.textproto",
                             {"model.mlp={hidden: [8] l2: 1e-4}", "progress=false"});
  BOOST_TEST(!atrain::add_optimum_heterogeneity(*mlp, mlp_split));
}

BOOST_AUTO_TEST_SUITE_END()
