#pragma once
/// What the lock-step tests (R-FAST, SGP) compare the actors against: exact
/// full-shard gradients in double, independent of kernels/, and the relative
/// error of a float32 or float64 state against the recursion.
#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/Dense>

#include "atrain/actors/run_plan.hpp"

namespace atrain::test {

/// Full-shard logistic-regression gradient in double, independent of kernels/.
inline Eigen::VectorXd gradient(const atrain::run_plan& plan, std::size_t node,
                                const Eigen::VectorXd& w, double l2) {
  const auto& d = *plan.train;
  const auto dim = static_cast<Eigen::Index>(d.dim);
  Eigen::VectorXd g = Eigen::VectorXd::Zero(dim + 1);
  const auto& rows = plan.shard[node];
  for (auto r : rows) {
    const float* a = d.row(r);
    double m = w(dim);
    for (Eigen::Index k = 0; k < dim; ++k)
      m += w(k) * a[k];
    const double s = d.labels[r] == 1 ? 1.0 : -1.0;
    const double coef = -s / (1.0 + std::exp(s * m));
    for (Eigen::Index k = 0; k < dim; ++k)
      g(k) += coef * a[k];
    g(dim) += coef;
  }
  return g / static_cast<double>(rows.size()) + l2 * w;
}

inline double relative_error(const Eigen::VectorXd& want, const float* got) {
  double err = 0;
  for (Eigen::Index k = 0; k < want.size(); ++k)
    err = std::max(err, std::abs(want(k) - static_cast<double>(got[k])));
  return err / std::max(1e-12, want.cwiseAbs().maxCoeff());
}

inline double relative_error(const Eigen::VectorXd& want, const std::vector<double>& got) {
  double err = 0;
  for (Eigen::Index k = 0; k < want.size(); ++k)
    err = std::max(err, std::abs(want(k) - got[static_cast<std::size_t>(k)]));
  return err / std::max(1e-12, want.cwiseAbs().maxCoeff());
}

}  // namespace atrain::test
