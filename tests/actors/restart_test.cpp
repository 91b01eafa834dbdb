/// Restarts common to every algorithm: a whole-node restart is the worker
/// restart where the worker is the node, and a run with a restart replays
/// exactly. Each algorithm's own restart checks (its invariant across the
/// restart, against a computation of the test's own) are in
/// tests/algorithms/NAME/NAME_restart_test.cpp (fixtures: restart_fixtures.hpp).
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
#include "algorithms/allreduce/allreduce.hpp"
#include "algorithms/async_ps/async_ps.hpp"
#include "algorithms/dpsgd/dpsgd.hpp"
#include "algorithms/local_sgd/local_sgd.hpp"
#include "algorithms/loscar/loscar.hpp"
#include "fixtures.hpp"
#include "gossip_fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(restart)

BOOST_AUTO_TEST_CASE(a_whole_node_restart_is_the_worker_restart_where_the_worker_is_the_node) {
  // Every algorithm but R-FAST keeps nothing on node 3 but its worker (the
  // parameter server and the LOSCAR aggregator are on node 0): crashing the
  // whole node and restarting it must be, event for event, the worker's
  // crash and restart (same trace hash), and end the same.
  auto run = [](const char* file, bool whole) {
    const std::string crash = std::string{"faults.crash=[{node: 3 at_seconds: 0.2 "} +
                              (whole ? "whole_node: true " : "") + "restart_after_seconds: 0.1}]";
    auto r = atrain::run_experiment(
      t::config(std::string{"algorithms/"} + file + ".textproto",
                {"progress=false", "stop.time_seconds=0.8", "stop.stop_at_target=false", crash}));
    BOOST_REQUIRE(r);
    BOOST_TEST(r->error().empty(), r->error());
    return *r;
  };
  for (const char* file : {"async_ps", "adpsgd", "dpsgd", "allreduce", "local_sgd", "sgp", "osgp",
                           "loscar", "dasgd", "diloco"})
    BOOST_TEST_CONTEXT(file) {
      const auto whole = run(file, true);
      const auto worker = run(file, false);
      expect_restarted(whole, 0, "restarted at");
      BOOST_TEST(whole.faults(0).effect() == worker.faults(0).effect());
      BOOST_TEST(whole.faults(0).what().find("worker and gradient buffer") != std::string::npos,
                 whole.faults(0).what());
      BOOST_TEST(whole.trace_hash() == worker.trace_hash());
      BOOST_TEST(whole.trace_events() == worker.trace_events());
      BOOST_TEST(whole.final().train_loss() == worker.final().train_loss());
      BOOST_TEST(whole.per_node(3).gradients() > 0u);
    }
}

BOOST_AUTO_TEST_CASE(same_spec_and_seed_replay_exactly_with_a_restart) {
  for (const char* file : {"async_ps", "adpsgd", "dpsgd", "allreduce", "local_sgd", "sgp", "osgp",
                           "loscar", "dasgd", "diloco"})
    BOOST_TEST_CONTEXT(file) {
      t::expect_replay([&](std::uint64_t seed) {
        return t::config(std::string{"algorithms/"} + file + ".textproto",
                         {"seed=" + std::to_string(seed), "progress=false", "stop.time_seconds=0.8",
                          "stop.stop_at_target=false",
                          "faults.crash=[{node: 3 at_seconds: 0.2 restart_after_seconds: 0.1}]"});
      });
    }
}

BOOST_AUTO_TEST_SUITE_END()
