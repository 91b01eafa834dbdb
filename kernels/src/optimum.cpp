// Full-batch L-BFGS on the centralized objective (atrain/kernels/optimum.hpp).
#include "atrain/kernels/optimum.hpp"

#include <cmath>
#include <deque>
#include <numeric>
#include <stdexcept>
#include <string>

#include "atrain/kernels/heterogeneity.hpp"

namespace atrain {
namespace {

using vecd = std::vector<double>;

double dot(const vecd& a, const vecd& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

/// F and its gradient at x (double), evaluated through the model's float parameters.
struct objective {
  model& m;
  const dataset& d;
  std::vector<std::uint32_t> rows;
  std::vector<float> xf;

  double operator()(const vecd& x, vecd& grad) {
    xf.assign(x.begin(), x.end());
    return mean_loss_and_gradient(m, d, rows, xf.data(), grad);
  }
};

/// The L-BFGS direction -H g from the stored pairs (two-loop recursion).
vecd direction(const vecd& g, const std::deque<vecd>& s, const std::deque<vecd>& y) {
  vecd q = g;
  std::vector<double> alpha(s.size());
  for (std::size_t k = s.size(); k-- > 0;) {
    alpha[k] = dot(s[k], q) / dot(y[k], s[k]);
    for (std::size_t j = 0; j < q.size(); ++j)
      q[j] -= alpha[k] * y[k][j];
  }
  const double gamma = s.empty() ? 1.0 : dot(s.back(), y.back()) / dot(y.back(), y.back());
  for (auto& v : q)
    v *= gamma;
  for (std::size_t k = 0; k < s.size(); ++k) {
    const double beta = dot(y[k], q) / dot(y[k], s[k]);
    for (std::size_t j = 0; j < q.size(); ++j)
      q[j] += (alpha[k] - beta) * s[k][j];
  }
  for (auto& v : q)
    v = -v;
  return q;
}

}  // namespace

optimum minimize_full_loss(model& m, const dataset& d, const std::vector<float>& x0,
                           double tolerance, std::size_t max_iterations) {
  if (d.size() == 0)
    throw std::invalid_argument("minimize_full_loss: the dataset has no rows");
  if (x0.size() != m.num_params())
    throw std::invalid_argument("minimize_full_loss: x0 has " + std::to_string(x0.size()) +
                                " values, the model " + std::to_string(m.num_params()));
  objective f{m, d, std::vector<std::uint32_t>(d.size()), {}};
  std::iota(f.rows.begin(), f.rows.end(), std::uint32_t{0});
  constexpr std::size_t memory = 10;
  vecd x(x0.begin(), x0.end()), g, x_next, g_next;
  double loss = f(x, g);
  std::deque<vecd> s, y;
  optimum out;
  for (; out.iterations < max_iterations && std::sqrt(dot(g, g)) > tolerance; ++out.iterations) {
    auto p = direction(g, s, y);
    double slope = dot(g, p);
    if (!(slope < 0)) {  // not a descent direction: restart from the gradient
      s.clear();
      y.clear();
      p = direction(g, s, y);
      slope = dot(g, p);
    }
    double step = 1.0, next = 0;
    bool accepted = false;
    for (int tries = 0; tries < 40 && !accepted; ++tries, step *= 0.5) {
      x_next = x;
      for (std::size_t j = 0; j < x.size(); ++j)
        x_next[j] += step * p[j];
      next = f(x_next, g_next);
      accepted = next <= loss + 1e-4 * step * slope;  // Armijo
    }
    if (!accepted)
      break;  // float resolution reached: no step decreases F any more
    vecd sk(x.size()), yk(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) {
      sk[j] = x_next[j] - x[j];
      yk[j] = g_next[j] - g[j];
    }
    if (dot(sk, yk) > 1e-12) {  // keep the pair only when it is curvature information
      s.push_back(std::move(sk));
      y.push_back(std::move(yk));
      if (s.size() > memory) {
        s.pop_front();
        y.pop_front();
      }
    }
    x.swap(x_next);
    g.swap(g_next);
    loss = next;
  }
  out.x.assign(x.begin(), x.end());
  out.loss = f(x, g);
  out.gradient_norm = std::sqrt(dot(g, g));
  out.converged = out.gradient_norm <= tolerance;
  return out;
}

}  // namespace atrain
