#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <utility>
#include <vector>

#include <Eigen/Eigenvalues>

#include "atrain/topology/mixing_row.hpp"
#include "atrain/topology/weights.hpp"

using namespace atrain;

BOOST_AUTO_TEST_SUITE(weights)

BOOST_AUTO_TEST_CASE(default_pull_and_push_weights) {
  // 0 -> 1, 0 -> 2, 1 -> 2: in(2) = {0, 1}, out(0) = {1, 2}.
  const digraph g = make_from_edges(3, {{0, 1}, {0, 2}, {1, 2}});
  const weight_matrix r = row_stochastic(g);
  BOOST_TEST(r(2, 0) == 1.0 / 3);
  BOOST_TEST(r(2, 2) == 1.0 / 3);
  BOOST_TEST(r(0, 0) == 1.0);
  BOOST_TEST(r(0, 2) == 0.0);
  const weight_matrix c = column_stochastic(g);
  BOOST_TEST(c(1, 0) == 1.0 / 3);  // 0 pushes a third to 1
  BOOST_TEST(c(0, 0) == 1.0 / 3);
  BOOST_TEST(c(2, 2) == 1.0);
  BOOST_TEST(is_row_stochastic(r));
  BOOST_TEST(!is_column_stochastic(r));
  BOOST_TEST(is_column_stochastic(c));
  BOOST_TEST(!is_row_stochastic(c));
  BOOST_TEST(respects_graph(r, g));
  BOOST_TEST(respects_graph(c, g));
  BOOST_TEST(!respects_graph(r, g.reversed()));
  BOOST_TEST(!respects_graph(r, digraph(4)));  // wrong size
}

// D-PSGD's rows over the nodes in the run (faults.join): with everyone in,
// metropolis_hastings's rows bit for bit; with some absent, the matrix of
// the rows is metropolis_hastings of the subgraph among the members
// (built here independently), zero towards the absent.
BOOST_AUTO_TEST_CASE(metropolis_hastings_rows_over_the_members) {
  const digraph g = make_exponential(12);
  const weight_matrix full = metropolis_hastings(g);
  std::vector<bool> members(12, true);
  for (std::uint32_t i = 0; i < 12; ++i) {
    const auto row = metropolis_hastings_row(g, i, members);
    BOOST_TEST(row.self == full(i, i));
    for (std::size_t k = 0; k < g.out(i).size(); ++k)
      BOOST_TEST(row.in[k] == full(i, g.out(i)[k]));
  }
  for (std::uint32_t absent : {3U, 8U, 11U})
    members[absent] = false;
  std::vector<std::uint32_t> in;  // member -> node
  for (std::uint32_t i = 0; i < 12; ++i)
    if (members[i])
      in.push_back(i);
  std::vector<edge> edges;
  for (std::uint32_t a = 0; a < in.size(); ++a)
    for (auto j : g.out(in[a]))
      if (members[j])
        edges.push_back(
          {a, static_cast<std::uint32_t>(std::find(in.begin(), in.end(), j) - in.begin())});
  const weight_matrix sub = metropolis_hastings(make_from_edges(in.size(), edges));
  BOOST_TEST(is_doubly_stochastic(sub));
  for (std::uint32_t a = 0; a < in.size(); ++a) {
    const auto row = metropolis_hastings_row(g, in[a], members);
    BOOST_TEST(std::abs(row.self - sub(a, a)) < 1e-15);
    for (std::size_t k = 0; k < g.out(in[a]).size(); ++k) {
      const auto j = g.out(in[a])[k];
      const double want =
        members[j] ? sub(a, std::find(in.begin(), in.end(), j) - in.begin()) : 0.0;
      BOOST_TEST(std::abs(row.in[k] - want) < 1e-15);
    }
  }
}

BOOST_AUTO_TEST_CASE(stochastic_checks_fail_on_perturbed_matrices) {
  const weight_matrix w = metropolis_hastings(make_ring(8));
  BOOST_TEST(is_doubly_stochastic(w));
  weight_matrix bumped = w;
  bumped(3, 3) += 1e-6;
  BOOST_TEST(!is_row_stochastic(bumped));
  BOOST_TEST(!is_column_stochastic(bumped));
  BOOST_TEST(!is_doubly_stochastic(bumped));
  BOOST_TEST(is_row_stochastic(bumped, 1e-5));  // within a looser tolerance
  // A negative entry is refused even when every sum is still 1.
  weight_matrix negative = w;
  negative(0, 0) -= 0.5;
  negative(0, 4) += 0.5;
  negative(4, 4) -= 0.5;
  negative(4, 0) += 0.5;
  BOOST_TEST(!is_doubly_stochastic(negative));
  weight_matrix off_graph = w;  // mass moved onto a non-edge 0 <-> 4
  off_graph(0, 0) -= 0.1;
  off_graph(0, 4) += 0.1;
  off_graph(4, 4) -= 0.1;
  off_graph(4, 0) += 0.1;
  BOOST_TEST(is_doubly_stochastic(off_graph));
  BOOST_TEST(!respects_graph(off_graph, make_ring(8)));
  BOOST_TEST(!is_row_stochastic(weight_matrix::Constant(2, 3, 1.0 / 3)));  // not square
  BOOST_TEST(!is_symmetric(row_stochastic(make_directed_ring(4))));
}

BOOST_AUTO_TEST_CASE(metropolis_hastings_is_symmetric_doubly_stochastic) {
  for (const digraph& g : {make_ring(9), make_star(7, 2), make_torus(3, 5), make_exponential(12),
                           make_random_regular(20, 5, 3), make_tree(10, 3, 0).reversed()}) {
    if (!g.is_symmetric()) {
      BOOST_CHECK_THROW((void)metropolis_hastings(g), topology_error);
      continue;
    }
    const weight_matrix w = metropolis_hastings(g);
    BOOST_TEST(is_symmetric(w));
    BOOST_TEST(is_doubly_stochastic(w));
    BOOST_TEST(respects_graph(w, g));
  }
  // Star of 7: leaf-centre weight 1/(1 + 6); centre keeps 1 - 6/7.
  const weight_matrix star = metropolis_hastings(make_star(7, 2));
  BOOST_TEST(std::abs(star(0, 2) - 1.0 / 7) < 1e-15);
  BOOST_TEST(std::abs(star(2, 2) - 1.0 / 7) < 1e-15);
  BOOST_TEST(std::abs(star(0, 0) - 6.0 / 7) < 1e-15);
}

BOOST_AUTO_TEST_CASE(spectral_gaps) {
  BOOST_TEST(std::abs(spectral_gap(row_stochastic(make_complete(8))) - 1.0) < 1e-9);
  const double closed_form = 1.0 - std::abs((1.0 + std::polar(1.0, 2 * M_PI / 16)) / 2.0);
  const double ring_gap = spectral_gap(row_stochastic(make_directed_ring(16)));
  BOOST_TEST(std::abs(ring_gap - closed_form) < 1e-9);
  BOOST_TEST(ring_gap < 0.05);
  // The same ring's push matrix is its transpose: same spectrum.
  BOOST_TEST(std::abs(spectral_gap(column_stochastic(make_directed_ring(16))) - closed_form) <
             1e-9);
  // Exponential graph of 16: comfortably connected (|lambda_2| about 0.6 or less).
  BOOST_TEST(spectral_gap(row_stochastic(make_exponential(16))) > 0.3);
  // Two disconnected halves: eigenvalue 1 twice, gap 0.
  const digraph halves = make_from_edges(4, {{0, 1}, {1, 0}, {2, 3}, {3, 2}});
  BOOST_TEST(std::abs(spectral_gap(row_stochastic(halves))) < 1e-9);
  BOOST_TEST(spectral_gap(weight_matrix::Ones(1, 1)) == 1.0);
  BOOST_TEST(std::isnan(spectral_gap(weight_matrix::Identity(2049, 2049))));
  BOOST_CHECK_THROW((void)spectral_gap(weight_matrix(2, 3)), topology_error);
}

namespace {

/// Reference: second largest eigenvalue modulus from one dense EigenSolver call.
double dense_gap(const weight_matrix& w) {
  Eigen::VectorXd m = Eigen::EigenSolver<weight_matrix>(w, false).eigenvalues().cwiseAbs();
  std::sort(m.data(), m.data() + m.size(), std::greater<>());
  return 1.0 - m(1);
}

/// Symmetric pattern but not reversible (w01 w12 w20 != w02 w21 w10): complex spectrum.
weight_matrix rotating_triangle() {
  weight_matrix w(3, 3);
  w << 0.2, 0.6, 0.2, 0.2, 0.2, 0.6, 0.6, 0.2, 0.2;
  return w;
}

}  // namespace

BOOST_AUTO_TEST_CASE(spectral_gap_agrees_with_a_direct_dense_solve) {
  // Symmetric-pattern matrices take the reversible (symmetric solver) path,
  // directed ones the general path, reducible ones are split into blocks.
  digraph chorded = make_directed_ring(10);
  chorded.add_edge(0, 5);
  chorded.add_edge(3, 8);
  const std::vector<weight_matrix> cases{
    row_stochastic(make_exponential(12)),
    row_stochastic(make_star(9, 3)),
    column_stochastic(make_torus(3, 4)),
    metropolis_hastings(make_random_regular(24, 3, 9)),
    row_stochastic(chorded),
    column_stochastic(chorded),
    row_stochastic(make_from_edges(5, {{0, 1}, {1, 2}, {2, 1}, {3, 4}})),
    rotating_triangle()};
  for (std::size_t k = 0; k < cases.size(); ++k) {
    BOOST_TEST_CONTEXT("case " << k) {
      BOOST_TEST(std::abs(spectral_gap(cases[k]) - dense_gap(cases[k])) < 1e-9);
    }
  }
  // A tree's 0/1 pull matrix is nilpotent apart from the root: eigenvalues 1 and 0, exactly.
  const digraph tree = make_tree(40, 1, 0);  // a path: one Jordan block of size 39
  weight_matrix r = weight_matrix::Zero(40, 40);
  r(0, 0) = 1;
  for (std::uint32_t i = 1; i < 40; ++i)
    r(i, tree.in(i).front()) = 1;
  BOOST_TEST(spectral_gap(r) == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()
