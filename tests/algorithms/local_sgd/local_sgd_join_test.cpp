/// Local SGD joins (docs/RELIABILITY.md "Joining nodes"): the ring averages
/// the nodes present, so nobody waits on one not there yet; each join
/// freezes the ring at an average boundary and every later average is the
/// mean of exactly its members' models.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "algorithms/local_sgd/local_sgd.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(local_sgd_join)

BOOST_AUTO_TEST_CASE(eight_nodes_grow_to_twelve_and_every_average_is_its_members) {
  std::map<std::uint64_t, std::map<std::uint32_t, ring_use>> averages;
  const auto r =
    drive("local_sgd.textproto",
          {"nodes=12", "stop.stop_at_target=false", "stop.time_seconds=1.5", ring_joins},
          [&](const auto&, const auto& probe) {
            harvest(probe, atrain::local_sgd_take_averages, [&](std::uint32_t i, auto& a) {
              BOOST_TEST(averages[a.round].count(i) == 0u);
              averages[a.round][i] = {a.contributed, a.average, {}};
            });
          });
  expect_ring_joins(r);
  const auto g = check_ring_joins(averages, mean_deviation);
  BOOST_TEST(g.worst < 1e-5);
  expect_ring_grew(g, 2);  // 0.25 s of 10 ms gradients, H = 4, before node 8 is in
  BOOST_TEST(r.has_time_to_target());
  BOOST_TEST_MESSAGE("local_sgd 8 -> 12: averages by ring size"
                     << sizes_of(g) << "; worst deviation " << g.worst << "; target at "
                     << r.time_to_target() << " s");
}

BOOST_AUTO_TEST_SUITE_END()
