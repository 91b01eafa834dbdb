#pragma once
/// Directed graphs over nodes 0..n-1 and the builders of the spec's topologies.
/// An edge j -> i in G_R means i pulls models from j; an edge i -> j in G_C
/// means i pushes tracker mass to j (ALGORITHMS.md §1).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace atrain {

/// Thrown for impossible topologies; what() says which and why.
class topology_error : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

struct edge {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  friend bool operator==(const edge& a, const edge& b) { return a.from == b.from && a.to == b.to; }
  friend bool operator!=(const edge& a, const edge& b) { return !(a == b); }
};

class digraph {
public:
  digraph() = default;
  /// n nodes, no edges. Throws topology_error when n does not fit a uint32 node id.
  explicit digraph(std::size_t n);

  [[nodiscard]] std::size_t size() const noexcept { return out_.size(); }
  [[nodiscard]] std::size_t num_edges() const noexcept;
  /// Adds from -> to; ignores self loops and duplicates. Throws topology_error
  /// when an endpoint is out of range.
  void add_edge(std::uint32_t from, std::uint32_t to);
  [[nodiscard]] bool has_edge(std::uint32_t from, std::uint32_t to) const noexcept;
  /// Sorted ascending.
  [[nodiscard]] const std::vector<std::uint32_t>& out(std::uint32_t i) const { return out_.at(i); }
  [[nodiscard]] const std::vector<std::uint32_t>& in(std::uint32_t i) const { return in_.at(i); }
  /// All edges, sorted by (from, to).
  [[nodiscard]] std::vector<edge> edges() const;
  /// Same graph with every edge reversed.
  [[nodiscard]] digraph reversed() const;
  /// True when every edge has its reverse.
  [[nodiscard]] bool is_symmetric() const noexcept;
  /// Nodes reachable from `source` along edge directions (including source).
  /// Throws topology_error when `source` is out of range.
  [[nodiscard]] std::vector<bool> reachable_from(std::uint32_t source) const;
  /// Nodes from which `target` is reachable (including target); throws like reachable_from.
  [[nodiscard]] std::vector<bool> reaching(std::uint32_t target) const;
  /// Every node reaches every node; false for the empty graph, true for one node.
  [[nodiscard]] bool strongly_connected() const;

  /// Same node count and same edges.
  friend bool operator==(const digraph& a, const digraph& b) { return a.out_ == b.out_; }
  friend bool operator!=(const digraph& a, const digraph& b) { return !(a == b); }

private:
  std::vector<std::vector<std::uint32_t>> out_;
  std::vector<std::vector<std::uint32_t>> in_;
};

// ---- builders (all throw topology_error on impossible parameters, naming the
// builder, the parameter and the reason). Every builder needs n >= 2 nodes except
// make_from_edges (n >= 1).
[[nodiscard]] digraph make_ring(std::size_t n);           // i <-> i+1 (mod n)
[[nodiscard]] digraph make_directed_ring(std::size_t n);  // i -> i+1 (mod n)
/// i -> i + 2^k and i -> i - 2^k (mod n) for 2^k < n (symmetric; offsets that
/// coincide mod n give one edge, e.g. n = 16 has out-degree 7).
[[nodiscard]] digraph make_exponential(std::size_t n);
/// i -> i + 2^k (mod n) for 2^k < n: the one-directional graph of the SGP and
/// R-FAST experiments (out-degree 4 at n = 16, where make_exponential has 7).
[[nodiscard]] digraph make_directed_exponential(std::size_t n);
/// AD-PSGD's graph in the SGP repository: i <-> i +/- 1 and i <-> i +/- (1 + 2^k)
/// (mod n) for k = 1 .. floor(log2(n - 1)). Every offset is odd, so it is
/// bipartite (even / odd nodes); n must be even.
[[nodiscard]] digraph make_bipartite_exponential(std::size_t n);
/// arity-ary tree rooted at `root`: in breadth-first numbering from 0 the
/// children of k are arity*k+1 .. arity*k+arity (those < n); then labels 0 and
/// `root` are swapped so that `root` is the root. Edges parent -> child.
[[nodiscard]] digraph make_tree(std::size_t n, std::size_t arity, std::uint32_t root);
[[nodiscard]] digraph make_star(std::size_t n, std::uint32_t centre);  // both directions
/// Node r*cols + c linked both ways to its right and lower neighbours, wrapping
/// around; rows, cols >= 1 and rows*cols >= 2.
[[nodiscard]] digraph make_torus(std::size_t rows, std::size_t cols);
[[nodiscard]] digraph make_complete(std::size_t n);
/// Undirected (symmetric) simple graph, every node of degree `degree`, drawn
/// from `seed`, connected; n * degree must be even and degree < n. Same seed,
/// same graph on every platform (private splitmix64 generator, integer draws).
[[nodiscard]] digraph make_random_regular(std::size_t n, std::size_t degree, std::uint64_t seed);
/// Throws topology_error naming the first edge with an endpoint >= n; self
/// loops and duplicates are dropped as in add_edge.
[[nodiscard]] digraph make_from_edges(std::size_t n, const std::vector<edge>& edges);

/// The subgraph induced by `keep` (ascending, distinct node ids of g): node k
/// of the result is keep[k]; an edge survives when both ends are kept. Throws
/// topology_error naming the first id that is out of range or out of order.
[[nodiscard]] digraph induced_subgraph(const digraph& g, const std::vector<std::uint32_t>& keep);

}  // namespace atrain
