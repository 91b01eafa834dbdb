/// dpsgd's restart tests (split from tests/actors/restart_test.cpp: same cases, same checks).
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "algorithms/dpsgd/dpsgd.hpp"
#include "dpsgd_fixtures.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(dpsgd_restart)

/// D-PSGD with the crashes `crashes` (restarted workers `restarted`): from
/// its own ledger of every node's rounds, the test checks every round that
/// all 8 nodes finished: sum_i x_i^{k+1} = sum_i x_i^k - gamma_k sum_i g_i
/// (W doubly stochastic), and that each node's round k+1 starts from its
/// round-k result, except each replacement's one join.
void check_dpsgd_restarts(const std::string& crashes, const std::set<std::uint32_t>& restarted) {
  std::map<std::uint64_t, std::map<std::uint32_t, atrain::dpsgd_round>> rounds;
  std::map<std::uint32_t, std::vector<std::uint64_t>> order;  // node -> rounds as finished
  const auto r = drive("dpsgd.textproto", {crashes}, [&](const auto&, const auto& probe) {
    harvest(probe, atrain::dpsgd_take_rounds, [&](std::uint32_t i, auto& d) {
      order[i].push_back(d.round);
      BOOST_TEST(rounds[d.round].count(i) == 0u);
      rounds[d.round][i] = std::move(d);
    });
  });
  expect_target(r);
  const auto p = t::config("algorithms/dpsgd.textproto", {"progress=false"});
  int f = 0;
  for (auto k : restarted) {
    expect_restarted(r, f, "joining round ");
    BOOST_TEST(names_a_neighbour(*p, k, r.faults(f).effect()), r.faults(f).effect());
    ++f;
  }
  const auto n = p->nodes();
  std::size_t full = 0;
  double worst = 0;
  for (const auto& [round, by_node] : rounds) {
    if (by_node.size() != n)
      continue;
    ++full;
    worst = std::max(worst, atrain::test::dpsgd::round_residual(by_node));
  }
  // Rounds follow each other, each starting from the previous result, on
  // every node but at a replacement's join: it starts the round after the
  // last one its first incarnation sent (which that one may not have
  // finished) from a neighbour's model.
  std::map<std::uint32_t, std::size_t> joins;
  for (const auto& [i, seq] : order)
    for (std::size_t q = 1; q < seq.size(); ++q) {
      const auto& prev = rounds[seq[q - 1]][i];
      const auto& cur = rounds[seq[q]][i];
      if (seq[q] == seq[q - 1] + 1 && prev.after == cur.before)
        continue;
      ++joins[i];
      BOOST_TEST(restarted.count(i) == 1u,
                 "node " << i << " round " << seq[q - 1] << " then " << seq[q]);
      BOOST_TEST(seq[q] <= seq[q - 1] + 2);
      BOOST_TEST(seq[q] > seq[q - 1]);
    }
  for (auto k : restarted)
    BOOST_TEST(joins[k] <= 1u, "node " << k << " joined " << joins[k] << " times");
  BOOST_TEST(worst < 1e-5);
  BOOST_TEST(full > 50u);
  BOOST_TEST_MESSAGE("dpsgd: " << full << " complete rounds, worst relative average residual "
                               << worst << "; target at " << r.time_to_target() << " s; "
                               << r.faults(0).effect());
}

BOOST_AUTO_TEST_CASE(dpsgd_worker_rejoins_its_round_and_the_average_moves_by_the_gradients_only) {
  // Exponential graph on 8 nodes: node 3 dies at 0.3 s, back at 0.5 s.
  check_dpsgd_restarts("faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}]", {3});
}

BOOST_AUTO_TEST_CASE(dpsgd_neighbours_down_together_both_rejoin) {
  // Nodes 3 and 4 are neighbours and down together from 0.32 to 0.5 s: the
  // round models they sent each other reached only the dead workers. The
  // links hand their last model again to each replacement (before: both
  // waited for ever, 186 gradients in 30 s).
  check_dpsgd_restarts("faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}, "
                       "{node: 4 at_seconds: 0.32 restart_after_seconds: 0.2}]",
                       {3, 4});
}

BOOST_AUTO_TEST_CASE(dpsgd_whole_node_restart_rejoins_like_its_worker) {
  // D-PSGD keeps nothing on a node but its worker: the whole node down from
  // 0.3 to 0.5 s is the worker down, and the same round invariant holds.
  check_dpsgd_restarts("faults.crash=[{node: 3 at_seconds: 0.3 whole_node: true "
                       "restart_after_seconds: 0.2}]",
                       {3});
}
BOOST_AUTO_TEST_SUITE_END()
