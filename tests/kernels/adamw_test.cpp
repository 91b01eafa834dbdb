// AdamW's step against an independent double-precision loop written from the
// paper's algorithm (bias-corrected moments, decoupled weight decay), and
// against its closed form on the first step.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "atrain/kernels/adamw.hpp"
#include "atrain/kernels/rng.hpp"

using namespace atrain;

BOOST_AUTO_TEST_SUITE(adamw)

BOOST_AUTO_TEST_CASE(fifty_steps_follow_a_double_precision_reference) {
  const std::size_t n = 257;
  adamw_params p;
  p.lr = 0.01;
  p.weight_decay = 0.1;
  rng gen{7};
  std::vector<float> x(n), m(n, 0.0F), v(n, 0.0F), g(n);
  for (auto& e : x)
    e = static_cast<float>(gen.uniform(-1, 1));
  std::vector<double> rx(x.begin(), x.end()), rm(n, 0.0), rv(n, 0.0);
  double worst = 0;
  for (std::uint64_t t = 1; t <= 50; ++t) {
    for (auto& e : g)
      e = static_cast<float>(gen.uniform(-3, 3));
    adamw_step(x.data(), g.data(), m.data(), v.data(), n, t, p);
    for (std::size_t k = 0; k < n; ++k) {
      const double gk = g[k];
      rx[k] -= p.lr * p.weight_decay * rx[k];
      rm[k] = p.beta1 * rm[k] + (1 - p.beta1) * gk;
      rv[k] = p.beta2 * rv[k] + (1 - p.beta2) * gk * gk;
      const double mhat = rm[k] / (1 - std::pow(p.beta1, static_cast<double>(t)));
      const double vhat = rv[k] / (1 - std::pow(p.beta2, static_cast<double>(t)));
      rx[k] -= p.lr * mhat / (std::sqrt(vhat) + p.epsilon);
      worst = std::max(worst, std::abs(x[k] - rx[k]) / (1 + std::abs(rx[k])));
    }
  }
  BOOST_TEST(worst < 1e-5);
}

BOOST_AUTO_TEST_CASE(the_first_step_moves_each_value_by_lr_against_its_gradients_sign) {
  // m/(1-b1) = g and sqrt(v/(1-b2)) = |g| on step 1: x1 = x0 (1 - lr wd) - lr g / (|g| + eps).
  adamw_params p;
  p.lr = 0.05;
  p.weight_decay = 0;
  std::vector<float> x{1, -2, 0.5F, 3}, g{4, -0.25F, 1e-3F, -7}, m(4, 0.0F), v(4, 0.0F);
  const auto x0 = x;
  adamw_step(x.data(), g.data(), m.data(), v.data(), x.size(), 1, p);
  for (std::size_t k = 0; k < x.size(); ++k)
    BOOST_TEST(x[k] == x0[k] - (g[k] > 0 ? 1 : -1) * 0.05F, boost::test_tools::tolerance(1e-4F));
}

BOOST_AUTO_TEST_SUITE_END()
