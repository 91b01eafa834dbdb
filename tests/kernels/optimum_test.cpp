// minimize_full_loss against Newton's method on the same logistic objective, written
// here in Eigen (double), and its refusals.
#include <boost/test/unit_test.hpp>

#include <Eigen/Dense>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "atrain/kernels.hpp"

using namespace atrain;

namespace {

/// Two overlapping Gaussian classes in `dim` features (not separable: a finite optimum).
dataset noisy_classes(std::size_t rows, std::size_t dim, std::uint64_t seed) {
  dataset d;
  d.dim = dim;
  d.classes = 2;
  auto gen = rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  for (std::size_t i = 0; i < rows; ++i) {
    const int y = static_cast<int>(i % 2);
    d.labels.push_back(y);
    for (std::size_t k = 0; k < dim; ++k)
      d.features.push_back(noise(gen) + (y == 1 ? 0.4f : -0.4f) * static_cast<float>(k % 3));
  }
  return d;
}

/// Newton's method on mean log(1 + exp(-s (w.x + b))) + l2/2 |(w, b)|^2 (the model's
/// documented objective): the minimizer, in double.
Eigen::VectorXd newton(const dataset& d, double l2) {
  const auto n = static_cast<Eigen::Index>(d.size()), p = static_cast<Eigen::Index>(d.dim + 1);
  Eigen::MatrixXd a(n, p);
  Eigen::VectorXd s(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index k = 0; k + 1 < p; ++k)
      a(i, k) = d.row(static_cast<std::size_t>(i))[k];
    a(i, p - 1) = 1;
    s(i) = d.labels[static_cast<std::size_t>(i)] == 1 ? 1 : -1;
  }
  Eigen::VectorXd w = Eigen::VectorXd::Zero(p);
  for (int it = 0; it < 30; ++it) {
    Eigen::VectorXd g = l2 * w;
    Eigen::MatrixXd h = l2 * Eigen::MatrixXd::Identity(p, p);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double sig = 1 / (1 + std::exp(s(i) * a.row(i).dot(w)));  // sigma(-margin)
      g -= s(i) * sig * a.row(i).transpose() / static_cast<double>(n);
      h += sig * (1 - sig) * a.row(i).transpose() * a.row(i) / static_cast<double>(n);
    }
    w -= h.ldlt().solve(g);
  }
  return w;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(optimum_search)

BOOST_AUTO_TEST_CASE(lbfgs_finds_newtons_minimizer_of_the_logistic_objective) {
  const dataset d = noisy_classes(3000, 12, 5);
  const double l2 = 1e-4;
  auto lr = make_logistic_regression(d.dim, l2);
  const auto got = minimize_full_loss(*lr, d, std::vector<float>(lr->num_params(), 0.0f));
  const auto want = newton(d, l2);
  BOOST_TEST_MESSAGE("L-BFGS: " << got.iterations << " iterations, |grad F| " << got.gradient_norm
                                << ", F " << got.loss);
  BOOST_TEST(got.converged);
  BOOST_TEST(got.gradient_norm <= 1e-5);
  double dist = 0;
  for (std::size_t j = 0; j < got.x.size(); ++j)
    dist = std::max(dist, std::abs(got.x[j] - want(static_cast<Eigen::Index>(j))));
  BOOST_TEST(dist < 1e-3);
  // The loss the model computes at Newton's point is no lower than at ours.
  std::vector<float> wf(want.data(), want.data() + want.size());
  BOOST_TEST(got.loss <= lr->loss(whole(d), wf.data()) + 1e-7);
}

BOOST_AUTO_TEST_CASE(softmax_regression_reaches_a_stationary_point_where_zeta2_is_gradients) {
  // At the optimum grad F = 0, so zeta^2 = (1/n) sum_i |grad f_i|^2 exactly.
  const dataset d = noisy_classes(2000, 6, 9);
  auto sm = make_mlp(d.dim, {}, 2, 1e-3);
  const auto got = minimize_full_loss(*sm, d, std::vector<float>(sm->num_params(), 0.0f));
  BOOST_TEST(got.gradient_norm <= 1e-5);
  shards halves(2);
  for (std::uint32_t i = 0; i < d.size(); ++i)
    halves[i < d.size() / 2 ? 0 : 1].push_back(i);
  const auto h = measure_heterogeneity(*sm, d, halves, got.x.data(), 0);
  double direct = 0;
  for (const auto& rows : halves) {
    std::vector<double> g;
    (void)mean_loss_and_gradient(*sm, d, rows, got.x.data(), g);
    for (const double v : g)
      direct += v * v / 2;
  }
  BOOST_TEST(h.zeta2 == direct, boost::test_tools::tolerance(1e-3));
}

BOOST_AUTO_TEST_CASE(refuses_an_empty_dataset_and_a_wrong_start) {
  dataset empty;
  empty.dim = 3;
  empty.classes = 2;
  auto lr = make_logistic_regression(3, 1e-4);
  BOOST_CHECK_THROW((void)minimize_full_loss(*lr, empty, std::vector<float>(4)),
                    std::invalid_argument);
  const dataset d = noisy_classes(10, 3, 1);
  BOOST_CHECK_THROW((void)minimize_full_loss(*lr, d, std::vector<float>(3)), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
