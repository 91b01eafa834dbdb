/// R-FAST convergence on a9a logistic regression: the evaluated model's loss
/// reaches the centralized optimum within 1% (optimum by Newton's method).
#include <boost/test/unit_test.hpp>

#include "fixtures.hpp"

namespace t = atrain::test;

namespace {

double optimum() {
  static const double f = [] {
    auto plan = t::quickstart({"progress=false"});
    return t::logistic_optimum(*plan, 1e-4);
  }();
  return f;
}

double final_loss(std::vector<std::string> overrides) {
  std::vector<std::string> o{"stop.stop_at_target=false", "progress=false",
                             "eval.period_seconds=5"};
  o.insert(o.end(), overrides.begin(), overrides.end());
  auto report = atrain::run_experiment(t::quickstart(o));
  BOOST_REQUIRE(report);
  BOOST_REQUIRE(report->error().empty());
  return report->final().train_loss();
}

void expect_within_one_percent(const std::string& what, double loss) {
  const double gap = (loss - optimum()) / optimum();
  BOOST_TEST_MESSAGE(what << ": loss " << loss << ", optimum " << optimum() << ", gap " << 100 * gap
                          << "%");
  BOOST_TEST(gap < 0.01, what << ": gap " << 100 * gap << "% >= 1%");
  BOOST_TEST(gap > -1e-6, what << ": below the optimum, which is impossible");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rfast_convergence)

BOOST_AUTO_TEST_CASE(centralized_optimum_is_sane) {
  // Logistic loss at w = 0 is log 2; the optimum must be far below it.
  BOOST_TEST(optimum() > 0.25);
  BOOST_TEST(optimum() < 0.40);
}

BOOST_AUTO_TEST_CASE(exponential_graph) {
  expect_within_one_percent("exponential",
                            final_loss({"stop.time_seconds=20", "algorithm.rfast.decay=0.002"}));
}

BOOST_AUTO_TEST_CASE(ring) {
  expect_within_one_percent("ring", final_loss({"topology.builder=RING", "stop.time_seconds=20",
                                                "algorithm.rfast.decay=0.002"}));
}

BOOST_AUTO_TEST_CASE(tree_pair) {
  expect_within_one_percent(
    "tree pair",
    final_loss({"topology.builder=TREE_PAIR", "topology.arity=2", "algorithm.rfast.step_size=0.5",
                "stop.time_seconds=20", "algorithm.rfast.decay=0.002"}));
}

BOOST_AUTO_TEST_CASE(exponential_graph_with_30_percent_loss) {
  expect_within_one_percent(
    "exponential, 30% loss",
    final_loss({"link.loss=0.3", "stop.time_seconds=20", "algorithm.rfast.decay=0.002"}));
}

BOOST_AUTO_TEST_SUITE_END()
