/// Node-level metrics (issue 17): each evaluation scores the nodes' own
/// models; checked against a plain loop over the rows (accuracy, logistic
/// loss) and a hand-picked set of nodes.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "atrain/actors/node_scores.hpp"

namespace {

using atrain::model_snapshot;

/// Labels by the sign of the first feature: w = (5, 0), b = 0 is right
/// everywhere, its negation wrong everywhere.
atrain::dataset sign_data(std::size_t rows, unsigned seed) {
  atrain::dataset d;
  d.dim = 2;
  d.classes = 2;
  std::mt19937 gen{seed};
  std::uniform_real_distribution<float> u{-1, 1};
  for (std::size_t i = 0; i < rows; ++i) {
    const float a = u(gen);
    d.features.push_back(a);
    d.features.push_back(u(gen));
    d.labels.push_back(a > 0 ? 1 : 0);
  }
  return d;
}

double plain_accuracy(const atrain::dataset& d, const std::vector<double>& p) {
  std::size_t right = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const double z = p[0] * d.row(i)[0] + p[1] * d.row(i)[1] + p[2];
    right += (z > 0) == (d.labels[i] == 1);
  }
  return static_cast<double>(right) / static_cast<double>(d.size());
}

double plain_loss(const atrain::dataset& d, const std::vector<double>& p) {
  double sum = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const double z = p[0] * d.row(i)[0] + p[1] * d.row(i)[1] + p[2];
    const double y = d.labels[i] == 1 ? 1 : -1;
    sum += std::log1p(std::exp(-y * z));
  }
  return sum / static_cast<double>(d.size());
}

model_snapshot node(std::uint32_t id, std::vector<float> params, double weight = 1) {
  model_snapshot s;
  s.node = id;
  s.params = atrain::float_blob{std::move(params)};
  s.weight = weight;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(node_scores)

BOOST_AUTO_TEST_CASE(scored_nodes_are_all_or_evenly_spaced) {
  using v = std::vector<std::size_t>;
  BOOST_TEST(atrain::scored_positions(10, 4) == (v{0, 3, 6, 9}));
  BOOST_TEST(atrain::scored_positions(3, 8) == (v{0, 1, 2}));
  BOOST_TEST(atrain::scored_positions(7, 7) == (v{0, 1, 2, 3, 4, 5, 6}));
  BOOST_TEST(atrain::scored_positions(5, 1) == (v{0}));
  BOOST_TEST(atrain::scored_positions(1024, 2) == (v{0, 1023}));
  BOOST_TEST(atrain::scored_positions(0, 8).empty());
  BOOST_TEST(atrain::scored_positions(16, 0).empty());
}

BOOST_AUTO_TEST_CASE(figures_match_a_plain_computation) {
  const auto test = sign_data(200, 1);
  const auto train = sign_data(150, 2);
  auto m = atrain::make_logistic_regression(2, 0.0);
  const std::vector<std::vector<double>> p{{5, 0, 0}, {-5, 0, 0}, {1, 2, -0.3}, {0.5, -1, 0.1}};
  std::vector<model_snapshot> alive{node(0, {5, 0, 0}), node(2, {-5, 0, 0}),
                                    node(3, {2, 4, -0.6f}, 2.0),  // push-sum: p[2] at w = 2
                                    node(6, {0.5f, -1, 0.1f})};
  atrain::metric_sample row;
  atrain::score_nodes(*m, test, train, alive, 8, row);
  double mean = 0, least = 2, worst_loss = 0;
  std::uint32_t worst = 99;
  for (std::size_t k = 0; k < p.size(); ++k) {
    const double a = plain_accuracy(test, p[k]);
    mean += a / static_cast<double>(p.size());
    if (a < least) {
      least = a;
      worst = alive[k].node;
    }
    worst_loss = std::max(worst_loss, plain_loss(train, p[k]));
  }
  const auto tol = boost::test_tools::tolerance(1e-5);
  BOOST_TEST(row.nodes_evaluated == 4u);
  BOOST_TEST(row.node_test_accuracy_mean == mean, tol);
  BOOST_TEST(row.node_test_accuracy_min == least, tol);
  BOOST_TEST(row.node_train_loss_max == worst_loss, tol);
  BOOST_TEST(row.worst_node == worst);
  BOOST_TEST(worst == 2u);  // the negated model is wrong everywhere
  BOOST_TEST(least == 0.0);

  // Two of the four: positions 0 and 3 (nodes 0 and 6).
  atrain::metric_sample two;
  atrain::score_nodes(*m, test, train, alive, 2, two);
  BOOST_TEST(two.nodes_evaluated == 2u);
  BOOST_TEST(two.node_test_accuracy_mean ==
               (plain_accuracy(test, p[0]) + plain_accuracy(test, p[3])) / 2,
             tol);
  BOOST_TEST(two.worst_node == 6u);

  // None asked: the row says so and keeps zeros.
  atrain::metric_sample none;
  atrain::score_nodes(*m, test, train, alive, 0, none);
  BOOST_TEST(none.nodes_evaluated == 0u);
  BOOST_TEST(none.node_test_accuracy_mean == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
