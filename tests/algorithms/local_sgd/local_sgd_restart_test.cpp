/// local_sgd's restart tests (split from tests/actors/restart_test.cpp: same cases, same checks).
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

#include "algorithms/local_sgd/local_sgd.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(local_sgd_restart)

BOOST_DATA_TEST_CASE(local_sgd_rank_rejoins_and_every_average_is_the_same_everywhere,
                     boost::unit_test::data::make({"WAIT", "SKIP"}), policy) {
  std::map<std::uint64_t, std::map<std::uint32_t, ring_use>> averages;
  const auto r =
    drive("local_sgd.textproto",
          {"faults.crash=[{node: 5 at_seconds: 0.3 restart_after_seconds: 0.2}]",
           std::string{"algorithm.local_sgd.straggler_policy="} + policy},
          [&](const auto&, const auto& probe) {
            harvest(probe, atrain::local_sgd_take_averages, [&](std::uint32_t i, auto& a) {
              BOOST_TEST(averages[a.round].count(i) == 0u);
              averages[a.round][i] = {a.contributed, a.average, {}};
            });
          });
  expect_target(r);
  expect_restarted(r, 0, "joining the ring at round ");
  const auto [full, worst] = check_ring(averages, 8, mean_deviation);
  BOOST_TEST(worst < 1e-5);
  BOOST_TEST(full > 10u);
  BOOST_TEST_MESSAGE("local_sgd " << policy << ": " << averages.size() << " averages, " << full
                                  << " completed by all 8, worst deviation " << worst
                                  << "; target at " << r.time_to_target() << " s; "
                                  << r.faults(0).effect());
}
BOOST_AUTO_TEST_SUITE_END()
