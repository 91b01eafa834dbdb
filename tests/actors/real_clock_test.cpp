/// The same actors on CAF's threaded scheduler in real time.
#include <boost/test/unit_test.hpp>

#include "fixtures.hpp"

namespace t = atrain::test;

BOOST_AUTO_TEST_SUITE(real_clock)

BOOST_AUTO_TEST_CASE(quickstart_real_reaches_the_target) {
  auto plan = t::config("quickstart_real.textproto", {"progress=false"});
  auto report = atrain::run_experiment(plan);
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->clock() == "REAL");
  BOOST_TEST(report->has_time_to_target());
  // Asynchronous nodes keep stepping between the evaluation that saw the
  // target and the final one, so the final figure may wobble below it.
  bool seen = false;
  for (const auto& m : report->metrics())
    seen = seen || m.test_accuracy() >= 0.845;
  BOOST_TEST(seen);
  BOOST_TEST(report->final().test_accuracy() > 0.80);
  BOOST_TEST(report->gradients_total() > 0u);
  BOOST_TEST(report->mass_residual() < 1e-9);
  BOOST_TEST_MESSAGE("reached " << report->final().test_accuracy() << " at "
                                << report->time_to_target() << " s, " << report->gradients_total()
                                << " gradients");
}

BOOST_AUTO_TEST_SUITE_END()
