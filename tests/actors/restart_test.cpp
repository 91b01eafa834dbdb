/// Supervision (issue 5): a crashed worker of async_ps, AD-PSGD or D-PSGD is
/// respawned with a donor's model while nobody else restarts. Each run must
/// reach its target, keep its algorithm's invariant across the restart
/// (checked against a computation of the test's own) and replay exactly.
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

namespace t = atrain::test;
namespace g = atrain::test::gossip;
using atrain::loscar_merge_record;

namespace {

/// A virtual run of config/algorithms/FILE with `overrides` over links that
/// duplicate and reorder, driven one scheduler event at a time; `each` sees
/// the probe after every event.
template <class Each>
atrain::proto::RunReport drive(const std::string& file, const std::vector<std::string>& overrides,
                               Each each) {
  auto plan = t::config("algorithms/" + file,
                        g::with({"progress=false", "link.duplicate=0.2", "link.reorder=0.3",
                                 "link.reorder_delay_seconds=0.005"},
                                overrides));
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  atrain::virtual_run run{plan, opts};
  while (run.step())
    each(*plan, *probe);
  auto r = run.run();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->error().empty(), r->error());
  return *r;
}

void expect_target(const atrain::proto::RunReport& r) {
  BOOST_TEST(r.stop_reason() == "target accuracy reached");
  BOOST_TEST(r.has_time_to_target());
}

/// Calls fn(i, entry) for every ledger entry take(worker i) hands over.
template <class Take, class Fn>
void harvest(const atrain::run_probe& probe, Take take, Fn fn) {
  for (std::uint32_t i = 0; i < probe.workers.size(); ++i)
    for (auto& e : take(probe.workers[i]))
      fn(i, e);
}

/// The report's record of crash `i`: restarted, with `source` named.
void expect_restarted(const atrain::proto::RunReport& r, int i, const std::string& source) {
  BOOST_REQUIRE(r.faults_size() > i);
  const auto& e = r.faults(i).effect();
  BOOST_TEST(r.faults(i).kind() == "crash");
  BOOST_TEST(e.find("restarted at") != std::string::npos, e);
  BOOST_TEST(e.find(source) != std::string::npos, e);
}

/// "node j's model" for some neighbour j of node k in g_r.
bool names_a_neighbour(const atrain::run_plan& plan, std::uint32_t k, const std::string& effect) {
  for (auto j : plan.topo->g_r.out(k))
    if (effect.find("node " + std::to_string(j) + "'s model") != std::string::npos)
      return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(restart)

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

BOOST_AUTO_TEST_CASE(adpsgd_workers_restart_from_a_neighbour_and_no_exchange_half_happens) {
  // Ring of 8 (even nodes active, odd passive, or the other way round):
  // node 2 dies at 0.3 s (back at 0.5 s), its neighbour 3 at 0.35 s (back at
  // 0.45 s, while 2 is still dead), node 2 again at 0.7 s (back at 0.8 s).
  g::exchange_book exchanges;
  const std::string crashes = "faults.crash=[{node: 2 at_seconds: 0.3 restart_after_seconds: 0.2}, "
                              "{node: 3 at_seconds: 0.35 restart_after_seconds: 0.1}, "
                              "{node: 2 at_seconds: 0.7 restart_after_seconds: 0.1}]";
  const auto r = drive("adpsgd.textproto", {crashes}, [&](const auto&, const auto& probe) {
    g::harvest_exchanges(probe, exchanges);
  });
  expect_target(r);
  const auto p = t::config("algorithms/adpsgd.textproto", {"progress=false", crashes});
  const std::uint32_t crashed[] = {2, 3, 2};  // the report lists the crashes in spec order
  for (int i = 0; i < 3; ++i) {
    expect_restarted(r, i, "'s model");
    BOOST_TEST(names_a_neighbour(*p, crashed[i], r.faults(i).effect()), r.faults(i).effect());
  }
  std::size_t completed = 0, half = 0, by_replacements = 0;
  double worst = 0;
  for (const auto& [key, s] : exchanges) {
    BOOST_TEST(s.passive_count <= 1, "exchange served " << s.passive_count << " times");
    BOOST_TEST(s.active_count <= 1, "exchange completed " << s.active_count << " times");
    if (key.second > (std::uint64_t{1} << 40))
      ++by_replacements;
    if (s.active_count == 0 || s.passive_count == 0) {
      ++half;  // one side dead (its ledger gone with it) or in flight at the stop
      continue;
    }
    ++completed;
    for (std::size_t j = 0; j < s.active.size(); ++j)
      worst = std::max(worst, std::abs(s.active[j] + s.passive[j]) / (1.0 + std::abs(s.active[j])));
  }
  // Half exchanges: the outstanding one of each active node at the stop, and
  // per crash the exchanges its dead side applied (ledger gone) or its live
  // side gave up at the fence (at most two neighbours each).
  BOOST_TEST(half <= 4u + 3u * 2u);
  BOOST_TEST(worst < 1e-6);
  BOOST_TEST(completed > 500u);
  BOOST_TEST(by_replacements > 0u);  // replacements that are active did exchange
  // Nobody stalls: a neighbour left waiting on a dead partner would stop
  // stepping for good (each crashed node lost at most 0.2 s of the run).
  std::uint64_t most = 0;
  for (const auto& n : r.per_node())
    most = std::max(most, n.gradients());
  for (const auto& n : r.per_node())
    BOOST_TEST(n.gradients() * 2 > most,
               "node " << n.node() << ": " << n.gradients() << " of " << most << " gradients");
  BOOST_TEST_MESSAGE("adpsgd, 3 restarts: "
                     << completed << " exchanges completed, " << half << " half seen, "
                     << by_replacements << " by replacements; worst pair-sum residual " << worst
                     << "; target at " << r.time_to_target() << " s; " << r.faults(0).effect());
}

/// D-PSGD with the crashes `crashes` (restarted workers `restarted`): from
/// its own ledger of every node's rounds, the test checks every round that
/// all 8 nodes finished: sum_i x_i^{k+1} = sum_i x_i^k - gamma_k sum_i g_i
/// (W doubly stochastic), and that each node's round k+1 starts from its
/// round-k result, except each replacement's one join.
void check_dpsgd_restarts(const std::string& crashes, const std::set<std::uint32_t>& restarted) {
  std::map<std::uint64_t, std::map<std::uint32_t, atrain::dpsgd_round>> rounds;
  std::map<std::uint32_t, std::vector<std::uint64_t>> order;  // node -> rounds as finished
  const auto r = drive("dpsgd.textproto", {crashes}, [&](const auto&, const auto& probe) {
    harvest(probe, atrain::dpsgd_take_rounds, [&](std::uint32_t i, auto& d) {
      order[i].push_back(d.round);
      BOOST_TEST(rounds[d.round].count(i) == 0u);
      rounds[d.round][i] = std::move(d);
    });
  });
  expect_target(r);
  const auto p = t::config("algorithms/dpsgd.textproto", {"progress=false"});
  int f = 0;
  for (auto k : restarted) {
    expect_restarted(r, f, "joining round ");
    BOOST_TEST(names_a_neighbour(*p, k, r.faults(f).effect()), r.faults(f).effect());
    ++f;
  }
  const auto n = p->nodes();
  std::size_t full = 0;
  double worst = 0;
  for (const auto& [round, by_node] : rounds) {
    if (by_node.size() != n)
      continue;
    ++full;
    const std::size_t dim = by_node.begin()->second.before.size();
    for (std::size_t j = 0; j < dim; ++j) {
      double before = 0, after = 0, step = 0;
      for (const auto& [i, d] : by_node) {
        before += d.before[j];
        after += d.after[j];
        if (!d.gradient.empty())
          step += d.gamma * d.gradient[j];
      }
      worst = std::max(worst, std::abs(after - (before - step)) / (1.0 + std::abs(after)));
    }
  }
  // Rounds follow each other, each starting from the previous result, on
  // every node but at a replacement's join: it starts the round after the
  // last one its first incarnation sent (which that one may not have
  // finished) from a neighbour's model.
  std::map<std::uint32_t, std::size_t> joins;
  for (const auto& [i, seq] : order)
    for (std::size_t q = 1; q < seq.size(); ++q) {
      const auto& prev = rounds[seq[q - 1]][i];
      const auto& cur = rounds[seq[q]][i];
      if (seq[q] == seq[q - 1] + 1 && prev.after == cur.before)
        continue;
      ++joins[i];
      BOOST_TEST(restarted.count(i) == 1u,
                 "node " << i << " round " << seq[q - 1] << " then " << seq[q]);
      BOOST_TEST(seq[q] <= seq[q - 1] + 2);
      BOOST_TEST(seq[q] > seq[q - 1]);
    }
  for (auto k : restarted)
    BOOST_TEST(joins[k] <= 1u, "node " << k << " joined " << joins[k] << " times");
  BOOST_TEST(worst < 1e-5);
  BOOST_TEST(full > 50u);
  BOOST_TEST_MESSAGE("dpsgd: " << full << " complete rounds, worst relative average residual "
                               << worst << "; target at " << r.time_to_target() << " s; "
                               << r.faults(0).effect());
}

BOOST_AUTO_TEST_CASE(dpsgd_worker_rejoins_its_round_and_the_average_moves_by_the_gradients_only) {
  // Exponential graph on 8 nodes: node 3 dies at 0.3 s, back at 0.5 s.
  check_dpsgd_restarts("faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}]", {3});
}

BOOST_AUTO_TEST_CASE(dpsgd_neighbours_down_together_both_rejoin) {
  // Nodes 3 and 4 are neighbours and down together from 0.32 to 0.5 s: the
  // round models they sent each other reached only the dead workers. The
  // links hand their last model again to each replacement (before: both
  // waited for ever, 186 gradients in 30 s).
  check_dpsgd_restarts("faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}, "
                       "{node: 4 at_seconds: 0.32 restart_after_seconds: 0.2}]",
                       {3, 4});
}

BOOST_AUTO_TEST_CASE(dpsgd_whole_node_restart_rejoins_like_its_worker) {
  // D-PSGD keeps nothing on a node but its worker: the whole node down from
  // 0.3 to 0.5 s is the worker down, and the same round invariant holds.
  check_dpsgd_restarts("faults.crash=[{node: 3 at_seconds: 0.3 whole_node: true "
                       "restart_after_seconds: 0.2}]",
                       {3});
}

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
  for (const char* file :
       {"async_ps", "adpsgd", "dpsgd", "allreduce", "local_sgd", "sgp", "osgp", "loscar", "dasgd"})
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

/// Ring restarts: per completed ring step (all-reduce step or Local SGD
/// average), what each node used: its contribution and the result.
struct ring_use {
  std::vector<float> contributed;
  std::vector<float> result;  // the model after the step (allreduce) or the average
  std::vector<float> sum;     // allreduce: the ring's sum
};

/// Every node that completed step k holds the same result, and where all n
/// nodes completed it, the result is what their contributions give (`check`
/// returns the worst relative deviation). Returns (steps checked in full,
/// worst deviation).
template <class Check>
std::pair<std::size_t, double>
check_ring(const std::map<std::uint64_t, std::map<std::uint32_t, ring_use>>& steps, std::size_t n,
           Check check) {
  std::size_t full = 0;
  double worst = 0;
  for (const auto& [k, by_node] : steps) {
    const auto& first = by_node.begin()->second;
    for (const auto& [i, u] : by_node)
      BOOST_TEST((u.result == first.result), "step " << k << ": node " << i << " differs");
    if (by_node.size() != n)
      continue;
    ++full;
    worst = std::max(worst, check(by_node));
  }
  return {full, worst};
}

BOOST_DATA_TEST_CASE(allreduce_rank_rejoins_and_every_node_holds_the_same_sums,
                     boost::unit_test::data::make({"WAIT", "SKIP"}), policy) {
  // Node 3 dies at 0.3 s and is back 0.2 s later; the step it died in is
  // finished with a survivor's sum by whoever was still in it, or begun
  // again by all under a new ring round. SKIP: contribution counts travel
  // (a rank whose gradient is late joins with zero).
  std::map<std::uint64_t, std::map<std::uint32_t, ring_use>> steps;
  const auto r =
    drive("allreduce.textproto",
          {"faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}]",
           std::string{"algorithm.allreduce.straggler_policy="} + policy},
          [&](const auto&, const auto& probe) {
            harvest(probe, atrain::allreduce_take_steps, [&](std::uint32_t i, auto& e) {
              BOOST_TEST(steps[e.step].count(i) == 0u);
              steps[e.step][i] = {e.contributed, e.x, e.sum};
            });
          });
  expect_target(r);
  expect_restarted(r, 0, "joining the ring at round ");
  const auto [full, worst] = check_ring(steps, 8, [](const auto& by_node) {
    // The ring's sum is the sum of the n contributions (in float, summed
    // along the ring in another order than here).
    const auto& sum = by_node.begin()->second.sum;
    double w = 0;
    for (std::size_t j = 0; j < sum.size(); ++j) {
      double s = 0;
      for (const auto& [i, u] : by_node) {
        BOOST_TEST((u.sum == sum));
        s += u.contributed[j];
      }
      w = std::max(w, std::abs(s - sum[j]) / (1.0 + std::abs(s)));
    }
    return w;
  });
  BOOST_TEST(worst < 1e-5);
  BOOST_TEST(full > 50u);
  // Steps go on after the restart: node 3's replacement completed many.
  std::size_t by_3 = 0;
  for (const auto& [k, by_node] : steps)
    by_3 += by_node.count(3);
  BOOST_TEST(by_3 + 10 > full);
  BOOST_TEST_MESSAGE("allreduce " << policy << ": " << steps.size() << " steps, " << full
                                  << " completed by all 8, worst sum deviation " << worst
                                  << "; target at " << r.time_to_target() << " s; "
                                  << r.faults(0).effect());
}

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
  const auto [full, worst] = check_ring(averages, 8, [](const auto& by_node) {
    const auto& avg = by_node.begin()->second.result;
    double w = 0;
    for (std::size_t j = 0; j < avg.size(); ++j) {
      double s = 0;
      for (const auto& [i, u] : by_node)
        s += u.contributed[j];
      s /= static_cast<double>(by_node.size());
      w = std::max(w, std::abs(s - avg[j]) / (1.0 + std::abs(s)));
    }
    return w;
  });
  BOOST_TEST(worst < 1e-5);
  BOOST_TEST(full > 10u);
  BOOST_TEST_MESSAGE("local_sgd " << policy << ": " << averages.size() << " averages, " << full
                                  << " completed by all 8, worst deviation " << worst
                                  << "; target at " << r.time_to_target() << " s; "
                                  << r.faults(0).effect());
}

BOOST_AUTO_TEST_CASE(loscar_worker_rejoins_with_the_aggregators_average_and_every_mean_is_exact) {
  // Worker 3 dies at 0.3 s and is back 0.2 s later; the aggregator is node
  // 2. The test rebuilds the aggregator's average from the means the live
  // workers merged (A = x^0, then A[S_r] = m_r, S_r drawn here) and checks
  // every mean against the vectors its contributors sent.
  const std::uint32_t k = 3;
  const std::size_t n = 8;
  std::map<std::uint64_t, std::map<std::uint32_t, loscar_merge_record>> merges;  // round, node
  std::vector<std::uint64_t> first_round_of(n, ~std::uint64_t{0});
  caf::actor_addr first_worker;
  std::vector<float> first_x;
  bool running = false, crashed = false, replaced_merged = false;
  std::uint64_t replacement_first_round = 0;
  const auto r = drive(
    "loscar.textproto",
    {"algorithm.loscar.aggregator=2",
     "faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}]"},
    [&](const atrain::run_plan&, atrain::run_probe& probe) {
      harvest(probe, atrain::loscar_take_merges, [&](std::uint32_t i, loscar_merge_record& m) {
        BOOST_TEST(merges[m.round].count(i) == 0u,
                   "node " << i << " merged round " << m.round << " twice");
        if (i == k && crashed && !replaced_merged) {
          replaced_merged = true;
          replacement_first_round = m.round;
        }
        merges[m.round][i] = std::move(m);
      });
      if (k >= probe.workers.size())
        return;
      if (!running && probe.models[k] != nullptr) {
        running = true;
        first_worker = probe.workers[k];
      }
      if (running && !crashed && probe.models[k] == nullptr)
        crashed = true;
      if (crashed && first_x.empty() && probe.models[k] != nullptr) {
        BOOST_TEST((probe.workers[k] != first_worker));
        first_x = *probe.models[k];
      }
    });
  expect_target(r);
  expect_restarted(r, 0, "the aggregator's average after round ");
  const auto& effect = r.faults(0).effect();
  const auto at = effect.find("joining round ");
  BOOST_REQUIRE(at != std::string::npos);
  const std::uint64_t join = std::stoull(effect.substr(at + 14));
  const bool dropped = effect.find("dropped from round") != std::string::npos;
  BOOST_REQUIRE(join > 0u);
  BOOST_REQUIRE(!first_x.empty());
  BOOST_TEST(replacement_first_round == join);
  auto plan = t::config("algorithms/loscar.textproto", {});
  const std::size_t dim = plan->dim();
  const auto kk = atrain::loscar_k(plan->spec.algorithm().loscar().sparsity(), dim);
  // The aggregator's average when the replacement started: every round up
  // to join - 1 applied in order, from the means the live workers received.
  std::vector<float> avg = plan->x0;
  std::size_t all_n = 0;
  double worst_mean = 0, worst_sum = 0;
  for (const auto& [round, by_node] : merges) {
    const auto& mean = by_node.begin()->second.mean;
    for (const auto& [i, m] : by_node)
      BOOST_TEST((m.mean == mean), "round " << round << ": node " << i << "'s mean differs");
    const auto sample = atrain::loscar_sample(plan->spec.seed(), round, dim, kk);
    BOOST_REQUIRE(sample.size() == mean.size());
    if (round < join)
      for (std::size_t j = 0; j < kk; ++j)
        avg[sample[j]] = mean[j];
    // A mean of the vectors of every worker (all merged it), or of the
    // others in the round the restarted worker was dropped from.
    const bool exact = by_node.size() == n || (dropped && round + 1 == join);
    if (!exact)
      continue;
    if (by_node.size() == n)
      ++all_n;
    else
      BOOST_TEST(by_node.count(k) == 0u);
    for (std::size_t j = 0; j < kk; ++j) {
      double s = 0, moved = 0;
      for (const auto& [i, m] : by_node) {
        s += m.y_s[j];
        moved += static_cast<double>(m.x[sample[j]]) - static_cast<double>(m.z[sample[j]]);
      }
      const double expect = s / static_cast<double>(by_node.size());
      worst_mean = std::max(worst_mean, std::abs(mean[j] - expect) / (1.0 + std::abs(expect)));
      // Delay-corrected: the merge moves the workers' sum by n m - sum y = 0.
      worst_sum = std::max(worst_sum, std::abs(moved) / (1.0 + std::abs(s)));
    }
  }
  BOOST_TEST(std::memcmp(first_x.data(), avg.data(), sizeof(float) * dim) == 0,
             "the replacement's first model is not the aggregator's average");
  BOOST_TEST(worst_mean < 1e-6);
  BOOST_TEST(worst_sum < 1e-5);
  BOOST_TEST(all_n > 20u);
  BOOST_TEST(r.per_node(k).gradients() > 0u);
  BOOST_TEST_MESSAGE("loscar: worker 3 rejoined in round "
                     << join << (dropped ? " (dropped from the round before)" : "")
                     << " with the aggregator's average (bit for bit); " << merges.size()
                     << " rounds, " << all_n << " merged by all 8, worst mean deviation "
                     << worst_mean << ", worst corrected-merge sum " << worst_sum << "; target at "
                     << r.time_to_target() << " s; " << effect);
}

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

BOOST_AUTO_TEST_CASE(same_spec_and_seed_replay_exactly_with_a_restart) {
  for (const char* file :
       {"async_ps", "adpsgd", "dpsgd", "allreduce", "local_sgd", "sgp", "osgp", "loscar", "dasgd"})
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
