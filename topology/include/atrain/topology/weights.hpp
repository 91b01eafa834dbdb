#pragma once
/// Mixing weights, their checks, common roots of (G_R, G_C), bipartite split
/// and spectral gap.
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "atrain/topology/graph.hpp"

namespace atrain {

using weight_matrix = Eigen::MatrixXd;  // dense n x n; n is at most max_dense_nodes

/// The most nodes a dense weight matrix is made for (128 MiB of doubles); the
/// builders below throw topology_error beyond it. = limits::max_topology_nodes,
/// which the spec validator checks first.
inline constexpr std::size_t max_dense_nodes = 4096;
/// Throws topology_error "<what>: N nodes; dense weights ..." when n > max_dense_nodes.
void check_dense_nodes(std::size_t n, const char* what);

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
/// True when w is g.size() x g.size(), has no negative or non-finite entry, and
/// every non-zero off-diagonal w_ij (i != j) comes with the edge j -> i in g.
/// w_ij is what i takes from j, so one rule covers both matrices: R over G_R
/// (i pulls from j along j -> i) and C over G_C (c_ij: j pushes to i along
/// j -> i). The diagonal is unconstrained; an edge may carry a zero weight.
[[nodiscard]] bool respects_graph(const weight_matrix& w, const digraph& g);

/// Nodes that reach every node of g (roots of a spanning tree). Ascending; empty
/// when there is none. Linear time.
[[nodiscard]] std::vector<std::uint32_t> spanning_roots(const digraph& g);

/// Nodes r such that r reaches every node along G_R AND every node reaches r
/// along G_C (ALGORITHMS.md §1). Ascending. Throws topology_error when the two
/// graphs have different sizes.
[[nodiscard]] std::vector<std::uint32_t> common_roots(const digraph& g_r, const digraph& g_c);

/// Two-colouring (true = active) when g (taken as undirected) is bipartite;
/// the lowest-numbered node of every connected component is active.
[[nodiscard]] std::optional<std::vector<bool>> bipartite_split(const digraph& g);

/// 1 - |lambda_2| where lambda_2 is the eigenvalue of second largest modulus
/// (repeated eigenvalues count: two of modulus 1 give 0). Dense and O(n^3): the
/// spectrum is the union of those of the diagonal blocks of w (one per strongly
/// connected component of its non-zero pattern); a reversible block
/// (d_i w_ij = d_j w_ji, e.g. R or C of a symmetric graph, MH) goes through the
/// similar symmetric matrix and Eigen::SelfAdjointEigenSolver, any other through
/// Eigen::EigenSolver. Exact 1 for a tree's 0/1 matrices and for a 1 x 1 matrix.
/// At n = 1024: about 0.3 s when reversible, about 20 s for a general (directed)
/// matrix. Returns NaN without computing anything when
/// n > spectral_gap_max_nodes. Throws topology_error for an empty or non-square
/// matrix or a non-finite entry.
[[nodiscard]] double spectral_gap(const weight_matrix& w);
inline constexpr std::size_t spectral_gap_max_nodes = 2048;
/// make_topology warns when a (non-tree) gap is below this.
inline constexpr double small_spectral_gap = 0.05;

/// Everything R-FAST (and the other algorithms) need about the network.
struct topology {
  digraph g_r;                       // pull graph
  digraph g_c;                       // push graph
  weight_matrix r;                   // row-stochastic over g_r
  weight_matrix c;                   // column-stochastic over g_c
  std::vector<std::uint32_t> roots;  // common roots; never empty once built
  double gap_r = 0;                  // spectral_gap(r); NaN when n > spectral_gap_max_nodes
  double gap_c = 0;
  bool tree = false;                  // a tree pair with 0/1 weights
  std::vector<std::string> warnings;  // e.g. small spectral gap
};

/// Builds weights, roots and gaps for (g_r, g_c). Throws topology_error naming
/// the problem when the sizes differ, the graph is empty or the pair has no
/// common root. Otherwise R = row_stochastic(g_r), C = column_stochastic(g_c).
/// A tree pair (tree = true) gets 0/1 weights: a child copies its parent's
/// model and hands all of its tracker mass to its parent (r_child,parent = 1,
/// c_parent,child = 1, r_root,root = c_root,root = 1); it requires every
/// non-root node of g_r to have exactly one in-edge, the root none, and
/// g_c == g_r.reversed(). Warns when a gap is below small_spectral_gap (not
/// for trees, whose progress is paced by depth and the root rather than a gap)
/// or was not computed (n > spectral_gap_max_nodes).
[[nodiscard]] topology make_topology(digraph g_r, digraph g_c, bool tree);

/// Graphviz: G_R edges solid, G_C edges dashed, common roots double circles.
[[nodiscard]] std::string to_dot(const topology& t);

}  // namespace atrain
