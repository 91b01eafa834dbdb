#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

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
