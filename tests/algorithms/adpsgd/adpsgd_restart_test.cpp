/// adpsgd's restart tests (split from tests/actors/restart_test.cpp: same cases, same checks).
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

#include "algorithms/adpsgd/adpsgd.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(adpsgd_restart)

BOOST_AUTO_TEST_CASE(adpsgd_workers_restart_from_a_neighbour_and_no_exchange_half_happens) {
  // Ring of 8 (even nodes active, odd passive, or the other way round):
  // node 2 dies at 0.3 s (back at 0.5 s), its neighbour 3 at 0.35 s (back at
  // 0.45 s, while 2 is still dead), node 2 again at 0.7 s (back at 0.8 s).
  g::exchange_book exchanges;
  const std::string crashes = "faults.crash=[{node: 2 at_seconds: 0.3 restart_after_seconds: 0.2}, "
                              "{node: 3 at_seconds: 0.35 restart_after_seconds: 0.1}, "
                              "{node: 2 at_seconds: 0.7 restart_after_seconds: 0.1}]";
  const auto r = drive("adpsgd.textproto", {crashes}, [&](const auto&, const auto& probe) {
    g::harvest_exchanges(probe, exchanges);
  });
  expect_target(r);
  const auto p = t::config("algorithms/adpsgd.textproto", {"progress=false", crashes});
  const std::uint32_t crashed[] = {2, 3, 2};  // the report lists the crashes in spec order
  for (int i = 0; i < 3; ++i) {
    expect_restarted(r, i, "'s model");
    BOOST_TEST(names_a_neighbour(*p, crashed[i], r.faults(i).effect()), r.faults(i).effect());
  }
  std::size_t completed = 0, half = 0, by_replacements = 0;
  double worst = 0;
  for (const auto& [key, s] : exchanges) {
    BOOST_TEST(s.passive_count <= 1, "exchange served " << s.passive_count << " times");
    BOOST_TEST(s.active_count <= 1, "exchange completed " << s.active_count << " times");
    if (key.second > (std::uint64_t{1} << 40))
      ++by_replacements;
    if (s.active_count == 0 || s.passive_count == 0) {
      ++half;  // one side dead (its ledger gone with it) or in flight at the stop
      continue;
    }
    ++completed;
    for (std::size_t j = 0; j < s.active.size(); ++j)
      worst = std::max(worst, std::abs(s.active[j] + s.passive[j]) / (1.0 + std::abs(s.active[j])));
  }
  // Half exchanges: the outstanding one of each active node at the stop, and
  // per crash the exchanges its dead side applied (ledger gone) or its live
  // side gave up at the fence (at most two neighbours each).
  BOOST_TEST(half <= 4u + 3u * 2u);
  BOOST_TEST(worst < 1e-6);
  BOOST_TEST(completed > 500u);
  BOOST_TEST(by_replacements > 0u);  // replacements that are active did exchange
  // Nobody stalls: a neighbour left waiting on a dead partner would stop
  // stepping for good (each crashed node lost at most 0.2 s of the run).
  std::uint64_t most = 0;
  for (const auto& n : r.per_node())
    most = std::max(most, n.gradients());
  for (const auto& n : r.per_node())
    BOOST_TEST(n.gradients() * 2 > most,
               "node " << n.node() << ": " << n.gradients() << " of " << most << " gradients");
  BOOST_TEST_MESSAGE("adpsgd, 3 restarts: "
                     << completed << " exchanges completed, " << half << " half seen, "
                     << by_replacements << " by replacements; worst pair-sum residual " << worst
                     << "; target at " << r.time_to_target() << " s; " << r.faults(0).effect());
}
BOOST_AUTO_TEST_SUITE_END()
