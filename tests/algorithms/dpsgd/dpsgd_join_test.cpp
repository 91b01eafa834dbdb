/// D-PSGD joins (docs/RELIABILITY.md "Joining nodes"): nodes mix over the
/// nodes in the run, so nobody waits on one not there yet; at each join
/// every node switches its weights at the same round, with the joiner in,
/// so W stays doubly stochastic over the members in every round.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "algorithms/dpsgd/dpsgd.hpp"
#include "dpsgd_fixtures.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(dpsgd_join)

BOOST_AUTO_TEST_CASE(eight_nodes_grow_to_twelve_and_every_round_keeps_the_members_sum) {
  std::map<std::uint64_t, std::map<std::uint32_t, atrain::dpsgd_round>> rounds;
  std::map<std::uint32_t, std::vector<std::uint64_t>> order;  // node -> rounds as finished
  const auto r = drive("dpsgd.textproto", {"nodes=12", "stop.time_seconds=6", ring_joins},
                       [&](const auto&, const auto& probe) {
                         harvest(probe, atrain::dpsgd_take_rounds, [&](std::uint32_t i, auto& d) {
                           order[i].push_back(d.round);
                           BOOST_TEST(rounds[d.round].count(i) == 0u);
                           rounds[d.round][i] = std::move(d);
                         });
                       });
  expect_target(r);
  const auto p =
    t::config("algorithms/dpsgd.textproto", {"progress=false", "nodes=12", ring_joins});
  BOOST_REQUIRE(r.faults_size() == 4);
  for (int j = 0; j < 4; ++j) {
    const auto& e = r.faults(j).effect();
    BOOST_TEST(r.faults(j).kind() == "join");
    BOOST_TEST(names_a_neighbour(*p, 8 + static_cast<std::uint32_t>(j), e), e);
    BOOST_TEST(e.find("mixes over the " + std::to_string(9 + j) + " nodes") != std::string::npos,
               e);
  }
  // Every node's rounds follow each other from the previous result (the
  // joiners' from their join on).
  auto common = std::numeric_limits<std::uint64_t>::max();  // the last round all finished
  for (const auto& [i, seq] : order) {
    common = std::min(common, seq.back());
    for (std::size_t q = 1; q < seq.size(); ++q) {
      BOOST_TEST(seq[q] == seq[q - 1] + 1, "node " << i);
      BOOST_TEST((rounds[seq[q - 1]][i].after == rounds[seq[q]][i].before), "node " << i);
    }
  }
  // In every round the nodes that mixed keep their sum but for the
  // gradient steps: sum x^{k+1} = sum x^k - gamma_k sum g (W doubly
  // stochastic over exactly them), and no round has fewer than the last.
  std::map<std::size_t, std::size_t> by_size;
  std::size_t before_size = 0;
  double worst = 0;
  for (const auto& [k, by_node] : rounds) {
    if (k > common)
      break;
    BOOST_TEST(by_node.size() >= before_size, "round " << k);
    before_size = by_node.size();
    ++by_size[by_node.size()];
    worst = std::max(worst, atrain::test::dpsgd::round_residual(by_node));
  }
  for (std::size_t n = 8; n <= 12; ++n)
    BOOST_TEST(by_size.count(n) == 1u, n << " nodes: no round");
  BOOST_TEST(by_size.begin()->first == 8u);
  BOOST_TEST(by_size[8] >= 5u);  // 0.25 s of 10 ms gradients before node 8 is in
  BOOST_TEST(worst < 1e-5);
  std::string sizes;
  for (const auto& [n, c] : by_size)
    sizes += " " + std::to_string(c) + " of " + std::to_string(n);
  BOOST_TEST_MESSAGE("dpsgd 8 -> 12: rounds by nodes mixing"
                     << sizes << "; worst residual " << worst << "; target at "
                     << r.time_to_target() << " s; " << r.faults(3).effect());
}

BOOST_AUTO_TEST_CASE(joins_are_refused_with_skip_and_with_crashes) {
  const std::string join = "faults.join=[{node: 3 at_seconds: 0.5}]";
  auto msg = t::config_refusal("algorithms/dpsgd.textproto",
                               {join, "algorithm.dpsgd.straggler_policy=SKIP"});
  BOOST_TEST(msg.find("faults.join: dpsgd takes joins with straggler_policy WAIT only") !=
               std::string::npos,
             msg);
  msg = t::config_refusal(
    "algorithms/dpsgd.textproto",
    {join, "faults.crash=[{node: 1 at_seconds: 0.7 restart_after_seconds: 0.1}]"});
  BOOST_TEST(msg.find("faults.crash: dpsgd cannot combine crashes with joins") != std::string::npos,
             msg);
  BOOST_TEST(t::config_refusal("algorithms/dpsgd.textproto", {join}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
