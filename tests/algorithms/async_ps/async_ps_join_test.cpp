/// async_ps joins (docs/RELIABILITY.md "Joining nodes"): a new worker takes
/// the server's current model and sends gradients from there.
#include <boost/test/unit_test.hpp>

#include <set>
#include <string>
#include <vector>

#include "algorithms/async_ps/async_ps.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(async_ps_join)

BOOST_AUTO_TEST_CASE(new_workers_take_the_servers_model_and_are_applied_from_their_join_on) {
  // 10 workers planned, 8 at the start; 8 joins at 0.3 s, 9 at 0.6 s.
  std::vector<atrain::async_ps_applied> ledger;
  std::vector<std::uint64_t> version_at_join(2, 0);
  std::vector<bool> joined(2, false);
  const auto r =
    drive("async_ps.textproto",
          {"nodes=10", "faults.join=[{node: 8 at_seconds: 0.3}, {node: 9 at_seconds: 0.6}]"},
          [&](const auto&, const atrain::run_probe& probe) {
            if (auto view = atrain::async_ps_take(probe.server))
              for (auto& a : view->applied)
                ledger.push_back(std::move(a));
            for (std::size_t j = 0; j < 2; ++j)
              if (!joined[j] && probe.models.size() > 8 + j && probe.models[8 + j] != nullptr &&
                  ledger.size() > 0) {
                joined[j] = true;
                version_at_join[j] = ledger.size();
              }
          });
  expect_target(r);
  BOOST_REQUIRE(r.faults_size() == 2);
  for (int j = 0; j < 2; ++j) {
    BOOST_TEST(r.faults(j).kind() == "join");
    BOOST_TEST(r.faults(j).effect().find("joined at") != std::string::npos, r.faults(j).effect());
    BOOST_TEST(r.faults(j).effect().find("the parameter server's model (version ") !=
                 std::string::npos,
               r.faults(j).effect());
  }
  // Every (worker, seq) applied once; a joiner's gradients were all computed
  // on a model no older than the one the server had when it joined.
  std::set<std::pair<std::uint32_t, std::uint64_t>> seen;
  std::vector<std::size_t> from_joiner(2, 0);
  for (const auto& a : ledger) {
    BOOST_TEST(seen.insert({a.worker, a.seq}).second);
    if (a.worker >= 8) {
      ++from_joiner[a.worker - 8];
      BOOST_TEST(joined[a.worker - 8]);
      BOOST_TEST(a.read_version + 2 >= version_at_join[a.worker - 8],
                 "worker " << a.worker << " read version " << a.read_version);
    }
  }
  BOOST_TEST(from_joiner[0] > from_joiner[1]);
  BOOST_TEST(from_joiner[1] > 0u);
  BOOST_TEST(r.per_node(9).gradients() > 0u);
  BOOST_TEST(r.per_node(0).gradients() > r.per_node(8).gradients());
  BOOST_TEST_MESSAGE("async_ps 8 -> 10 workers: target at "
                     << r.time_to_target() << " s; joiners' gradients applied " << from_joiner[0]
                     << ", " << from_joiner[1] << "; " << r.faults(0).effect());
}

BOOST_AUTO_TEST_CASE(the_servers_node_cannot_join_later) {
  try {
    (void)atrain::test::config("algorithms/async_ps.textproto",
                               {"faults.join=[{node: 0 at_seconds: 0.3}]"});
    BOOST_FAIL("the server's node was allowed to join later");
  } catch (const atrain::spec_error& e) {
    BOOST_TEST(std::string{e.what()}.find("faults.join[0].node: cannot join later") !=
                 std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
