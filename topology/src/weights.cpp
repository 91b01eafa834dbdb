/// Default mixing weights and their checks.
#include <algorithm>
#include <cmath>
#include <string>

#include "atrain/topology/weights.hpp"

namespace atrain {
namespace {

bool square_nonempty(const weight_matrix& w) {
  return w.rows() > 0 && w.rows() == w.cols();
}

/// No negative entry (beyond -tol) and no NaN/inf.
bool nonnegative_finite(const weight_matrix& w, double tol) {
  return w.allFinite() && (w.array() >= -tol).all();
}

bool sums_to_one(const Eigen::VectorXd& sums, double tol) {
  return ((sums.array() - 1.0).abs() <= tol).all();
}

Eigen::Index dense_size(const digraph& g, const char* what) {
  check_dense_nodes(g.size(), what);
  return static_cast<Eigen::Index>(g.size());
}

}  // namespace

void check_dense_nodes(std::size_t n, const char* what) {
  if (n > max_dense_nodes)
    throw topology_error(std::string(what) + ": " + std::to_string(n) +
                         " nodes; dense weights are made for at most " +
                         std::to_string(max_dense_nodes) + " (" +
                         std::to_string(n * n * sizeof(double) >> 20) + " MiB would be needed)");
}

weight_matrix row_stochastic(const digraph& g) {
  const auto n = dense_size(g, "row_stochastic");
  weight_matrix r = weight_matrix::Zero(n, n);
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const double share = 1.0 / static_cast<double>(g.in(i).size() + 1);
    r(i, i) = share;
    for (const std::uint32_t j : g.in(i))
      r(i, j) = share;
  }
  return r;
}

weight_matrix column_stochastic(const digraph& g) {
  const auto n = dense_size(g, "column_stochastic");
  weight_matrix c = weight_matrix::Zero(n, n);
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const double share = 1.0 / static_cast<double>(g.out(i).size() + 1);
    c(i, i) = share;
    for (const std::uint32_t j : g.out(i))
      c(j, i) = share;
  }
  return c;
}

weight_matrix metropolis_hastings(const digraph& g) {
  if (!g.is_symmetric()) {
    throw topology_error("metropolis_hastings: the graph must be symmetric (every edge with its "
                         "reverse); W would not be doubly stochastic otherwise");
  }
  const auto n = dense_size(g, "metropolis_hastings");
  weight_matrix w = weight_matrix::Zero(n, n);
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    double off_diagonal = 0;
    for (const std::uint32_t j : g.out(i)) {
      const std::size_t larger = std::max(g.out(i).size(), g.out(j).size());
      w(i, j) = 1.0 / static_cast<double>(1 + larger);
      off_diagonal += w(i, j);
    }
    w(i, i) = 1.0 - off_diagonal;
  }
  return w;
}

bool is_row_stochastic(const weight_matrix& w, double tol) {
  return square_nonempty(w) && nonnegative_finite(w, tol) && sums_to_one(w.rowwise().sum(), tol);
}

bool is_column_stochastic(const weight_matrix& w, double tol) {
  return square_nonempty(w) && nonnegative_finite(w, tol) &&
         sums_to_one(w.colwise().sum().transpose(), tol);
}

bool is_doubly_stochastic(const weight_matrix& w, double tol) {
  return is_row_stochastic(w, tol) && is_column_stochastic(w, tol);
}

bool is_symmetric(const weight_matrix& w, double tol) {
  return w.rows() == w.cols() && w.allFinite() && ((w - w.transpose()).array().abs() <= tol).all();
}

bool respects_graph(const weight_matrix& w, const digraph& g) {
  const auto n = static_cast<Eigen::Index>(g.size());
  if (w.rows() != n || w.cols() != n || !nonnegative_finite(w, 0.0))
    return false;
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) {
      if (i == j || w(i, j) == 0.0)
        continue;
      if (!g.has_edge(static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(i)))
        return false;
    }
  }
  return true;
}

}  // namespace atrain
