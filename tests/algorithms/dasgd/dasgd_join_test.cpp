/// DASGD joins (docs/RELIABILITY.md "Joining nodes"): a joining node takes a
/// live node's model with the record of the gradients in it, as a restarted
/// one does; every gradient is then applied exactly once at every node, the
/// joiner included, over lossy, duplicating, reordering links.
#include <boost/test/unit_test.hpp>

#include <string>

#include "dasgd_ledger.hpp"

BOOST_AUTO_TEST_SUITE(dasgd_join)

BOOST_AUTO_TEST_CASE(a_joiner_takes_a_donors_record_and_every_gradient_is_applied_once) {
  ledger_run r{t::config(
    "algorithms/dasgd.textproto",
    spec({"nodes=5", "stop.time_seconds=1.2", "link.loss=0.2", "link.latency_seconds=0.003",
          "link.duplicate=0.1", "link.reorder=0.3", "link.reorder_delay_seconds=0.005",
          "faults.join=[{node: 4 at_seconds: 0.3}]"}))};
  BOOST_REQUIRE(r.report.faults_size() == 1);
  const auto& effect = r.report.faults(0).effect();
  BOOST_TEST(r.report.faults(0).kind() == "join");
  BOOST_TEST(effect.find("joined at 0.300000 s with node 0's model and its record of") !=
               std::string::npos,
             effect);
  // The joiner's first model is its donor's (node 0's) at that instant.
  BOOST_REQUIRE(r.joined.count(4) == 1u);
  const auto& [first, all] = r.joined.at(4);
  BOOST_TEST((first == all.at(0)), "the joiner's first model is not node 0's");
  const auto until = static_cast<std::int64_t>((r.report.duration_seconds() - 0.2) * 1e9);
  const auto [missing, twice] = r.missing_and_twice(until);
  std::size_t by_joiner = 0, before = 0;
  for (const auto& [k, c] : r.made) {
    by_joiner += k.first == 4 ? 1 : 0;
    before += k.first == 4 && c.done_ns < 300'000'000 ? 1 : 0;
  }
  BOOST_TEST(missing == 0u);
  BOOST_TEST(twice == 0u);
  BOOST_TEST(by_joiner > 50u);
  BOOST_TEST(before == 0u);  // nothing computed before its join
  BOOST_TEST(r.model_checks > 50u);
  BOOST_TEST(r.worst_model_error < 1e-5);
  BOOST_TEST_MESSAGE("dasgd join at 0.3 s: "
                     << effect << "; " << r.made.size() << " gradients (" << by_joiner
                     << " by the joiner), " << missing << " missing, " << twice
                     << " twice; worst model error " << r.worst_model_error);
}

BOOST_AUTO_TEST_SUITE_END()
