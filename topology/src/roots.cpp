/// Spanning-tree roots, common roots of (G_R, G_C) and the bipartite split.
#include <string>

#include "atrain/topology/weights.hpp"

namespace atrain {
namespace {

/// The start of the last search of a full traversal (searches in node order,
/// skipping visited nodes): if any node reaches every node, this one does.
/// Reason: the search that first visits such a node visits everything, so no
/// later search starts.
std::uint32_t last_search_start(const digraph& g) {
  std::vector<bool> seen(g.size(), false);
  std::uint32_t last = 0;
  std::vector<std::uint32_t> frontier;
  for (std::uint32_t start = 0; start < g.size(); ++start) {
    if (seen[start])
      continue;
    last = start;
    seen[start] = true;
    frontier.push_back(start);
    while (!frontier.empty()) {
      const std::uint32_t u = frontier.back();
      frontier.pop_back();
      for (const std::uint32_t v : g.out(u)) {
        if (!seen[v]) {
          seen[v] = true;
          frontier.push_back(v);
        }
      }
    }
  }
  return last;
}

std::vector<std::uint32_t> indices_of_true(const std::vector<bool>& flags) {
  std::vector<std::uint32_t> result;
  for (std::uint32_t i = 0; i < flags.size(); ++i) {
    if (flags[i])
      result.push_back(i);
  }
  return result;
}

/// Colours the component of `start` (true there); false on an odd cycle.
bool colour_component(const digraph& g, std::uint32_t start, std::vector<int>& colour) {
  colour[start] = 1;
  std::vector<std::uint32_t> frontier{start};
  while (!frontier.empty()) {
    const std::uint32_t u = frontier.back();
    frontier.pop_back();
    for (const auto* neighbours : {&g.out(u), &g.in(u)}) {
      for (const std::uint32_t v : *neighbours) {
        if (colour[v] == colour[u])
          return false;
        if (colour[v] == 0) {
          colour[v] = -colour[u];
          frontier.push_back(v);
        }
      }
    }
  }
  return true;
}

}  // namespace

std::vector<std::uint32_t> spanning_roots(const digraph& g) {
  if (g.size() == 0)
    return {};
  const std::uint32_t candidate = last_search_start(g);
  const std::vector<bool> reached = g.reachable_from(candidate);
  for (const bool r : reached) {
    if (!r)
      return {};
  }
  // u reaches everyone exactly when u reaches the candidate.
  return indices_of_true(g.reaching(candidate));
}

std::vector<std::uint32_t> common_roots(const digraph& g_r, const digraph& g_c) {
  if (g_r.size() != g_c.size()) {
    throw topology_error("common_roots: G_R has " + std::to_string(g_r.size()) +
                         " nodes but G_C has " + std::to_string(g_c.size()));
  }
  const std::vector<std::uint32_t> from_r = spanning_roots(g_r);
  // Every node reaches r along G_C <=> r reaches every node along reversed G_C.
  std::vector<bool> in_c(g_c.size(), false);
  for (const std::uint32_t r : spanning_roots(g_c.reversed()))
    in_c[r] = true;
  std::vector<std::uint32_t> both;
  for (const std::uint32_t r : from_r) {
    if (in_c[r])
      both.push_back(r);
  }
  return both;
}

std::optional<std::vector<bool>> bipartite_split(const digraph& g) {
  std::vector<int> colour(g.size(), 0);  // 0 unseen, 1 active, -1 passive
  for (std::uint32_t start = 0; start < g.size(); ++start) {
    if (colour[start] == 0 && !colour_component(g, start, colour))
      return std::nullopt;
  }
  std::vector<bool> active(g.size());
  for (std::size_t i = 0; i < g.size(); ++i)
    active[i] = colour[i] == 1;
  return active;
}

}  // namespace atrain
