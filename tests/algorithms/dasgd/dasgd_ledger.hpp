#pragma once
/// DASGD tests' ledger run: a virtual run stepped one event at a time, every
/// node's ledger harvested, each live replica checked against x0 minus the
/// gradients its ledger says it applied (dasgd_test.cpp, dasgd_join_test.cpp).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "algorithms/dasgd/dasgd.hpp"
#include "fixtures.hpp"
#include "gossip_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

namespace {

using key = std::pair<std::uint32_t, std::uint64_t>;  // (origin, local gradient number)

std::vector<std::string> spec(std::vector<std::string> extra) {
  return g::with({"algorithm.dasgd.step_size=0.2", "nodes=4", "stop.stop_at_target=false",
                  "eval.period_seconds=0.5", "progress=false"},
                 std::move(extra));
}

/// Drives a virtual run with a probe, harvesting every node's ledger after
/// each scheduler step and checking, every `check_every` steps, that each
/// live replica equals x0 - sum gamma_k g_k over the gradients its ledger
/// says it applied (recomputed in double, independently of the worker).
struct ledger_run {
  std::shared_ptr<const atrain::run_plan> plan;
  std::vector<atrain::dasgd_ledger> nodes;
  std::map<key, atrain::dasgd_ledger::created> made;
  std::vector<std::vector<double>> applied_sum;  // per node: sum gamma g of applied gradients
  std::vector<std::map<key, int>> times_applied;
  double worst_model_error = 0;
  std::size_t model_checks = 0;
  std::vector<caf::actor_addr> incarnation;  // per node: the worker harvested
  std::vector<int> restarts;                 // per node
  /// Per restarted node: its replacement's first model, and every live
  /// node's model at that scheduler step.
  std::map<std::size_t, std::pair<std::vector<float>, std::vector<std::vector<float>>>> joined;
  atrain::proto::RunReport report;

  /// `inject(probe)` runs once after `inject_at` scheduler steps.
  explicit ledger_run(std::shared_ptr<const atrain::run_plan> p,
                      std::function<void(atrain::run_probe&)> inject = {},
                      std::uint64_t inject_at = 2000, std::uint64_t check_every = 500)
    : plan(std::move(p)) {
    const std::size_t n = plan->nodes();
    const std::size_t dim = plan->dim();
    nodes.resize(n);
    applied_sum.assign(n, std::vector<double>(dim, 0.0));
    times_applied.resize(n);
    auto probe = std::make_shared<atrain::run_probe>();
    atrain::run_options opts;
    opts.probe = probe;
    atrain::virtual_run run{plan, opts};
    std::uint64_t steps = 0;
    while (run.step()) {
      harvest(*probe);
      if (inject && steps == inject_at)
        inject(*probe);
      if (++steps % check_every == 0)
        check_models(*probe);
    }
    auto r = run.run();
    BOOST_REQUIRE(r);
    report = *r;
    BOOST_TEST(report.error().empty(), report.error());
  }

  void harvest(const atrain::run_probe& probe) {
    // A restarted node starts over: its replacement's ledger opens with the
    // donor's record (every gradient in the model it took).
    incarnation.resize(probe.workers.size());
    restarts.resize(probe.workers.size());
    for (std::size_t i = 0; i < probe.workers.size(); ++i)
      if (incarnation[i] != probe.workers[i]) {
        if (incarnation[i]) {
          ++restarts[i];
          joined.erase(i);
          nodes[i].used.clear();
          times_applied[i].clear();
          std::fill(applied_sum[i].begin(), applied_sum[i].end(), 0.0);
        }
        incarnation[i] = probe.workers[i];
      }
    for (std::size_t i = 0; i < probe.models.size(); ++i)
      if (restarts.at(i) > 0 && joined.count(i) == 0 && probe.models[i] != nullptr) {
        auto& [first, all] = joined[i];
        first = *probe.models[i];
        for (const auto* x : probe.models)
          all.push_back(x != nullptr ? *x : std::vector<float>{});
      }
    std::vector<atrain::dasgd_ledger> fresh;
    for (const auto& w : probe.workers)
      fresh.push_back(atrain::dasgd_take_ledger(w));
    fresh.resize(nodes.size());
    for (std::uint32_t i = 0; i < fresh.size(); ++i)
      for (auto& c : fresh[i].made)
        made[{i, c.index}] = c;
    for (std::uint32_t i = 0; i < fresh.size(); ++i) {
      auto& f = fresh[i];
      for (const auto& u : f.used) {
        ++times_applied[i][{u.origin, u.index}];
        auto it = made.find({u.origin, u.index});
        BOOST_REQUIRE_MESSAGE(it != made.end(), "node " << i << " applied an unknown gradient");
        const auto& c = it->second;
        for (std::size_t k = 0; k < c.g.size(); ++k)
          applied_sum[i][k] += c.gamma * static_cast<double>(c.g[k]);
      }
      auto& n = nodes[i];
      n.made.insert(n.made.end(), std::make_move_iterator(f.made.begin()),
                    std::make_move_iterator(f.made.end()));
      n.used.insert(n.used.end(), f.used.begin(), f.used.end());
      n.packets_applied += f.packets_applied;
      n.relayed += f.relayed;
      n.covered += f.covered;
    }
  }

  void check_models(const atrain::run_probe& probe) {
    for (std::size_t i = 0; i < probe.models.size(); ++i) {
      const auto* x = probe.models[i];
      if (x == nullptr)
        continue;
      ++model_checks;
      for (std::size_t k = 0; k < x->size(); ++k) {
        const double expect = static_cast<double>(plan->x0[k]) - applied_sum[i][k];
        const double error = std::abs(static_cast<double>((*x)[k]) - expect);
        worst_model_error = std::max(worst_model_error, error / (1 + std::abs(expect)));
      }
    }
  }

  /// Gradients created before `until_ns` not applied exactly once by every
  /// node (returned), and the number applied more than once anywhere;
  /// `lost` (made by a worker that died before sending them) left out.
  std::pair<std::size_t, std::size_t> missing_and_twice(std::int64_t until_ns,
                                                        const std::set<key>& lost = {}) const {
    std::size_t missing = 0, twice = 0;
    for (const auto& per : times_applied)
      for (const auto& [k, count] : per)
        twice += count > 1 ? 1 : 0;
    for (const auto& [k, c] : made)
      if (c.done_ns < until_ns && lost.count(k) == 0)
        for (const auto& per : times_applied) {
          auto it = per.find(k);
          missing += (it == per.end() || it->second != 1) ? 1 : 0;
        }
    return {missing, twice};
  }

  /// Staleness of each of node i's gradients counted from the ledgers alone:
  /// gradients created (done) strictly before its read, minus those among
  /// the node's applied entries before the read created strictly before it.
  double ledger_staleness_mean(std::uint32_t i) const {
    const auto& n = nodes[i];
    double sum = 0;
    for (const auto& c : n.made) {
      std::size_t earlier = 0, applied = 0;
      for (const auto& [k, other] : made)
        earlier += other.done_ns < c.read_ns ? 1 : 0;
      for (std::size_t u = 0; u < c.applied_before; ++u)
        applied += made.at({n.used[u].origin, n.used[u].index}).done_ns < c.read_ns ? 1 : 0;
      sum += static_cast<double>(earlier - applied);
    }
    return n.made.empty() ? 0 : sum / static_cast<double>(n.made.size());
  }
};

}  // namespace
