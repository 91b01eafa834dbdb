/// dasgd's restart tests (split from tests/actors/restart_test.cpp: same cases, same checks).
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

#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(dasgd_restart)

BOOST_AUTO_TEST_CASE(dasgd_run_with_a_restarted_worker_reaches_its_target) {
  // The exactness of the handover is checked in dasgd_test.cpp (ledgers).
  // Also with batching, and with coalescing on bandwidth-bound links.
  for (const auto& extra : {std::vector<std::string>{},
                            {"algorithm.dasgd.broadcast_every=3"},
                            {"algorithm.dasgd.broadcast_every=3", "algorithm.dasgd.coalesce=true",
                             "link.bandwidth_bytes_per_second=20000"}})
    BOOST_TEST_CONTEXT(extra.size() << " overrides") {
      auto overrides = extra;
      overrides.push_back("faults.crash=[{node: 5 at_seconds: 0.3 restart_after_seconds: 0.2}]");
      const auto r = drive("dasgd.textproto", overrides, [](const auto&, const auto&) {});
      expect_target(r);
      expect_restarted(r, 0, "node 0's model and its record of ");
      BOOST_TEST(r.per_node(5).gradients() > 0u);
      BOOST_TEST(r.packets_rejected() == 0u);
      BOOST_TEST_MESSAGE("dasgd (" << extra.size() << " overrides): target at "
                                   << r.time_to_target() << " s; " << r.faults(0).effect());
    }
}
BOOST_AUTO_TEST_SUITE_END()
