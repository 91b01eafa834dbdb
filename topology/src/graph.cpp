/// digraph: sorted adjacency lists in both directions.
#include <algorithm>
#include <limits>
#include <string>

#include "atrain/topology/graph.hpp"

namespace atrain {
namespace {

/// Inserts v into the sorted vector unless present; true when inserted.
bool insert_sorted(std::vector<std::uint32_t>& list, std::uint32_t v) {
  const auto it = std::lower_bound(list.begin(), list.end(), v);
  if (it != list.end() && *it == v)
    return false;
  list.insert(it, v);
  return true;
}

/// Breadth-first search along `adjacency` from `start`.
std::vector<bool> search(const std::vector<std::vector<std::uint32_t>>& adjacency,
                         std::uint32_t start) {
  std::vector<bool> seen(adjacency.size(), false);
  std::vector<std::uint32_t> frontier{start};
  seen[start] = true;
  while (!frontier.empty()) {
    const std::uint32_t u = frontier.back();
    frontier.pop_back();
    for (const std::uint32_t v : adjacency[u]) {
      if (!seen[v]) {
        seen[v] = true;
        frontier.push_back(v);
      }
    }
  }
  return seen;
}

bool all_true(const std::vector<bool>& flags) {
  return std::all_of(flags.begin(), flags.end(), [](bool b) { return b; });
}

}  // namespace

digraph::digraph(std::size_t n) {
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw topology_error("digraph: nodes must fit a 32-bit node id, got " + std::to_string(n));
  }
  out_.resize(n);
  in_.resize(n);
}

std::size_t digraph::num_edges() const noexcept {
  std::size_t count = 0;
  for (const auto& list : out_)
    count += list.size();
  return count;
}

void digraph::add_edge(std::uint32_t from, std::uint32_t to) {
  for (const std::uint32_t endpoint : {from, to}) {
    if (endpoint >= size()) {
      throw topology_error("add_edge: edge " + std::to_string(from) + " -> " + std::to_string(to) +
                           " has endpoint " + std::to_string(endpoint) + " out of range for " +
                           std::to_string(size()) + " nodes");
    }
  }
  if (from == to)
    return;
  if (insert_sorted(out_[from], to))
    insert_sorted(in_[to], from);
}

bool digraph::has_edge(std::uint32_t from, std::uint32_t to) const noexcept {
  if (from >= size() || to >= size())
    return false;
  return std::binary_search(out_[from].begin(), out_[from].end(), to);
}

std::vector<edge> digraph::edges() const {
  std::vector<edge> result;
  result.reserve(num_edges());
  for (std::uint32_t from = 0; from < size(); ++from) {
    for (const std::uint32_t to : out_[from])
      result.push_back(edge{from, to});
  }
  return result;
}

digraph digraph::reversed() const {
  digraph r;
  r.out_ = in_;
  r.in_ = out_;
  return r;
}

bool digraph::is_symmetric() const noexcept {
  // The reverse of every edge exists exactly when out- and in-lists coincide.
  return out_ == in_;
}

std::vector<bool> digraph::reachable_from(std::uint32_t source) const {
  if (source >= size()) {
    throw topology_error("reachable_from: source " + std::to_string(source) + " out of range for " +
                         std::to_string(size()) + " nodes");
  }
  return search(out_, source);
}

std::vector<bool> digraph::reaching(std::uint32_t target) const {
  if (target >= size()) {
    throw topology_error("reaching: target " + std::to_string(target) + " out of range for " +
                         std::to_string(size()) + " nodes");
  }
  return search(in_, target);
}

bool digraph::strongly_connected() const {
  if (size() == 0)
    return false;
  return all_true(reachable_from(0)) && all_true(reaching(0));
}

}  // namespace atrain
