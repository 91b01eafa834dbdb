/// SGP and OSGP joins (docs/RELIABILITY.md "Joining nodes"): a message whose
/// peer is not in the run stays with its sender and nobody waits for one
/// from a source not in the run; a joiner takes half of a live node's (x, w)
/// and is in everywhere from one step on. Checked after every scheduler
/// event, independently of the actors' own sums: the mass of the nodes in
/// the run plus the mass in flight stays that of the 8 first nodes.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/sgp/sgp.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;

namespace atrain::test::pushsum_join {

/// The push-sum account: per node the ledger entries read so far, the
/// messages sent and not yet added, the descents, and the worst residuals.
struct mass_account {
  std::vector<std::size_t> sent, added, descents, donated;
  std::map<std::uint32_t, atrain::pushsum_sent> given;  // joiner -> half given, not yet taken
  std::map<std::pair<std::uint32_t, std::uint64_t>, atrain::pushsum_sent> flight;  // (from, step)
  std::map<std::uint32_t, std::uint64_t> join_step;  // joiner -> the step it joined at
  std::vector<double> descended;                     // sum of gamma g
  double worst_w = 0, worst_x = 0;
  std::size_t checks = 0, to_absent = 0;

  explicit mass_account(std::size_t n, std::size_t dim)
    : sent(n), added(n), descents(n), donated(n), descended(dim, 0.0) {}

  void read(const atrain::run_plan& plan, const atrain::run_probe& probe) {
    const auto& states = probe.states<atrain::pushsum_node>();
    std::vector<const atrain::pushsum_node*> in(states.size(), nullptr);
    for (std::uint32_t i = 0; i < states.size(); ++i)
      if (states[i] != nullptr && (!plan.join_of(i) || states[i]->joined))
        in[i] = states[i];
    // Before the start and after the stop some nodes are not shown: no account then.
    for (std::uint32_t i = 0; i < in.size(); ++i)
      if (in[i] == nullptr && (!plan.join_of(i) || join_step.count(i) > 0))
        return;
    for (std::uint32_t i = 0; i < in.size(); ++i) {
      if (in[i] == nullptr)
        continue;
      const auto& s = *in[i];
      if (s.joined && join_step.emplace(i, s.steps).second) {
        sent[i] = added[i] = descents[i] = donated[i] = 0;
        given.erase(i);  // the half is its own (x, w) now
      }
      for (; donated[i] < s.donated.size(); ++donated[i])
        if (join_step.count(s.donated[donated[i]].to) == 0)
          given[s.donated[donated[i]].to] = s.donated[donated[i]];
      for (; sent[i] < s.sent.size(); ++sent[i]) {
        const auto& m = s.sent[sent[i]];
        const auto joined = join_step.find(m.to);
        if (plan.join_of(m.to) && (joined == join_step.end() || m.step < joined->second))
          ++to_absent;  // sent before the receiver was in
        flight[{i, m.step}] = m;
      }
      for (; descents[i] < s.descents.size(); ++descents[i]) {
        const auto& d = s.descents[descents[i]];
        for (std::size_t j = 0; j < descended.size(); ++j)
          descended[j] += d.gamma * d.g[j];
      }
    }
    for (std::uint32_t i = 0; i < in.size(); ++i)
      for (; in[i] != nullptr && added[i] < in[i]->added.size(); ++added[i]) {
        const auto& a = in[i]->added[added[i]];
        BOOST_REQUIRE(flight.erase({a.from, a.step}) == 1u);
      }
    double w = 0;
    std::vector<double> x(descended);
    for (const auto* s : in)
      if (s != nullptr) {
        w += s->w;
        for (std::size_t j = 0; j < x.size(); ++j)
          x[j] += s->x[j];
      }
    for (const auto& [k, m] : given) {  // in the supervisor's hands, on its way to the joiner
      w += m.w;
      for (std::size_t j = 0; j < x.size(); ++j)
        x[j] += m.x.ptr()[j];
    }
    for (const auto& [key, m] : flight) {
      w += m.w;
      for (std::size_t j = 0; j < x.size(); ++j)
        x[j] += m.x.ptr()[j];
    }
    worst_w = std::max(worst_w, std::abs(w - 8.0));
    for (std::size_t j = 0; j < x.size(); ++j)
      worst_x = std::max(worst_x, std::abs(x[j] - 8.0 * plan.x0[j]) / (1.0 + std::abs(x[j])));
    ++checks;
  }
};

}  // namespace atrain::test::pushsum_join

using atrain::test::pushsum_join::mass_account;

BOOST_AUTO_TEST_SUITE(sgp_join)

BOOST_DATA_TEST_CASE(eight_nodes_grow_to_twelve_and_the_mass_stays,
                     boost::unit_test::data::make({"sgp", "osgp"}), algo) {
  const std::string file = std::string{algo} + ".textproto";
  const std::vector<std::string> sets{"nodes=12", "stop.stop_at_target=false",
                                      "stop.time_seconds=1.5", atrain::test::restart::ring_joins};
  const auto plan = t::config("algorithms/" + file, sets);
  mass_account account{plan->nodes(), plan->dim()};
  const auto r = atrain::test::restart::drive(
    file, sets, [&](const auto& p, const auto& probe) { account.read(p, probe); });
  BOOST_TEST(r.has_time_to_target());
  BOOST_REQUIRE(r.faults_size() == 4);
  for (int j = 0; j < 4; ++j) {
    const auto& e = r.faults(j).effect();
    BOOST_TEST(r.faults(j).kind() == "join");
    BOOST_TEST(e.find("half of node ") != std::string::npos, e);
    BOOST_TEST(e.find("(the run has " + std::to_string(9 + j) + " nodes from then on)") !=
                 std::string::npos,
               e);
  }
  BOOST_REQUIRE(account.join_step.size() == 4u);
  BOOST_TEST(account.join_step.at(8) >= 10u);  // 0.25 s of 10 ms gradients without waiting
  BOOST_TEST(account.to_absent == 0u);
  BOOST_TEST(account.worst_w < 1e-12);
  BOOST_TEST(account.worst_x < 1e-9);
  BOOST_TEST(account.flight.size() <= 24u);  // nothing piles up for a node not in the run
  for (std::uint32_t k = 8; k < 12; ++k)
    BOOST_TEST(r.per_node(k).gradients() > 10u);
  BOOST_TEST_MESSAGE(algo << " 8 -> 12: " << account.checks << " checks, worst |sum w - 8| "
                          << account.worst_w << ", worst x residual " << account.worst_x
                          << "; joined at steps " << account.join_step.at(8) << ", "
                          << account.join_step.at(9) << ", " << account.join_step.at(10) << ", "
                          << account.join_step.at(11) << "; target at " << r.time_to_target()
                          << " s; " << r.faults(3).effect());
}

BOOST_AUTO_TEST_CASE(joins_with_crashes_are_refused) {
  const std::string join = "faults.join=[{node: 3 at_seconds: 0.5}]";
  for (const char* algo : {"sgp", "osgp"}) {
    const std::string file = std::string{"algorithms/"} + algo + ".textproto";
    const auto msg = t::config_refusal(
      file, {join, "faults.crash=[{node: 1 at_seconds: 0.7 restart_after_seconds: 0.1}]"});
    BOOST_TEST(msg.find("faults.crash: sgp and osgp cannot combine crashes with joins") !=
                 std::string::npos,
               msg);
    BOOST_TEST(t::config_refusal(file, {join}).empty());
  }
}

// A run that stops at the target reports when it reached it, even when the
// evaluation at the stop (after later events of the same instant) is just
// below: SGP, seed 2, stops at 0.75 s (0.8451 at the periodic evaluation,
// 0.8449 at the stop's).
BOOST_AUTO_TEST_CASE(a_run_stopped_at_the_target_reports_its_time_to_target) {
  const auto plan = t::config("algorithms/sgp.textproto", {"progress=false", "seed=2", "nodes=12",
                                                           atrain::test::restart::ring_joins});
  const auto r = atrain::run_experiment(plan);
  BOOST_REQUIRE(r);
  BOOST_TEST(r->stop_reason() == "target accuracy reached");
  BOOST_REQUIRE(r->has_time_to_target());
  BOOST_TEST(r->time_to_target() == r->duration_seconds());
  BOOST_TEST(r->final().test_accuracy() < 0.845);  // the case this test is about
}

BOOST_AUTO_TEST_SUITE_END()
