/// async_ps's restart tests (split from tests/actors/restart_test.cpp: same cases, same checks).
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

#include "algorithms/async_ps/async_ps.hpp"
#include "fixtures.hpp"
#include "restart_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

using namespace atrain::test::restart;

BOOST_AUTO_TEST_SUITE(async_ps_restart)

BOOST_AUTO_TEST_CASE(async_ps_worker_restarts_from_the_servers_model_and_nothing_is_applied_twice) {
  // Worker 3 dies at 0.3 s and is back 0.2 s later; the server is node 0.
  // The test replays the server's model from its ledger alone (x^0 minus
  // every applied gradient, in double) and keeps it per version.
  const std::uint32_t k = 3;
  std::vector<std::vector<double>> model_at;  // index = server version
  std::vector<atrain::async_ps_applied> ledger;
  caf::actor_addr first_worker;
  std::size_t applied_at_crash = 0, applied_at_start = 0;
  std::vector<float> first_x;
  bool running = false, crashed = false;
  const auto r = drive(
    "async_ps.textproto", {"faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}]"},
    [&](const atrain::run_plan& plan, atrain::run_probe& probe) {
      auto view = atrain::async_ps_take(probe.server);
      if (!view)
        return;
      if (model_at.empty())
        model_at.emplace_back(plan.x0.begin(), plan.x0.end());
      const auto& algo = plan.spec.algorithm().async_ps();
      for (auto& a : view->applied) {
        auto y = model_at.back();
        const double gamma =
          algo.step_size() / (1.0 + algo.decay() * static_cast<double>(ledger.size()));
        for (std::size_t j = 0; j < y.size(); ++j)
          y[j] -= gamma * static_cast<double>(a.g.ptr()[j]);
        model_at.push_back(std::move(y));
        ledger.push_back(std::move(a));
      }
      if (k >= probe.workers.size())
        return;
      if (!running && probe.models[k] != nullptr) {
        running = true;
        first_worker = probe.workers[k];
      }
      if (running && !crashed && probe.models[k] == nullptr) {  // the first incarnation is gone
        crashed = true;
        applied_at_crash = ledger.size();
      }
      if (crashed && first_x.empty() && probe.models[k] != nullptr) {  // the replacement runs
        BOOST_TEST((probe.workers[k] != first_worker));
        first_x = *probe.models[k];
        applied_at_start = ledger.size();
      }
    });
  expect_target(r);
  expect_restarted(r, 0, "the parameter server's model (version ");
  BOOST_REQUIRE(!first_x.empty());
  // Every (worker, seq) applied once, in version order.
  std::set<std::pair<std::uint32_t, std::uint64_t>> seen;
  for (std::size_t pos = 0; pos < ledger.size(); ++pos) {
    BOOST_TEST(seen.insert({ledger[pos].worker, ledger[pos].seq}).second);
    BOOST_TEST(ledger[pos].version == pos);
  }
  // The replacement's first gradient was computed on the model the server
  // had when it took the worker back: version V, no older than the crash.
  auto first = std::find_if(ledger.begin() + static_cast<std::ptrdiff_t>(applied_at_start),
                            ledger.end(), [&](const auto& a) { return a.worker == k; });
  BOOST_REQUIRE(first != ledger.end());
  const auto v = first->read_version;
  BOOST_TEST(v >= applied_at_crash);
  BOOST_TEST(v <= applied_at_start);
  BOOST_REQUIRE(v < model_at.size());
  double worst = 0;
  for (std::size_t j = 0; j < first_x.size(); ++j)
    worst =
      std::max(worst, std::abs(first_x[j] - model_at[v][j]) / (1.0 + std::abs(model_at[v][j])));
  BOOST_TEST(worst < 1e-6);
  // The dead incarnation's seqs and the replacement's follow each other with
  // at most the one number the fence skipped.
  std::vector<std::uint64_t> seqs;
  for (const auto& a : ledger)
    if (a.worker == k)
      seqs.push_back(a.seq);
  std::size_t gaps = 0;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const auto expected = (i == 0 ? 0 : seqs[i - 1]) + 1;
    BOOST_TEST(seqs[i] >= expected);
    BOOST_TEST(seqs[i] <= expected + 1);
    gaps += seqs[i] - expected;
  }
  BOOST_TEST(gaps <= 1u);
  BOOST_TEST(r.per_node(k).gradients() > 0u);
  BOOST_TEST_MESSAGE("async_ps: worker 3 restarted from server version "
                     << v << " (" << applied_at_crash << " applied at the crash, "
                     << applied_at_start << " at its start), max deviation " << worst
                     << "; target at " << r.time_to_target() << " s; " << r.faults(0).effect());
}

BOOST_AUTO_TEST_CASE(async_ps_gradient_of_the_dead_worker_still_in_flight_is_never_applied) {
  // Node 3 is cut off from 0.25 s to 0.7 s: its gradient sent then waits in
  // the link's retransmissions when it dies at 0.3 s, and reaches the server
  // after the replacement rejoined (0.5 s) — as a duplicate of the number
  // the server skipped, never as a protocol violation, never applied.
  std::vector<atrain::async_ps_applied> ledger;
  const auto r = drive("async_ps.textproto",
                       {"faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}]",
                        "faults.partition=[{side_a: [3] from_seconds: 0.25 to_seconds: 0.7}]"},
                       [&](const auto&, const auto& probe) {
                         if (auto view = atrain::async_ps_take(probe.server))
                           for (auto& a : view->applied)
                             ledger.push_back(std::move(a));
                       });
  expect_target(r);
  BOOST_TEST(r.packets_rejected() == 0u);
  BOOST_TEST(r.packets_retransmitted() > 0u);
  std::vector<std::uint64_t> seqs;
  for (const auto& a : ledger)
    if (a.worker == 3)
      seqs.push_back(a.seq);
  BOOST_REQUIRE(seqs.size() > 2u);
  std::size_t gaps = 0;  // the one number skipped for the dead worker's gradient
  for (std::size_t i = 1; i < seqs.size(); ++i)
    gaps += seqs[i] - seqs[i - 1] - 1;
  BOOST_TEST(gaps == 1u);
}
BOOST_AUTO_TEST_SUITE_END()
