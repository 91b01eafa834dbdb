#include <boost/test/unit_test.hpp>

#include <numeric>
#include <string>

#include "atrain/topology/weights.hpp"

using namespace atrain;

namespace {

std::vector<std::uint32_t> all_nodes(std::size_t n) {
  std::vector<std::uint32_t> v(n);
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(roots)

BOOST_AUTO_TEST_CASE(strongly_connected_pairs_have_every_node_as_root) {
  BOOST_TEST(common_roots(make_exponential(16), make_exponential(16)) == all_nodes(16),
             boost::test_tools::per_element());
  const digraph ring = make_directed_ring(9);
  BOOST_TEST(common_roots(ring, ring.reversed()) == all_nodes(9), boost::test_tools::per_element());
  BOOST_TEST(common_roots(make_random_regular(30, 3, 5), make_ring(30)) == all_nodes(30),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(tree_pair_has_exactly_its_root) {
  const digraph tree = make_tree(15, 2, 6);
  BOOST_TEST(common_roots(tree, tree.reversed()) == (std::vector<std::uint32_t>{6}),
             boost::test_tools::per_element());
  // The same tree for both graphs: only leaves are reached by all... none is.
  BOOST_TEST(common_roots(tree, tree).empty());
}

BOOST_AUTO_TEST_CASE(a_tree_pair_without_its_root_or_an_interior_node_has_no_common_root) {
  // Binary tree on 8 nodes rooted at 0: 0 -> {1, 2}, 1 -> {3, 4}, 2 -> {5, 6}, 3 -> 7.
  const digraph tree = make_tree(8, 2, 0);
  const std::vector<std::uint32_t> without_root{1, 2, 3, 4, 5, 6, 7};
  const digraph sub = induced_subgraph(tree, without_root);
  BOOST_TEST(sub.size() == 7u);
  BOOST_TEST(sub.has_edge(0, 2));     // 1 -> 3
  BOOST_TEST(!sub.has_edge(0, 1));    // 1 and 2 were siblings
  BOOST_TEST(sub.num_edges() == 5u);  // 1->3, 1->4, 2->5, 2->6, 3->7
  BOOST_TEST(common_roots(sub, sub.reversed()).empty());
  const digraph no_1 = induced_subgraph(tree, {0, 2, 3, 4, 5, 6, 7});
  BOOST_TEST(common_roots(no_1, no_1.reversed()).empty());
  const digraph no_leaf = induced_subgraph(tree, {0, 1, 2, 3, 4, 5, 6});
  BOOST_TEST(common_roots(no_leaf, no_leaf.reversed()) == (std::vector<std::uint32_t>{0}),
             boost::test_tools::per_element());
  // The exponential graph keeps every survivor as a root when node 0 goes.
  const digraph expo = induced_subgraph(make_exponential(8), without_root);
  BOOST_TEST(common_roots(expo, expo) == all_nodes(7), boost::test_tools::per_element());
  BOOST_CHECK_THROW((void)induced_subgraph(tree, {3, 2}), topology_error);
  BOOST_CHECK_THROW((void)induced_subgraph(tree, {8}), topology_error);
}

BOOST_AUTO_TEST_CASE(spanning_roots_of_partial_graphs) {
  // {0,1} strongly connected and feeding 2 -> 3: roots are 0 and 1.
  const digraph g = make_from_edges(4, {{0, 1}, {1, 0}, {1, 2}, {2, 3}});
  BOOST_TEST(spanning_roots(g) == (std::vector<std::uint32_t>{0, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(spanning_roots(g.reversed()) == (std::vector<std::uint32_t>{3}),
             boost::test_tools::per_element());
  // The candidate search must not be fooled by node order: root is the last node.
  const digraph last = make_from_edges(4, {{3, 0}, {0, 1}, {1, 2}});
  BOOST_TEST(spanning_roots(last) == (std::vector<std::uint32_t>{3}),
             boost::test_tools::per_element());
  BOOST_TEST(spanning_roots(make_from_edges(4, {{0, 1}, {2, 3}})).empty());
}

BOOST_AUTO_TEST_CASE(pair_without_common_root) {
  // G_R: path 0 -> 1 -> 2 (only 0 reaches all); G_C: the same path (all reach only 2).
  const digraph path = make_from_edges(3, {{0, 1}, {1, 2}});
  BOOST_TEST(common_roots(path, path).empty());
  try {
    (void)make_topology(path, path, false);
    BOOST_FAIL("make_topology accepted a pair without common root");
  } catch (const topology_error& e) {
    const std::string what = e.what();
    BOOST_TEST(what.find("common root") != std::string::npos);
    BOOST_TEST(what.find("along G_R: {0}") != std::string::npos);
    BOOST_TEST(what.find("along G_C: {2}") != std::string::npos);
  }
  BOOST_CHECK_THROW((void)common_roots(make_ring(4), make_ring(5)), topology_error);
}

BOOST_AUTO_TEST_CASE(bipartite_split_on_rings) {
  const auto even = bipartite_split(make_ring(8));
  BOOST_TEST_REQUIRE(even.has_value());
  for (std::uint32_t i = 0; i < 8; ++i) {
    BOOST_TEST((*even)[i] == (i % 2 == 0));
  }
  BOOST_TEST(!bipartite_split(make_ring(7)).has_value());
  BOOST_TEST(!bipartite_split(make_directed_ring(5)).has_value());  // taken as undirected
  BOOST_TEST(bipartite_split(make_directed_ring(6)).has_value());
  const auto torus = bipartite_split(make_torus(4, 4));
  BOOST_TEST_REQUIRE(torus.has_value());
  const digraph t = make_torus(4, 4);
  for (const edge& e : t.edges())
    BOOST_TEST((*torus)[e.from] != (*torus)[e.to]);
  BOOST_TEST(!bipartite_split(make_complete(3)).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
