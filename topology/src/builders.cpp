/// The deterministic builders of the spec's topologies.
#include <string>

#include "atrain/topology/graph.hpp"

namespace atrain {
namespace {

void require_nodes(const char* builder, std::size_t n, std::size_t minimum) {
  if (n < minimum) {
    throw topology_error(std::string(builder) + ": nodes must be >= " + std::to_string(minimum) +
                         ", got " + std::to_string(n));
  }
}

void require_node_id(const char* builder, const char* parameter, std::uint32_t id, std::size_t n) {
  if (id >= n) {
    throw topology_error(std::string(builder) + ": " + parameter +
                         " must be < nodes = " + std::to_string(n) + ", got " + std::to_string(id));
  }
}

std::uint32_t id(std::size_t i) {
  return static_cast<std::uint32_t>(i);
}

void add_both(digraph& g, std::size_t a, std::size_t b) {
  g.add_edge(id(a), id(b));
  g.add_edge(id(b), id(a));
}

}  // namespace

digraph make_ring(std::size_t n) {
  require_nodes("ring", n, 2);
  digraph g(n);
  for (std::size_t i = 0; i < n; ++i)
    add_both(g, i, (i + 1) % n);
  return g;
}

digraph make_directed_ring(std::size_t n) {
  require_nodes("directed_ring", n, 2);
  digraph g(n);
  for (std::size_t i = 0; i < n; ++i)
    g.add_edge(id(i), id((i + 1) % n));
  return g;
}

digraph make_exponential(std::size_t n) {
  require_nodes("exponential", n, 2);
  digraph g(n);
  for (std::size_t hop = 1; hop < n; hop *= 2) {
    for (std::size_t i = 0; i < n; ++i) {
      g.add_edge(id(i), id((i + hop) % n));
      g.add_edge(id(i), id((i + n - hop) % n));
    }
  }
  return g;
}

digraph make_directed_exponential(std::size_t n) {
  require_nodes("directed_exponential", n, 2);
  digraph g(n);
  for (std::size_t hop = 1; hop < n; hop *= 2) {
    for (std::size_t i = 0; i < n; ++i)
      g.add_edge(id(i), id((i + hop) % n));
  }
  return g;
}

digraph make_bipartite_exponential(std::size_t n) {
  require_nodes("bipartite_exponential", n, 2);
  if (n % 2 != 0)
    throw topology_error("bipartite_exponential: nodes must be even (even and odd nodes are the "
                         "two sides), got " + std::to_string(n));
  // Offsets 1 and 1 + 2^k for k = 1 .. floor(log2(n - 1)): all odd, so every
  // edge joins an even and an odd node (the SGP repository's graph).
  digraph g(n);
  for (std::size_t k = 0; (std::size_t{1} << k) <= n - 1; ++k) {
    const std::size_t hop = (k == 0 ? 1 : 1 + (std::size_t{1} << k)) % n;
    for (std::size_t i = 0; i < n; ++i)
      add_both(g, i, (i + hop) % n);
  }
  return g;
}

digraph make_tree(std::size_t n, std::size_t arity, std::uint32_t root) {
  require_nodes("tree", n, 2);
  if (arity < 1)
    throw topology_error("tree: arity must be >= 1, got 0");
  require_node_id("tree", "root", root, n);
  /// Breadth-first label k becomes `root` and vice versa for k = 0.
  const auto label = [root](std::size_t k) {
    if (k == 0)
      return root;
    if (k == root)
      return std::uint32_t{0};
    return id(k);
  };
  digraph g(n);
  for (std::size_t child = 1; child < n; ++child) {
    const std::size_t parent = (child - 1) / arity;  // inverse of arity*k + 1 .. arity*k + arity
    g.add_edge(label(parent), label(child));
  }
  return g;
}

digraph make_star(std::size_t n, std::uint32_t centre) {
  require_nodes("star", n, 2);
  require_node_id("star", "centre", centre, n);
  digraph g(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i != centre)
      add_both(g, centre, i);
  }
  return g;
}

digraph make_torus(std::size_t rows, std::size_t cols) {
  if (rows < 1)
    throw topology_error("torus: rows must be >= 1, got 0");
  if (cols < 1)
    throw topology_error("torus: cols must be >= 1, got 0");
  if (rows * cols < 2)
    throw topology_error("torus: rows*cols must be >= 2, got 1");
  digraph g(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t here = r * cols + c;
      add_both(g, here, r * cols + (c + 1) % cols);    // right; a self loop when cols = 1
      add_both(g, here, ((r + 1) % rows) * cols + c);  // down; a self loop when rows = 1
    }
  }
  return g;
}

digraph make_complete(std::size_t n) {
  require_nodes("complete", n, 2);
  digraph g(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i != j)
        g.add_edge(id(i), id(j));
    }
  }
  return g;
}

digraph make_from_edges(std::size_t n, const std::vector<edge>& edges) {
  require_nodes("make_from_edges", n, 1);
  digraph g(n);
  for (std::size_t k = 0; k < edges.size(); ++k) {
    const edge e = edges[k];
    if (e.from >= n || e.to >= n) {
      throw topology_error("make_from_edges: edge #" + std::to_string(k) + " (" +
                           std::to_string(e.from) + " -> " + std::to_string(e.to) +
                           ") has an endpoint out of range: nodes = " + std::to_string(n));
    }
    g.add_edge(e.from, e.to);
  }
  return g;
}

digraph induced_subgraph(const digraph& g, const std::vector<std::uint32_t>& keep) {
  constexpr auto absent = ~std::uint32_t{0};
  std::vector<std::uint32_t> index(g.size(), absent);  // old id -> new id
  for (std::size_t k = 0; k < keep.size(); ++k) {
    if (keep[k] >= g.size() || (k > 0 && keep[k] <= keep[k - 1])) {
      throw topology_error(
        "induced_subgraph: kept node #" + std::to_string(k) + " (" + std::to_string(keep[k]) +
        ") is out of range (nodes = " + std::to_string(g.size()) + ") or not above the one before");
    }
    index[keep[k]] = id(k);
  }
  digraph sub(keep.size());
  for (const auto& e : g.edges()) {
    if (index[e.from] != absent && index[e.to] != absent)
      sub.add_edge(index[e.from], index[e.to]);
  }
  return sub;
}

}  // namespace atrain
