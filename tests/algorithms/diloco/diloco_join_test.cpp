/// DiLoCo joins (docs/RELIABILITY.md "Joining nodes"): the ring averages the
/// pseudo-gradients of the nodes present, so nobody waits on one not there
/// yet; a joiner takes a live rank's outer model and momentum, and every
/// later outer step uses the mean of exactly its members' pseudo-gradients.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "algorithms/diloco/diloco.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(diloco_join)

BOOST_AUTO_TEST_CASE(eight_nodes_grow_to_twelve_and_every_average_is_its_members) {
  std::map<std::uint64_t, std::map<std::uint32_t, ring_use>> syncs;
  std::map<std::uint64_t, std::map<std::uint32_t, std::vector<float>>> outer;
  const auto r =
    drive("diloco.textproto",
          {"nodes=12", "stop.stop_at_target=false", "stop.time_seconds=1.5", ring_joins},
          [&](const auto&, const auto& probe) {
            harvest(probe, atrain::diloco_take_syncs, [&](std::uint32_t i, auto& s) {
              BOOST_TEST(syncs[s.round].count(i) == 0u);
              syncs[s.round][i] = {s.delta, s.average, {}};
              outer[s.round][i] = s.outer;
            });
          });
  expect_ring_joins(r);
  const auto g = check_ring_joins(syncs, mean_deviation);
  BOOST_TEST(g.worst < 1e-5);
  // A joiner's outer model is its donor's: after each outer step every
  // member holds the same one.
  for (const auto& [k, by_node] : outer)
    for (const auto& [i, o] : by_node)
      BOOST_TEST((o == by_node.begin()->second), "sync " << k << ": node " << i);
  expect_ring_grew(g, 1);  // 0.25 s of 10 ms gradients, H = 8, before node 8 is in
  BOOST_TEST(r.has_time_to_target());
  BOOST_TEST_MESSAGE("diloco 8 -> 12: outer steps by ring size"
                     << sizes_of(g) << "; worst deviation " << g.worst << "; target at "
                     << r.time_to_target() << " s");
}

BOOST_AUTO_TEST_SUITE_END()
