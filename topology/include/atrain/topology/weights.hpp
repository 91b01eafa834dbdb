#pragma once
/// Mixing weights, their checks, common roots of (G_R, G_C), bipartite split
/// and spectral gap.
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "atrain/topology/graph.hpp"

namespace atrain {

using weight_matrix = Eigen::MatrixXd;  // dense n x n; n is at most a few thousand

/// r_ij = 1/(in(i)+1) for j in in(i) and j = i (pull weights; rows sum to 1).
[[nodiscard]] weight_matrix row_stochastic(const digraph& g);
/// c_ji = 1/(out(i)+1) for j in out(i) and j = i (push weights; columns sum to 1).
[[nodiscard]] weight_matrix column_stochastic(const digraph& g);
/// Metropolis-Hastings: w_ij = 1/(1 + max(deg_i, deg_j)) on edges, w_ii = 1 - sum.
/// Requires a symmetric graph (throws topology_error otherwise).
[[nodiscard]] weight_matrix metropolis_hastings(const digraph& g);

[[nodiscard]] bool is_row_stochastic(const weight_matrix& w, double tol = 1e-12);
[[nodiscard]] bool is_column_stochastic(const weight_matrix& w, double tol = 1e-12);
[[nodiscard]] bool is_doubly_stochastic(const weight_matrix& w, double tol = 1e-12);
[[nodiscard]] bool is_symmetric(const weight_matrix& w, double tol = 1e-12);
/// Non-zero off-diagonal entries only where g has the edge (w_ij != 0 => j -> i
/// for pull/row matrices when `pull`, i -> j... see weights.cpp); negative entries refused.
[[nodiscard]] bool respects_graph(const weight_matrix& w, const digraph& g);

/// Nodes r such that r reaches every node along G_R AND every node reaches r
/// along G_C (ALGORITHMS.md §1). Ascending.
[[nodiscard]] std::vector<std::uint32_t> common_roots(const digraph& g_r, const digraph& g_c);

/// Two-colouring (true = active) when g (taken as undirected) is bipartite.
[[nodiscard]] std::optional<std::vector<bool>> bipartite_split(const digraph& g);

/// 1 - |lambda_2| where lambda_2 is the eigenvalue of second largest modulus.
[[nodiscard]] double spectral_gap(const weight_matrix& w);

/// Everything R-FAST (and the other algorithms) need about the network.
struct topology {
  digraph g_r;          // pull graph
  digraph g_c;          // push graph
  weight_matrix r;      // row-stochastic over g_r
  weight_matrix c;      // column-stochastic over g_c
  std::vector<std::uint32_t> roots;  // common roots; never empty once built
  double gap_r = 0;
  double gap_c = 0;
  bool tree = false;    // a tree pair with 0/1 weights
  std::vector<std::string> warnings;  // e.g. small spectral gap
};

/// Builds weights, roots and gaps for (g_r, g_c). Throws topology_error naming
/// the problem when the pair has no common root. A tree pair (tree = true)
/// gets 0/1 weights: a child copies its parent's model and hands all of its
/// tracker mass to its parent.
[[nodiscard]] topology make_topology(digraph g_r, digraph g_c, bool tree);

/// Graphviz: G_R edges solid, G_C edges dashed, common roots double circles.
[[nodiscard]] std::string to_dot(const topology& t);

} // namespace atrain
