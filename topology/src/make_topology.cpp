/// make_topology: validation of a (G_R, G_C) pair, weights, roots, gaps, warnings.
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "atrain/topology/weights.hpp"

namespace atrain {
namespace {

/// "{0, 1, 2}"; long sets are cut after `shown` nodes so an error stays readable.
std::string format_nodes(const std::vector<std::uint32_t>& nodes, std::size_t shown = 32) {
  std::string s = "{";
  for (std::size_t k = 0; k < nodes.size() && k < shown; ++k) {
    if (k > 0)
      s += ", ";
    s += std::to_string(nodes[k]);
  }
  if (nodes.size() > shown)
    s += ", ... (" + std::to_string(nodes.size()) + " nodes)";
  return s + "}";
}

std::string format_number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", x);
  return buffer;
}

void check_pair_sizes(const digraph& g_r, const digraph& g_c) {
  if (g_r.size() != g_c.size()) {
    throw topology_error("make_topology: G_R has " + std::to_string(g_r.size()) +
                         " nodes but G_C has " + std::to_string(g_c.size()));
  }
  if (g_r.size() == 0)
    throw topology_error("make_topology: the graphs have no nodes");
}

[[noreturn]] void throw_no_common_root(const digraph& g_r, const digraph& g_c) {
  throw topology_error(
    "make_topology: G_R and G_C share no common root (a node that reaches every node along "
    "G_R and that every node reaches along G_C): nodes reaching all along G_R: " +
    format_nodes(spanning_roots(g_r)) +
    "; nodes reached by all along G_C: " + format_nodes(spanning_roots(g_c.reversed())));
}

/// The unique node without in-edge of a tree G_R; throws when G_R is no tree.
std::uint32_t tree_root(const digraph& g_r) {
  const std::string where = "make_topology: tree = true but G_R is not a tree: ";
  std::vector<std::uint32_t> parentless;
  for (std::uint32_t i = 0; i < g_r.size(); ++i) {
    if (g_r.in(i).size() > 1) {
      throw topology_error(where + "node " + std::to_string(i) + " has " +
                           std::to_string(g_r.in(i).size()) +
                           " in-edges (a parent must be unique)");
    }
    if (g_r.in(i).empty())
      parentless.push_back(i);
  }
  if (parentless.size() != 1) {
    throw topology_error(where +
                         "exactly one node must have no in-edge (the root), these have "
                         "none: " +
                         format_nodes(parentless));
  }
  const std::vector<bool> reached = g_r.reachable_from(parentless[0]);
  for (std::uint32_t i = 0; i < g_r.size(); ++i) {
    if (!reached[i]) {
      throw topology_error(where + "node " + std::to_string(i) +
                           " is not reachable from the root " + std::to_string(parentless[0]) +
                           " (a cycle)");
    }
  }
  return parentless[0];
}

void check_tree_pair(const digraph& g_r, const digraph& g_c) {
  if (g_c != g_r.reversed()) {
    throw topology_error("make_topology: tree = true requires G_C to be G_R with every edge "
                         "reversed (children push to their parent)");
  }
}

/// r_root,root = 1 and r_child,parent = 1: a child copies its parent's model.
weight_matrix tree_pull(const digraph& g_r, std::uint32_t root) {
  check_dense_nodes(g_r.size(), "tree weights");
  const auto n = static_cast<Eigen::Index>(g_r.size());
  weight_matrix r = weight_matrix::Zero(n, n);
  r(root, root) = 1.0;
  for (std::uint32_t child = 0; child < g_r.size(); ++child) {
    if (child != root)
      r(child, g_r.in(child).front()) = 1.0;
  }
  return r;
}

void warn_about_gap(topology& t, const char* matrix, double gap) {
  if (std::isnan(gap)) {
    t.warnings.push_back(std::string("spectral gap of ") + matrix +
                         " not computed: " + std::to_string(t.g_r.size()) + " nodes > " +
                         std::to_string(spectral_gap_max_nodes));
    return;
  }
  // A tree pair's gap is 1 (eigenvalues 1 and 0 only) and its progress is paced
  // by depth and how often the root wakes, not by a gap: never warn for trees.
  if (!t.tree && gap < small_spectral_gap) {
    t.warnings.push_back(std::string("spectral gap of ") + matrix + " is " + format_number(gap) +
                         " (|lambda_2| = " + format_number(1.0 - gap) + ", below " +
                         format_number(small_spectral_gap) +
                         "): gradient tracking may not converge at any step size on this "
                         "topology (e.g. a 16-node directed ring); prefer an exponential graph");
  }
}

}  // namespace

topology make_topology(digraph g_r, digraph g_c, bool tree) {
  check_pair_sizes(g_r, g_c);
  topology t;
  t.tree = tree;
  if (tree) {
    const std::uint32_t root = tree_root(g_r);
    check_tree_pair(g_r, g_c);
    t.r = tree_pull(g_r, root);
    t.c = t.r.transpose();  // c_parent,child = 1, c_root,root = 1
  } else {
    t.r = row_stochastic(g_r);
    t.c = column_stochastic(g_c);
  }
  t.roots = common_roots(g_r, g_c);
  if (t.roots.empty())
    throw_no_common_root(g_r, g_c);
  t.gap_r = spectral_gap(t.r);
  // C = R^T (same spectrum) for every tree pair and whenever G_C is G_R reversed
  // or both are the same symmetric graph; skip the second O(n^3) solve then.
  t.gap_c = t.c == t.r.transpose() ? t.gap_r : spectral_gap(t.c);
  t.g_r = std::move(g_r);
  t.g_c = std::move(g_c);
  warn_about_gap(t, "R", t.gap_r);
  warn_about_gap(t, "C", t.gap_c);
  return t;
}

}  // namespace atrain
