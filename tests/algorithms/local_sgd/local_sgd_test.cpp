/// Local SGD (ALGORITHMS.md §8): H local steps, then the ring averages the
/// models; reaches the quickstart target; deterministic; reaches the target over lossy acknowledged
/// links.
#include <boost/test/unit_test.hpp>

#include "ring_fixtures.hpp"

namespace t = atrain::test;

BOOST_AUTO_TEST_SUITE(local_sgd)

BOOST_AUTO_TEST_CASE(reaches_the_quickstart_target_on_8_nodes) {
  const auto r = t::ring_run("local_sgd.textproto", {});
  BOOST_REQUIRE(r.has_time_to_target());
  BOOST_TEST(r.final().test_accuracy() >= 0.845);
  BOOST_TEST_MESSAGE("local_sgd: time to 0.845 " << r.time_to_target() << " s (virtual), "
                                                 << r.gradients_total() << " gradients");
  const double rounds = t::check_ring_traffic(r, 124);  // 123 features + bias
  // One all-reduce per H = 4 gradients.
  const double grads = static_cast<double>(r.per_node(0).gradients());
  BOOST_TEST(rounds <= grads / 4 + 1);
  BOOST_TEST(rounds >= grads / 4 - 1);
}

BOOST_AUTO_TEST_CASE(ring_traffic_on_5_nodes_with_one_local_step) {
  // d = 124 is not divisible by 5: chunks of 25 and 24 floats.
  const auto r =
    t::ring_run("local_sgd.textproto", {"algorithm.local_sgd.local_steps=1", "stop.time_seconds=1",
                                        "stop.stop_at_target=false", "nodes=5"});
  t::check_ring_traffic(r, 124);
}

BOOST_AUTO_TEST_CASE(same_seed_same_trace) {
  t::expect_replay("local_sgd.textproto");
}

BOOST_AUTO_TEST_CASE(reaches_the_target_over_lossy_acknowledged_links) {
  t::expect_target_over_lossy_links("local_sgd.textproto");
}

BOOST_AUTO_TEST_SUITE_END()
