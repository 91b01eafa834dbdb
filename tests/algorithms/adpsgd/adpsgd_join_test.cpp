/// AD-PSGD joins (docs/RELIABILITY.md "Joining nodes"): active nodes pick
/// partners among the neighbours present (nobody waits on a node that is
/// not there yet), a joiner takes a live neighbour's model, and every
/// exchange keeps its pair's sum.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "algorithms/adpsgd/adpsgd.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(adpsgd_join)

BOOST_AUTO_TEST_CASE(twelve_nodes_of_which_four_join_and_nobody_waits_for_them) {
  const std::string joins = "faults.join=[{node: 8 at_seconds: 0.25}, {node: 9 at_seconds: 0.5}, "
                            "{node: 10 at_seconds: 0.75}, {node: 11 at_seconds: 1.0}]";
  g::exchange_book exchanges;
  const auto r = drive(
    "adpsgd.textproto", {"nodes=12", "stop.stop_at_target=false", "stop.time_seconds=1.5", joins},
    [&](const auto&, const auto& probe) { g::harvest_exchanges(probe, exchanges); });
  const auto p = t::config("algorithms/adpsgd.textproto", {"progress=false", "nodes=12", joins});
  BOOST_REQUIRE(r.faults_size() == 4);
  for (int j = 0; j < 4; ++j) {
    const auto& e = r.faults(j).effect();
    BOOST_TEST(r.faults(j).kind() == "join");
    BOOST_TEST(e.find("joined at") != std::string::npos, e);
    BOOST_TEST(names_a_neighbour(*p, 8 + static_cast<std::uint32_t>(j), e), e);
  }
  std::size_t completed = 0, half = 0, with_joiners = 0;
  double worst = 0;
  for (const auto& [key, s] : exchanges) {
    BOOST_TEST(s.passive_count <= 1, "exchange served " << s.passive_count << " times");
    BOOST_TEST(s.active_count <= 1, "exchange completed " << s.active_count << " times");
    if (s.active_count == 0 || s.passive_count == 0) {
      ++half;  // in flight at the stop
      continue;
    }
    ++completed;
    with_joiners += key.first >= 8 || s.passive_node >= 8 ? 1 : 0;
    for (std::size_t j = 0; j < s.active.size(); ++j)
      worst = std::max(worst, std::abs(s.active[j] + s.passive[j]) / (1.0 + std::abs(s.active[j])));
  }
  BOOST_TEST(half <= 6u);  // at most one outstanding exchange per active node
  BOOST_TEST(worst < 1e-6);
  BOOST_TEST(completed > 500u);
  BOOST_TEST(with_joiners > 50u);
  // Nodes present from the start never waited on an absent partner: each
  // stepped about as often as the busiest.
  std::uint64_t most = 0;
  for (int k = 0; k < 8; ++k)
    most = std::max(most, r.per_node(k).gradients());
  for (int k = 0; k < 8; ++k)
    BOOST_TEST(r.per_node(k).gradients() * 10 > most * 9,
               "node " << k << ": " << r.per_node(k).gradients() << " of " << most);
  for (int k = 8; k < 11; ++k)
    BOOST_TEST(r.per_node(k).gradients() > r.per_node(k + 1).gradients());
  BOOST_TEST(r.per_node(11).gradients() > 0u);
  BOOST_TEST(r.has_time_to_target());
  BOOST_TEST_MESSAGE("adpsgd 8 -> 12: " << completed << " exchanges (" << with_joiners
                                        << " with a joiner), worst pair-sum residual " << worst
                                        << "; target at " << r.time_to_target() << " s");
}

BOOST_AUTO_TEST_SUITE_END()
