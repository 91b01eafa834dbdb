#include "fixtures.hpp"

#include "algorithms/rfast/rfast.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

#include "source_dir.hpp"
#include <Eigen/Dense>

namespace atrain::test {

std::shared_ptr<const run_plan> config(const std::string& name,
                                       const std::vector<std::string>& overrides) {
  auto spec = load_spec(atrain::test::source_dir() + "/config/" + name, overrides);
  return prepare_run(spec);
}

std::shared_ptr<const run_plan> quickstart(const std::vector<std::string>& overrides) {
  return config("quickstart.textproto", overrides);
}

std::string config_refusal(const std::string& name, const std::vector<std::string>& overrides) {
  try {
    (void)config(name, overrides);
  } catch (const spec_error& e) {
    return e.what();
  }
  return "";
}

std::string quickstart_refusal(const std::vector<std::string>& overrides) {
  return config_refusal("quickstart.textproto", overrides);
}

double logistic_optimum(const run_plan& plan, double l2) {
  const auto& d = *plan.train;
  const auto n = static_cast<Eigen::Index>(d.size());
  const auto dim = static_cast<Eigen::Index>(d.dim);
  Eigen::MatrixXd x(n, dim + 1);
  Eigen::VectorXd s(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index k = 0; k < dim; ++k)
      x(i, k) = d.row(static_cast<std::size_t>(i))[k];
    x(i, dim) = 1.0;
    s(i) = d.labels[static_cast<std::size_t>(i)] == 1 ? 1.0 : -1.0;
  }
  auto loss = [&](const Eigen::VectorXd& w) {
    Eigen::VectorXd m = (x * w).cwiseProduct(s);
    double total = 0;
    for (Eigen::Index i = 0; i < n; ++i)
      total += m(i) > 0 ? std::log1p(std::exp(-m(i))) : -m(i) + std::log1p(std::exp(m(i)));
    return total / static_cast<double>(n) + 0.5 * l2 * w.squaredNorm();
  };
  Eigen::VectorXd w = Eigen::VectorXd::Zero(dim + 1);
  for (int it = 0; it < 50; ++it) {
    Eigen::VectorXd m = (x * w).cwiseProduct(s);
    Eigen::VectorXd p(n), h(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double sig = 1.0 / (1.0 + std::exp(m(i)));  // sigma(-m)
      p(i) = -s(i) * sig;
      h(i) = sig * (1.0 - sig);
    }
    Eigen::VectorXd grad = x.transpose() * p / static_cast<double>(n) + l2 * w;
    Eigen::MatrixXd hess = x.transpose() * h.asDiagonal() * x / static_cast<double>(n);
    hess.diagonal().array() += l2;
    Eigen::VectorXd step = hess.ldlt().solve(grad);
    double t = 1.0;
    const double f0 = loss(w);
    while (loss(w - t * step) > f0 && t > 1e-8)
      t *= 0.5;
    w -= t * step;
    if (grad.norm() < 1e-10)
      break;
  }
  return loss(w);
}

void expect_replay(const std::function<std::shared_ptr<const run_plan>(std::uint64_t)>& make) {
  auto once = [&](std::uint64_t seed) {
    auto report = run_experiment(make(seed));
    BOOST_REQUIRE(report);
    BOOST_TEST(report->error().empty(), report->error());
    return *report;
  };
  auto a = once(7), b = once(7), c = once(8);
  BOOST_TEST(a.trace_hash() == b.trace_hash());
  BOOST_TEST(a.trace_events() == b.trace_events());
  a.clear_wall_seconds();
  b.clear_wall_seconds();
  BOOST_TEST(a.SerializeAsString() == b.SerializeAsString());
  BOOST_TEST(a.trace_hash() != c.trace_hash());
  BOOST_TEST(a.final().train_loss() != c.final().train_loss());
}

/// Drives a virtual run one event at a time and checks the mass invariant
/// after every event. Returns the report.
proto::RunReport run_checking_mass(std::shared_ptr<const run_plan> plan, std::size_t& checks,
                                   double& worst) {
  auto probe = std::make_shared<run_probe>();
  run_options opts;
  opts.probe = probe;
  virtual_run run{plan, opts};
  const bool phi = plan->spec.algorithm().rfast().variant() == proto::RFast::PHI;
  while (run.step()) {
    bool all = true;
    for (const auto* tr : probe->states<atrain::rfast_tracker>())
      all = all && tr != nullptr;
    if (!all)
      continue;  // before start or during shutdown
    double phi_res = 0;
    const double res = mass_residual(probe->states<atrain::rfast_tracker>(), &phi_res);
    worst = std::max(worst, res);
    ++checks;
    if (res > 1e-10 || (phi && phi_res > 1e-10)) {
      BOOST_ERROR("mass not conserved at t=" << run.now_seconds() << ": residual " << res
                                             << ", phi residual " << phi_res);
      break;
    }
  }
  auto report = run.run();
  BOOST_REQUIRE(report);
  return *report;
}

std::vector<std::string> small_task(std::vector<std::string> extra) {
  std::vector<std::string> o{"dataset.max_train_samples=2000",
                             "dataset.max_test_samples=500",
                             "nodes=6",
                             "stop.time_seconds=0.6",
                             "stop.stop_at_target=false",
                             "eval.period_seconds=0.2",
                             "progress=false"};
  o.insert(o.end(), extra.begin(), extra.end());
  return o;
}

double bytes_per_gradient(const proto::RunReport& r) {
  double bytes = 0, grads = 0;
  for (const auto& n : r.per_node()) {
    bytes += static_cast<double>(n.bytes_sent());
    grads += static_cast<double>(n.gradients());
  }
  return bytes / grads;
}

void expect_target_over_lossy_links(const std::string& file, double loss) {
  auto report =
    run_experiment(config("algorithms/" + file, {"link.loss=" + std::to_string(loss),
                                                 "link.latency_seconds=0.001", "progress=false"}));
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->stop_reason() == "target accuracy reached");
  BOOST_TEST(report->has_time_to_target());
  BOOST_TEST(report->packets_dropped() > 0u);
  BOOST_TEST(report->packets_retransmitted() > 0u);
  BOOST_TEST_MESSAGE(file << " with " << loss << " loss: target at " << report->time_to_target()
                          << " s virtual, " << report->packets_dropped() << " dropped, "
                          << report->packets_retransmitted() << " retransmitted");
}

}  // namespace atrain::test
