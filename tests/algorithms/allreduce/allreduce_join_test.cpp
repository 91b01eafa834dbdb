/// Ring-AllReduce joins (docs/RELIABILITY.md "Joining nodes"): the ring runs
/// over the nodes present, so nobody waits on one not there yet; each join
/// freezes the ring at a step boundary and it runs over the new members from
/// the next round, every step's sum being exactly its members' gradients.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "algorithms/allreduce/allreduce.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(allreduce_join)

BOOST_DATA_TEST_CASE(eight_nodes_grow_to_twelve_and_every_sum_is_its_members,
                     boost::unit_test::data::make({"WAIT", "SKIP"}), policy) {
  std::map<std::uint64_t, std::map<std::uint32_t, ring_use>> steps;
  // Per step and node: gradients it put in, and the ring's count of the step.
  std::map<std::uint64_t, std::map<std::uint32_t, std::pair<double, double>>> counts;
  const auto r =
    drive("allreduce.textproto",
          {"nodes=12", "stop.time_seconds=6", ring_joins,
           std::string{"algorithm.allreduce.straggler_policy="} + policy},
          [&](const auto&, const auto& probe) {
            harvest(probe, atrain::allreduce_take_steps, [&](std::uint32_t i, auto& e) {
              BOOST_TEST(steps[e.step].count(i) == 0u);
              steps[e.step][i] = {e.contributed, e.x, e.sum};
              counts[e.step][i] = {e.count, e.total};
            });
          });
  expect_ring_joins(r);
  const auto g = check_ring_joins(steps, sum_deviation);
  BOOST_TEST(g.worst < 1e-5);
  // The step's count is its members' gradients (WAIT: one each).
  for (auto it = counts.begin(); it != counts.end() && std::next(it) != counts.end(); ++it) {
    double put_in = 0;
    for (const auto& [i, c] : it->second) {
      put_in += c.first;
      BOOST_TEST(c.second == it->second.begin()->second.second);
    }
    BOOST_TEST(put_in == it->second.begin()->second.second, "step " << it->first);
  }
  // A step takes ~50 ms (2(n-1) chunk hops of 2 ms after a 10 ms gradient):
  // 0.25 s before node 8 is in.
  expect_ring_grew(g, 3);
  expect_target(r);
  for (std::uint32_t k = 8; k < 11; ++k)
    BOOST_TEST(r.per_node(k).gradients() > r.per_node(k + 1).gradients());
  BOOST_TEST_MESSAGE("allreduce " << policy << " 8 -> 12: steps by ring size" << sizes_of(g)
                                  << "; worst sum deviation " << g.worst << "; target at "
                                  << r.time_to_target() << " s; " << r.faults(3).effect());
}

BOOST_AUTO_TEST_SUITE_END()
