#include <boost/test/unit_test.hpp>

#include <string>

#include "atrain/topology/graph.hpp"

#include "helpers.hpp"

using namespace atrain;
using atrain::test::throws_with;

BOOST_AUTO_TEST_SUITE(graph)

BOOST_AUTO_TEST_CASE(add_edge_keeps_sorted_lists_and_drops_loops_and_duplicates) {
  digraph g(4);
  g.add_edge(0, 3);
  g.add_edge(0, 1);
  g.add_edge(0, 3);  // duplicate
  g.add_edge(2, 2);  // self loop
  g.add_edge(2, 0);
  BOOST_TEST(g.num_edges() == 3u);
  BOOST_TEST(g.out(0) == (std::vector<std::uint32_t>{1, 3}), boost::test_tools::per_element());
  BOOST_TEST(g.in(0) == (std::vector<std::uint32_t>{2}), boost::test_tools::per_element());
  BOOST_TEST(g.has_edge(0, 3));
  BOOST_TEST(!g.has_edge(3, 0));
  BOOST_TEST(!g.has_edge(2, 2));
  BOOST_TEST(!g.has_edge(9, 0));  // out of range is simply absent
  const std::vector<edge> expected{{0, 1}, {0, 3}, {2, 0}};
  BOOST_TEST((g.edges() == expected));
}

BOOST_AUTO_TEST_CASE(out_of_range_endpoint_throws) {
  digraph g(3);
  BOOST_TEST(throws_with([&] { g.add_edge(0, 3); }, "out of range"));
  BOOST_TEST(throws_with([&] { g.add_edge(7, 1); }, "7"));
  BOOST_TEST(throws_with([] { (void)make_from_edges(4, {{0, 1}, {1, 4}}); }, "edge #1"));
  BOOST_TEST(throws_with([&] { (void)g.reachable_from(3); }, "source"));
  BOOST_TEST(g.num_edges() == 0u);  // nothing half-added
}

BOOST_AUTO_TEST_CASE(reversed_symmetric_and_reachability) {
  const digraph g = make_from_edges(4, {{0, 1}, {1, 2}, {3, 2}});
  const digraph r = g.reversed();
  BOOST_TEST(r.has_edge(1, 0));
  BOOST_TEST(r.has_edge(2, 3));
  BOOST_TEST(!r.has_edge(0, 1));
  BOOST_TEST((r.reversed() == g));
  BOOST_TEST(!g.is_symmetric());
  BOOST_TEST(make_ring(5).is_symmetric());
  const std::vector<bool> from0 = g.reachable_from(0);
  BOOST_TEST((from0 == std::vector<bool>{true, true, true, false}));
  const std::vector<bool> to2 = g.reaching(2);
  BOOST_TEST((to2 == std::vector<bool>{true, true, true, true}));
  BOOST_TEST(!g.strongly_connected());
  BOOST_TEST(make_directed_ring(6).strongly_connected());
  BOOST_TEST(!digraph(0).strongly_connected());
  BOOST_TEST(digraph(1).strongly_connected());
}

BOOST_AUTO_TEST_SUITE_END()
