/// SGP and OSGP restarts: the replacement takes half a neighbour's push-sum
/// mass, and the living nodes' mass (plus what is in flight) is kept.
#include <boost/test/unit_test.hpp>

#include "sgp_ledger_check.hpp"

namespace t = atrain::test;
using namespace atrain::test::sgp_check;

BOOST_AUTO_TEST_SUITE(sgp_restart)

BOOST_AUTO_TEST_CASE(a_restarted_worker_takes_half_a_neighbours_mass_and_the_living_keep_theirs) {
  for (const char* algo : {"sgp", "osgp"}) {
    auto plan = t::config(std::string{"algorithms/"} + algo + ".textproto",
                          {"progress=false", "link.loss=0.1", "link.duplicate=0.2",
                           "link.reorder=0.3", "link.reorder_delay_seconds=0.005",
                           "faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}]",
                           "faults.partition=[{side_a: [3] from_seconds: 0.25 to_seconds: 0.55}]"});
    ledger_check check{*plan, max_ahead(*plan)};
    const auto report = run_checked(plan, check);
    BOOST_TEST(report.error().empty(), report.error());
    BOOST_TEST(report.stop_reason() == "target accuracy reached");
    BOOST_REQUIRE(check.joins.size() == 1u);
    const auto& j = check.joins.front();
    BOOST_TEST(j.node == 3u);
    BOOST_TEST(j.ratio_error == 0.0);
    BOOST_TEST(j.w_before == 8.0);
    BOOST_TEST(j.w_dead > 0.0);
    BOOST_TEST(j.w_after < j.w_before);
    BOOST_TEST(check.checks > j.checks_at_join + 1000);
    BOOST_TEST(check.worst_w < 1e-13);
    BOOST_TEST(check.worst_x < 1e-12);
    BOOST_TEST(check.fenced_drops > 0u);  // and each was a lost one (checked per event)
    BOOST_TEST(report.packets_retransmitted() > 0u);
    std::string effect;
    for (const auto& f : report.faults())
      if (f.kind() == "crash")
        effect = f.effect();
    BOOST_TEST(effect.find("restarted at") != std::string::npos, effect);
    BOOST_TEST(effect.find("half of node " + std::to_string(j.donor) + "'s push-sum state") !=
                 std::string::npos,
               effect);
    BOOST_TEST(effect.find("joining at step " + std::to_string(j.step)) != std::string::npos,
               effect);
    BOOST_TEST(effect.find("and " + std::to_string(j.sent_to_it) + " messages") !=
                 std::string::npos,
               effect);
    BOOST_TEST(report.per_node(3).gradients() > j.step);
    BOOST_TEST_MESSAGE(
      algo << " restart: sum w (living + in flight) " << j.w_before << " -> " << j.w_after
           << " at the join (dead worker's w " << j.w_dead << ", " << j.lost_messages
           << " messages in flight to it lost, w " << j.w_lost_messages << "; "
           << check.fenced_drops << " of them dropped on arrival); donor " << j.donor
           << ", ratio error " << j.ratio_error << "; then " << check.checks - j.checks_at_join
           << " checks, worst residual w " << check.worst_w << " x " << check.worst_x
           << "; target at " << report.time_to_target() << " s; " << effect);
  }
}

BOOST_AUTO_TEST_SUITE_END()
