/// Random regular graphs: pairing (configuration) model with rejection of
/// loops and repeated pairs, retried until the graph is simple and connected.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "atrain/topology/graph.hpp"

namespace atrain {
namespace {

/// Bounded retries: for degree >= 3 nearly every attempt is connected; for
/// degree 2 an attempt is one cycle with probability about sqrt(pi / 2n)/e^{3/4}
/// (~1.5% at n = 1024), so 10000 attempts fail with probability < 1e-60.
constexpr int max_attempts = 10000;

/// Private splitmix64 stream: topology must not depend on kernels' rng.hpp, and
/// integer-only draws keep a seed's graph identical on every platform.
class splitmix {
public:
  explicit splitmix(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, bound), bound >= 1, without modulo bias (rejection).
  std::uint64_t below(std::uint64_t bound) noexcept {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    std::uint64_t x = next();
    while (x >= limit)
      x = next();
    return x % bound;
  }

private:
  std::uint64_t state_;
};

void shuffle(std::vector<std::uint32_t>& v, splitmix& gen) {
  for (std::size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[gen.below(i)]);
  }
}

/// True when some two distinct nodes among the unpaired stubs are still non-adjacent,
/// i.e. the attempt can still finish.
bool can_finish(const digraph& g, const std::map<std::uint32_t, std::size_t>& open) {
  for (auto a = open.begin(); a != open.end(); ++a) {
    for (auto b = std::next(a); b != open.end(); ++b) {
      if (!g.has_edge(a->first, b->first))
        return true;
    }
  }
  return open.empty();
}

/// One attempt: pair shuffled stubs, keep the pairs that make a simple graph and
/// re-pair the rest; empty optional when the leftovers cannot be paired.
std::optional<digraph> try_pairing(std::size_t n, std::size_t degree, splitmix& gen) {
  digraph g(n);
  std::vector<std::uint32_t> stubs;
  stubs.reserve(n * degree);
  for (std::size_t d = 0; d < degree; ++d) {
    for (std::size_t i = 0; i < n; ++i)
      stubs.push_back(static_cast<std::uint32_t>(i));
  }
  while (!stubs.empty()) {
    shuffle(stubs, gen);
    std::map<std::uint32_t, std::size_t> open;  // node -> stubs left unpaired
    for (std::size_t k = 0; k + 1 < stubs.size(); k += 2) {
      const std::uint32_t a = stubs[k];
      const std::uint32_t b = stubs[k + 1];
      if (a != b && !g.has_edge(a, b)) {
        g.add_edge(a, b);
        g.add_edge(b, a);
      } else {
        ++open[a];
        ++open[b];
      }
    }
    if (!can_finish(g, open))
      return std::nullopt;
    stubs.clear();
    for (const auto& [node, count] : open)
      stubs.insert(stubs.end(), count, node);
  }
  return g;
}

void check_regular_parameters(std::size_t n, std::size_t degree) {
  const std::string where = "random_regular: ";
  if (n < 2)
    throw topology_error(where + "nodes must be >= 2, got " + std::to_string(n));
  if (degree < 1)
    throw topology_error(where + "degree must be >= 1, got 0");
  if (degree >= n) {
    throw topology_error(where + "degree must be < nodes = " + std::to_string(n) + ", got " +
                         std::to_string(degree));
  }
  if ((n * degree) % 2 != 0) {
    throw topology_error(where + "nodes * degree must be even, got " + std::to_string(n) + " * " +
                         std::to_string(degree));
  }
  if (degree == 1 && n > 2) {
    throw topology_error(where + "degree 1 cannot be connected on " + std::to_string(n) +
                         " nodes (needs degree >= 2, or nodes = 2)");
  }
}

}  // namespace

digraph make_random_regular(std::size_t n, std::size_t degree, std::uint64_t seed) {
  check_regular_parameters(n, degree);
  splitmix gen(seed);
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    std::optional<digraph> g = try_pairing(n, degree, gen);
    if (g && g->strongly_connected())
      return std::move(*g);
  }
  throw topology_error(
    "random_regular: no simple connected graph with nodes = " + std::to_string(n) +
    ", degree = " + std::to_string(degree) + " after " + std::to_string(max_attempts) +
    " attempts (seed " + std::to_string(seed) + ")");
}

}  // namespace atrain
