#include <boost/test/unit_test.hpp>

#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "atrain/topology/graph.hpp"

#include "helpers.hpp"

using namespace atrain;
using atrain::test::throws_with;

namespace {

bool all_out_degrees(const digraph& g, std::size_t d) {
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    if (g.out(i).size() != d)
      return false;
  }
  return true;
}

/// Expected exponential out-degree computed independently: the distinct
/// non-zero residues of +-2^k mod n.
std::size_t exponential_degree(std::size_t n) {
  std::set<std::size_t> offsets;
  for (std::size_t h = 1; h < n; h <<= 1) {
    offsets.insert(h % n);
    offsets.insert((n - h % n) % n);
  }
  offsets.erase(0);
  return offsets.size();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(builders)

BOOST_AUTO_TEST_CASE(rings) {
  for (const std::size_t n : {3u, 4u, 7u, 16u}) {
    const digraph ring = make_ring(n);
    BOOST_TEST(ring.num_edges() == 2 * n);
    BOOST_TEST(all_out_degrees(ring, 2));
    BOOST_TEST(ring.has_edge(0, static_cast<std::uint32_t>(n - 1)));
    const digraph directed = make_directed_ring(n);
    BOOST_TEST(directed.num_edges() == n);
    BOOST_TEST(all_out_degrees(directed, 1));
    BOOST_TEST(directed.has_edge(static_cast<std::uint32_t>(n - 1), 0));
    BOOST_TEST(!directed.has_edge(0, static_cast<std::uint32_t>(n - 1)));
  }
  BOOST_TEST(make_ring(2).num_edges() == 2u);  // one edge each way, not two
  BOOST_TEST(throws_with([] { (void)make_ring(1); }, "ring: nodes must be >= 2, got 1"));
}

BOOST_AUTO_TEST_CASE(exponential_degrees) {
  BOOST_TEST(exponential_degree(16) == 7u);  // +-1, +-2, +-4, 8
  for (const std::size_t n : {2u, 3u, 5u, 8u, 12u, 16u, 33u, 64u}) {
    const digraph g = make_exponential(n);
    BOOST_TEST_CONTEXT("n = " << n) {
      BOOST_TEST(all_out_degrees(g, exponential_degree(n)));
      BOOST_TEST(g.num_edges() == n * exponential_degree(n));
      BOOST_TEST(g.is_symmetric());
    }
  }
  const digraph g16 = make_exponential(16);
  BOOST_TEST(g16.out(0) == (std::vector<std::uint32_t>{1, 2, 4, 8, 12, 14, 15}),
             boost::test_tools::per_element());
  BOOST_TEST(
    throws_with([] { (void)make_exponential(1); }, "exponential: nodes must be >= 2, got 1"));
}

BOOST_AUTO_TEST_CASE(directed_exponential_has_one_direction_of_each_hop) {
  const digraph g16 = make_directed_exponential(16);
  BOOST_TEST(g16.out(0) == (std::vector<std::uint32_t>{1, 2, 4, 8}),
             boost::test_tools::per_element());
  BOOST_TEST(g16.in(0) == (std::vector<std::uint32_t>{8, 12, 14, 15}),
             boost::test_tools::per_element());
  for (const std::size_t n : {2u, 3u, 5u, 8u, 12u, 16u, 33u}) {
    const digraph g = make_directed_exponential(n);
    std::size_t hops = 0;
    for (std::size_t h = 1; h < n; h <<= 1)
      ++hops;
    BOOST_TEST_CONTEXT("n = " << n) {
      BOOST_TEST(all_out_degrees(g, hops));
      for (std::uint32_t i = 0; i < n; ++i)
        BOOST_TEST(g.reachable_from(i) == std::vector<bool>(n, true));  // strongly connected
      BOOST_TEST(g.is_symmetric() == (n <= 3));  // n = 3: hops 1 and 2 = -1
    }
  }
}

/// The SGP repository's DynamicBipartiteExponentialGraph, transcribed: rank r
/// (passive when even) takes peers r +/- 1 and r +/- (1 + 2^i), i = 1 ..
/// floor(log2(n - 1)), when they are on the other side.
static std::set<std::pair<std::uint32_t, std::uint32_t>> sgp_bipartite_edges(std::size_t n) {
  std::set<std::pair<std::uint32_t, std::uint32_t>> edges;
  const auto passive = [](std::size_t r) { return r % 2 == 0; };
  const auto log2 = static_cast<std::size_t>(std::floor(std::log2(static_cast<double>(n - 1))));
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i <= log2; ++i) {
      const std::size_t hop = i == 0 ? 1 : 1 + (std::size_t{1} << i);
      const std::size_t f = (r + hop) % n;
      const std::size_t b = (r + n - hop % n) % n;
      if (passive(r) != passive(f) && passive(r) != passive(b))
        for (const auto peer : {f, b})
          edges.emplace(static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(peer));
    }
  return edges;
}

BOOST_AUTO_TEST_CASE(bipartite_exponential_matches_the_sgp_repository) {
  for (const std::size_t n : {2u, 4u, 6u, 8u, 12u, 16u, 32u, 40u}) {
    const digraph g = make_bipartite_exponential(n);
    std::set<std::pair<std::uint32_t, std::uint32_t>> got;
    for (const auto& e : g.edges()) {
      got.emplace(e.from, e.to);
      BOOST_TEST((e.from % 2) != (e.to % 2));  // even <-> odd only
    }
    BOOST_TEST_CONTEXT("n = " << n) {
      BOOST_TEST((got == sgp_bipartite_edges(n)));
      BOOST_TEST(g.is_symmetric());
      BOOST_TEST(g.reachable_from(0) == std::vector<bool>(n, true));
    }
  }
  BOOST_TEST(make_bipartite_exponential(32).out(0) ==
               (std::vector<std::uint32_t>{1, 3, 5, 9, 15, 17, 23, 27, 29, 31}),
             boost::test_tools::per_element());
  BOOST_TEST(throws_with([] { (void)make_bipartite_exponential(7); },
                         "bipartite_exponential: nodes must be even"));
}

BOOST_AUTO_TEST_CASE(trees) {
  // Binary tree of 7 rooted at 0: children of k are 2k+1, 2k+2.
  const digraph t = make_tree(7, 2, 0);
  BOOST_TEST(t.num_edges() == 6u);
  BOOST_TEST(t.out(0) == (std::vector<std::uint32_t>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(t.out(2) == (std::vector<std::uint32_t>{5, 6}), boost::test_tools::per_element());
  // Rooted at 3: labels 0 and 3 swap.
  const digraph s = make_tree(7, 2, 3);
  BOOST_TEST(s.in(3).empty());
  BOOST_TEST(s.out(3) == (std::vector<std::uint32_t>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(s.out(1) == (std::vector<std::uint32_t>{0, 4}), boost::test_tools::per_element());
  for (const std::size_t arity : {1u, 2u, 3u, 5u}) {
    const digraph g = make_tree(20, arity, 5);
    BOOST_TEST(g.num_edges() == 19u);
    for (std::uint32_t i = 0; i < 20; ++i) {
      BOOST_TEST(g.in(i).size() == (i == 5 ? 0u : 1u));
      BOOST_TEST(g.out(i).size() <= arity);
    }
    BOOST_TEST((g.reachable_from(5) == std::vector<bool>(20, true)));
  }
  BOOST_TEST(throws_with([] { (void)make_tree(7, 2, 7); }, "root must be < nodes = 7"));
  BOOST_TEST(throws_with([] { (void)make_tree(7, 0, 0); }, "arity"));
}

BOOST_AUTO_TEST_CASE(star_torus_complete) {
  const digraph star = make_star(9, 4);
  BOOST_TEST(star.num_edges() == 16u);
  BOOST_TEST(star.out(4).size() == 8u);
  BOOST_TEST(star.out(0) == (std::vector<std::uint32_t>{4}), boost::test_tools::per_element());
  BOOST_TEST(throws_with([] { (void)make_star(4, 4); }, "centre"));

  const digraph torus = make_torus(3, 4);
  BOOST_TEST(torus.size() == 12u);
  BOOST_TEST(all_out_degrees(torus, 4));
  BOOST_TEST(torus.is_symmetric());
  BOOST_TEST(torus.has_edge(3, 0));                  // row 0 wraps
  BOOST_TEST(torus.has_edge(8, 0));                  // column 0 wraps
  BOOST_TEST(all_out_degrees(make_torus(2, 2), 2));  // neighbours coincide
  BOOST_TEST(all_out_degrees(make_torus(1, 5), 2));  // a ring
  BOOST_TEST(throws_with([] { (void)make_torus(0, 4); }, "torus: rows must be >= 1"));

  for (const std::size_t n : {2u, 5u, 12u}) {
    const digraph k = make_complete(n);
    BOOST_TEST(k.num_edges() == n * (n - 1));
    BOOST_TEST(all_out_degrees(k, n - 1));
  }
}

BOOST_AUTO_TEST_CASE(random_regular) {
  for (const auto& [n, d] : std::vector<std::pair<std::size_t, std::size_t>>{
         {2, 1}, {10, 2}, {16, 3}, {32, 4}, {64, 7}, {100, 8}}) {
    BOOST_TEST_CONTEXT("n = " << n << ", degree = " << d) {
      const digraph g = make_random_regular(n, d, 42);
      BOOST_TEST(all_out_degrees(g, d));
      BOOST_TEST(g.is_symmetric());
      BOOST_TEST(g.strongly_connected());
      BOOST_TEST(g.num_edges() == n * d);
    }
  }
  BOOST_TEST((make_random_regular(32, 4, 7) == make_random_regular(32, 4, 7)));
  BOOST_TEST((make_random_regular(32, 4, 7) != make_random_regular(32, 4, 8)));
  BOOST_TEST(throws_with([] { (void)make_random_regular(7, 3, 1); }, "even"));
  BOOST_TEST(throws_with([] { (void)make_random_regular(6, 6, 1); }, "degree must be < nodes"));
  BOOST_TEST(throws_with([] { (void)make_random_regular(6, 1, 1); }, "connected"));
}

BOOST_AUTO_TEST_SUITE_END()
