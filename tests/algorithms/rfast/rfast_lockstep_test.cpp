/// Lock-step check (ALGORITHMS.md §1 invariants): with equal compute times,
/// no jitter and a link latency L < tau, every node wakes at k*tau and sees
/// exactly the packets of round k-1. The actor run must then equal the
/// matrix recursion, computed here in double with the test's own gradients:
///   y^k = z^{k-1} + g(x^{k-1}) - g(x^{k-2})          (correction)
///   v^k = x^{k-1} - gamma diag(C) y^k                 (push keeps c_ii, descent)
///   x^k = diag(R) v^k + offdiag(R) v^{k-1}            (pull: neighbours one round old)
///   z^k = diag(C) y^k + offdiag(C) y^{k-1}            (robust sum of the last push)
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "algorithms/rfast/rfast.hpp"
#include "fixtures.hpp"
#include "lockstep_fixtures.hpp"

namespace t = atrain::test;
using t::gradient;
using t::relative_error;

BOOST_AUTO_TEST_SUITE(rfast_lockstep)

BOOST_AUTO_TEST_CASE(actor_run_equals_the_matrix_recursion) {
  const double tau = 0.01, gamma = 2.0, l2 = 1e-4;
  const int rounds = 30;
  // Batch = shard: the minibatch gradient is the full-shard gradient.
  auto plan =
    t::quickstart({"nodes=4", "topology.builder=RING", "dataset.max_train_samples=400",
                   "dataset.max_test_samples=200", "model.batch_size=100", "cost.tau_seconds=0.01",
                   "cost.jitter=0", "link.latency_seconds=0.001", "algorithm.rfast.variant=PLAIN",
                   "algorithm.rfast.step_size=2", "algorithm.rfast.decay=0", "stop.time_seconds=1",
                   "stop.stop_at_target=false", "eval.period_seconds=1", "progress=false"});
  BOOST_REQUIRE(plan->shard[0].size() == 100u);
  const auto& topo = *plan->topo;
  const std::size_t n = plan->nodes();
  const auto d = static_cast<Eigen::Index>(plan->dim());

  // ---- the recursion
  std::vector<Eigen::VectorXd> x(n, Eigen::VectorXd::Zero(d)), z(n), g_prev(n),
    v_prev(n, Eigen::VectorXd::Zero(d)), y_prev(n, Eigen::VectorXd::Zero(d));
  for (std::size_t i = 0; i < n; ++i) {
    for (Eigen::Index k = 0; k < d; ++k)
      x[i](k) = plan->x0[static_cast<std::size_t>(k)];
    v_prev[i] = x[i];
    g_prev[i] = gradient(*plan, i, x[i], l2);
    z[i] = g_prev[i];
  }
  for (int k = 1; k <= rounds; ++k) {
    std::vector<Eigen::VectorXd> y(n), v(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto g = gradient(*plan, i, x[i], l2);
      y[i] = z[i] + g - g_prev[i];
      g_prev[i] = g;
      v[i] = x[i] - gamma * topo.c(i, i) * y[i];
    }
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = topo.r(i, i) * v[i];
      for (auto j : topo.g_r.in(static_cast<std::uint32_t>(i)))
        x[i] += topo.r(i, j) * v_prev[j];
      z[i] = topo.c(i, i) * y[i];
      for (auto j : topo.g_c.in(static_cast<std::uint32_t>(i)))
        z[i] += topo.c(i, j) * y_prev[j];
    }
    v_prev = v;
    y_prev = y;
  }

  // ---- the actors, stopped after round `rounds` (before its packets land)
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  atrain::virtual_run run{plan, opts};
  while (run.now_seconds() < rounds * tau + 0.0005 && run.step()) {
  }
  double worst_x = 0, worst_z = 0;
  for (std::size_t i = 0; i < n; ++i) {
    BOOST_REQUIRE(probe->models[i] != nullptr);
    BOOST_REQUIRE(probe->states<atrain::rfast_tracker>()[i] != nullptr);
    worst_x = std::max(worst_x, relative_error(x[i], probe->models[i]->data()));
    worst_z =
      std::max(worst_z, relative_error(z[i], probe->states<atrain::rfast_tracker>()[i]->z()));
  }
  BOOST_TEST_MESSAGE("after " << rounds << " rounds: x error " << worst_x << ", z error " << worst_z
                              << " (relative, float32 kernels vs float64)");
  // Float32 gradients and models against a float64 recursion: ~1e-6 expected;
  // a wrong weight, a missing round of delay or a skipped step gives >> 1e-2.
  BOOST_TEST(worst_x < 1e-4);
  BOOST_TEST(worst_z < 1e-4);
  // The run has moved away from x^0: the comparison is not trivially of zeros.
  BOOST_TEST(x[0].norm() > 1e-2);
}

BOOST_AUTO_TEST_SUITE_END()
