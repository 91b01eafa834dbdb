#include <boost/test/unit_test.hpp>

#include <string>

#include "atrain/topology.hpp"

#include "helpers.hpp"

using namespace atrain;
using atrain::test::throws_with;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(make_topology_suite)

BOOST_AUTO_TEST_CASE(exponential_pair) {
  const topology t = make_topology(make_exponential(16), make_exponential(16), false);
  BOOST_TEST(t.roots.size() == 16u);
  BOOST_TEST(is_row_stochastic(t.r));
  BOOST_TEST(is_column_stochastic(t.c));
  BOOST_TEST(respects_graph(t.r, t.g_r));
  BOOST_TEST(respects_graph(t.c, t.g_c));
  BOOST_TEST(t.gap_r > 0.05);
  BOOST_TEST(t.warnings.empty());
  BOOST_TEST(!t.tree);
}

BOOST_AUTO_TEST_CASE(directed_ring_warns_about_small_gap) {
  const digraph ring = make_directed_ring(16);
  const topology t = make_topology(ring, ring.reversed(), false);
  BOOST_TEST(t.roots.size() == 16u);
  BOOST_TEST(t.gap_r < 0.05);
  BOOST_TEST_REQUIRE(t.warnings.size() == 2u);  // R and C
  BOOST_TEST(contains(t.warnings[0], "gradient tracking may not converge"));
  BOOST_TEST(contains(t.warnings[0], "spectral gap of R"));
  BOOST_TEST(contains(t.warnings[1], "spectral gap of C"));
}

BOOST_AUTO_TEST_CASE(tree_pair_gets_zero_one_weights) {
  const digraph tree = make_tree(13, 3, 4);
  const topology t = make_topology(tree, tree.reversed(), true);
  BOOST_TEST(t.tree);
  BOOST_TEST(t.roots == (std::vector<std::uint32_t>{4}), boost::test_tools::per_element());
  BOOST_TEST(t.r(4, 4) == 1.0);
  BOOST_TEST(t.c(4, 4) == 1.0);
  for (std::uint32_t child = 0; child < 13; ++child) {
    if (child == 4)
      continue;
    const std::uint32_t parent = tree.in(child).front();
    BOOST_TEST(t.r(child, parent) == 1.0);  // child copies parent's model
    BOOST_TEST(t.c(parent, child) == 1.0);  // child hands its mass to parent
    BOOST_TEST(t.r(child, child) == 0.0);
    BOOST_TEST(t.c(child, child) == 0.0);
  }
  BOOST_TEST(t.r.sum() == 13.0);  // exactly one 1 per row
  BOOST_TEST(is_row_stochastic(t.r));
  BOOST_TEST(is_column_stochastic(t.c));
  BOOST_TEST(respects_graph(t.r, t.g_r));
  BOOST_TEST(respects_graph(t.c, t.g_c));
  BOOST_TEST(t.warnings.empty());
}

BOOST_AUTO_TEST_CASE(tree_pair_is_validated) {
  const digraph tree = make_tree(7, 2, 0);
  BOOST_TEST(throws_with([&] { (void)make_topology(tree, tree, true); }, "reversed"));
  const digraph two_parents = make_from_edges(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  BOOST_TEST(throws_with([&] { (void)make_topology(two_parents, two_parents.reversed(), true); },
                         "node 3 has 2 in-edges"));
  const digraph ring = make_directed_ring(5);
  BOOST_TEST(throws_with([&] { (void)make_topology(ring, ring.reversed(), true); }, "not a tree"));
  BOOST_TEST(throws_with([] { (void)make_topology(make_ring(4), make_ring(5), false); },
                         "G_R has 4 nodes but G_C has 5"));
}

BOOST_AUTO_TEST_CASE(dot_lists_every_edge_and_marks_roots) {
  const digraph tree = make_tree(6, 2, 2);
  const topology t = make_topology(tree, tree.reversed(), true);
  const std::string dot = to_dot(t);
  BOOST_TEST(contains(dot, "digraph"));
  for (const edge& e : t.g_r.edges()) {
    BOOST_TEST(contains(dot, "\n  " + std::to_string(e.from) + " -> " + std::to_string(e.to) +
                               " [style=solid];"));
  }
  for (const edge& e : t.g_c.edges()) {
    BOOST_TEST(contains(dot, "\n  " + std::to_string(e.from) + " -> " + std::to_string(e.to) +
                               " [style=dashed];"));
  }
  BOOST_TEST(contains(dot, "\n  2 [shape=doublecircle];"));
  BOOST_TEST(!contains(dot, "\n  0 [shape=doublecircle];"));
}

BOOST_AUTO_TEST_SUITE_END()
