/// Asynchronous parameter server (ALGORITHMS.md §9) on the actor runtime: the
/// server's model against a ledger of applied gradients (exactly once under
/// loss and duplication), staleness against an independent count, rejected
/// packets, the quickstart target, lossy links, replay and the real clock.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "algorithms/async_ps/async_ps.hpp"
#include "fixtures.hpp"
#include "gossip_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

namespace {

/// A small, fast task: 2000 training rows, 8 workers, 1 s of virtual time.
std::vector<std::string> small(std::vector<std::string> extra) {
  return g::with({"algorithm.async_ps={step_size: 0.2 server: 2}", "dataset.max_train_samples=2000",
                  "dataset.max_test_samples=500", "nodes=8", "stop.time_seconds=1",
                  "stop.stop_at_target=false", "eval.period_seconds=0.25", "progress=false"},
                 std::move(extra));
}

/// A virtual run whose server the test reads after every scheduler event:
/// the ledger of applied gradients, in application order, and the largest
/// gap between the server's model and x^0 - sum_k gamma_k g_k recomputed
/// here in double from the ledger alone.
struct ledger_run {
  std::vector<atrain::async_ps_applied> ledger;
  double worst_gap = 0;
  std::size_t checks = 0;
  std::uint64_t duplicates = 0;
  atrain::proto::RunReport report;

  explicit ledger_run(
    std::shared_ptr<const atrain::run_plan> plan,
    const std::function<void(atrain::virtual_run&, atrain::run_probe&)>& poke = nullptr) {
    auto probe = std::make_shared<atrain::run_probe>();
    atrain::run_options opts;
    opts.probe = probe;
    atrain::virtual_run run{plan, opts};
    const auto& algo = plan->spec.algorithm().async_ps();
    std::vector<double> y(plan->x0.begin(), plan->x0.end());
    bool poked = false;
    while (run.step()) {
      if (poke && !poked && ledger.size() >= 200) {
        poke(run, *probe);
        poked = true;
      }
      auto view = atrain::async_ps_take(probe->server);
      if (!view || view->x.size() != y.size())
        continue;  // no server yet, or not yet initialised
      for (auto& a : view->applied) {
        const double k = static_cast<double>(ledger.size());
        const double gamma = algo.step_size() / (1.0 + algo.decay() * k);
        for (std::size_t j = 0; j < y.size(); ++j)
          y[j] -= gamma * static_cast<double>(a.g.ptr()[j]);
        ledger.push_back(std::move(a));
      }
      double gap = 0;
      for (std::size_t j = 0; j < y.size(); ++j)
        gap = std::max(gap, std::abs(view->x[j] - y[j]) / (1.0 + std::abs(y[j])));
      worst_gap = std::max(worst_gap, gap);
      duplicates = view->duplicates;
      ++checks;
    }
    auto r = run.run();
    BOOST_REQUIRE(r);
    report = *r;
  }

  /// Each worker's ledger positions, by seq.
  [[nodiscard]] std::map<std::uint32_t, std::vector<std::size_t>> positions() const {
    std::map<std::uint32_t, std::vector<std::size_t>> out;
    for (std::size_t pos = 0; pos < ledger.size(); ++pos)
      out[ledger[pos].worker].push_back(pos);
    return out;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(async_ps)

BOOST_AUTO_TEST_CASE(server_model_is_x0_minus_the_ledger_and_each_gradient_applied_once) {
  // 30 % loss (of packets and acks) with duplication and reordering: every
  // gradient must still reach the server and be applied exactly once.
  ledger_run r{t::quickstart(
    small({"algorithm.async_ps={step_size: 0.2 decay: 0.01 server: 2}", "link.loss=0.3",
           "link.duplicate=0.2", "link.latency_seconds=0.001", "link.reorder=0.3",
           "link.reorder_delay_seconds=0.005", "cost.jitter=0.3"}))};
  BOOST_TEST(r.report.error().empty(), r.report.error());
  BOOST_TEST(r.report.evaluated_model() == "parameter server (node 2)");
  BOOST_TEST(r.report.packets_dropped() > 0u);
  BOOST_TEST(r.report.packets_retransmitted() > 0u);
  BOOST_TEST(r.duplicates > 0u);  // duplicates did reach the server
  BOOST_TEST(r.checks > 1000u);
  BOOST_TEST(r.worst_gap < 1e-12);
  std::set<std::pair<std::uint32_t, std::uint64_t>> seen;
  for (std::size_t pos = 0; pos < r.ledger.size(); ++pos) {
    const auto& a = r.ledger[pos];
    BOOST_TEST(seen.insert({a.worker, a.seq}).second,
               "applied twice: " << a.worker << "/" << a.seq);
    BOOST_TEST(a.version == pos);
  }
  const auto pos = r.positions();
  std::uint64_t applied = 0;
  for (const auto& n : r.report.per_node()) {
    const auto it = pos.find(n.node());
    const std::size_t m = it == pos.end() ? 0 : it->second.size();
    for (std::size_t k = 0; k < m; ++k)  // seqs 1, 2, ..., m: none lost, none twice
      BOOST_TEST(r.ledger[it->second[k]].seq == k + 1);
    // Every gradient computed is applied, but the one in flight at the stop.
    BOOST_TEST(m <= n.gradients());
    BOOST_TEST(m + 1 >= n.gradients(),
               "node " << n.node() << ": " << n.gradients() << " computed, " << m << " applied");
    applied += m;
  }
  BOOST_TEST_MESSAGE(r.ledger.size()
                     << " gradients applied of " << r.report.gradients_total() << " computed; "
                     << r.duplicates << " duplicates ignored; " << r.report.packets_dropped()
                     << " dropped; worst model gap " << r.worst_gap);
  BOOST_TEST(applied == r.ledger.size());
  BOOST_TEST(applied > 300u);
}

BOOST_AUTO_TEST_CASE(staleness_matches_an_independent_count_and_is_about_n_minus_1) {
  ledger_run r{
    t::quickstart(small({"link.latency_seconds=0.002", "link.duplicate=0.2", "link.reorder=0.3",
                         "link.reorder_delay_seconds=0.005", "cost.jitter=0.3"}))};
  BOOST_TEST(r.report.error().empty(), r.report.error());
  // Worker i read its model right after the server applied its previous
  // gradient (or x^0): the staleness of gradient seq is the number of ledger
  // entries between its (seq-1)-th and seq-th gradient.
  const auto pos = r.positions();
  double all_sum = 0;
  std::uint64_t all_count = 0;
  for (const auto& n : r.report.per_node()) {
    const auto& p = pos.at(n.node());
    std::vector<double> stale;
    for (std::size_t k = 0; k < p.size(); ++k) {
      const double read = k == 0 ? 0.0 : static_cast<double>(p[k - 1] + 1);
      stale.push_back(static_cast<double>(p[k]) - read);
    }
    // The worker records a staleness when the reply reaches it: the last
    // gradient's reply may still be in flight. Match all applied gradients,
    // or all but the last.
    bool matched = false;
    for (std::size_t m : {stale.size(), stale.size() - 1}) {
      double sum = 0, max = 0;
      for (std::size_t k = 0; k < m; ++k) {
        sum += stale[k];
        max = std::max(max, stale[k]);
      }
      if (m > 0 && std::abs(sum / static_cast<double>(m) - n.staleness_mean()) < 1e-9 &&
          max == n.staleness_max()) {
        matched = true;
        all_sum += sum;
        all_count += m;
        break;
      }
    }
    BOOST_TEST(matched, "node " << n.node() << ": reported mean " << n.staleness_mean() << " max "
                                << n.staleness_max());
  }
  const double mean = all_sum / static_cast<double>(all_count);
  BOOST_TEST_MESSAGE("8 workers, equal taus: mean staleness "
                     << mean << " (report " << r.report.staleness_mean() << "), max "
                     << r.report.staleness_max());
  BOOST_TEST(std::abs(r.report.staleness_mean() - mean) < 1e-9);
  BOOST_TEST(std::abs(mean - 7.0) < 0.5);
}

BOOST_AUTO_TEST_CASE(a_4x_slow_node_sees_larger_staleness) {
  auto report = atrain::run_experiment(
    t::quickstart(small({"cost.slowdown=[{node: 5 factor: 4}]", "cost.jitter=0.2"})));
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  double slow = 0, fast_max = 0;
  for (const auto& n : report->per_node()) {
    if (n.node() == 5)
      slow = n.staleness_mean();
    else
      fast_max = std::max(fast_max, n.staleness_mean());
  }
  // Slow: ~4 cycles of 7 others (~28); fast: 6 others + a quarter (~6.25).
  BOOST_TEST_MESSAGE("staleness: slow node " << slow << ", fastest-stale other " << fast_max);
  BOOST_TEST(slow > 3 * fast_max);
  BOOST_TEST(fast_max < 7.0);
}

BOOST_AUTO_TEST_CASE(malformed_packets_are_rejected_and_counted_never_applied) {
  // After 200 applied gradients: bad gradients to the server and bad models
  // to worker 4. None may be applied: the ledger keeps each (worker, seq)
  // once and the server's model keeps matching it.
  const std::size_t dim = t::quickstart(small({}))->dim();
  auto poke = [dim](atrain::virtual_run&, atrain::run_probe& probe) {
    auto good = [dim](std::uint32_t from, std::uint32_t kind) {
      atrain::packet p;
      p.from = from;
      p.kind = kind;
      p.seq = 1;
      p.f = atrain::float_blob{std::vector<float>(dim, 0.f)};
      p.scalars = {0.0};
      return p;
    };
    std::vector<atrain::packet> to_server(8, good(1, atrain::async_ps_gradient));
    to_server[0].from = 99;                                                       // unknown sender
    to_server[1].f = atrain::float_blob{std::vector<float>(dim + 1, 0.f)};        // wrong size
    to_server[2].f = atrain::float_blob{std::vector<float>(dim, std::nanf(""))};  // NaN
    to_server[3].kind = 77;                                                       // unknown stream
    to_server[4].seq = 1000000;                                                   // impossible seq
    to_server[5].seq = 0;                                                         // seqs start at 1
    to_server[6].scalars = {};     // no version stamp
    to_server[7].scalars = {0.5};  // not a version
    std::vector<atrain::packet> to_worker(5, good(2, atrain::async_ps_model));
    to_worker[0].from = 3;                                                   // not the server
    to_worker[1].f = atrain::float_blob{std::vector<float>(dim, INFINITY)};  // infinity
    to_worker[2].seq = 1000000;                                              // never requested
    to_worker[3].kind = atrain::async_ps_gradient;                           // wrong stream
    to_worker[4].d = atrain::double_blob{std::vector<double>(3, 1.0)};       // stray payload
    auto server = caf::actor_cast<caf::actor>(probe.server);
    auto worker = caf::actor_cast<caf::actor>(probe.workers.at(4));
    for (auto& p : to_server)
      caf::anon_send(server, atrain::deliver_atom::value, p);
    for (auto& p : to_worker)
      caf::anon_send(worker, atrain::deliver_atom::value, p);
  };
  ledger_run r{t::quickstart(small({"link.latency_seconds=0.001"})), poke};
  BOOST_TEST(r.report.error().empty(), r.report.error());
  BOOST_TEST(r.report.packets_rejected() == 13u);
  BOOST_TEST(r.worst_gap < 1e-12);
  std::set<std::pair<std::uint32_t, std::uint64_t>> seen;
  for (const auto& a : r.ledger) {
    BOOST_TEST(a.worker < 8u);
    BOOST_TEST(seen.insert({a.worker, a.seq}).second);
  }
  BOOST_TEST(std::isfinite(r.report.final().train_loss()));
}

BOOST_AUTO_TEST_CASE(reaches_the_quickstart_target_with_its_config) {
  g::expect_target("async_ps", t::config("algorithms/async_ps.textproto", {"progress=false"}));
}

// Top-k of a model value by value would zero most of it: the server's models
// travel as replicas (the change from the worker's copy), and a restarted
// worker's first reply is exact (the server starts its stream again), so the
// replacement goes on computing. On 100 kB/s links, where raw replies queue.
BOOST_AUTO_TEST_CASE(topk_models_travel_as_replicas_and_a_replacement_gets_an_exact_one) {
  const auto r = atrain::run_experiment(
    t::config("algorithms/async_ps.textproto",
              {"progress=false", "link.bandwidth_bytes_per_second=1e5",
               "link.codec={kind: TOPK topk_fraction: 0.1 error_feedback: true}",
               "eval.period_seconds=0.05", "stop.stop_at_target=false", "stop.time_seconds=1.5",
               "faults.crash=[{node: 3 at_seconds: 0.3 restart_after_seconds: 0.2}]"}));
  BOOST_REQUIRE(r);
  BOOST_TEST(r->error().empty(), r->error());
  BOOST_TEST(r->has_time_to_target());
  BOOST_TEST(r->packets_rejected() == 0u);
  // Down 0.2 s of 1.5 s: the replacement makes about 87 % of a peer's gradients.
  BOOST_TEST(r->per_node(3).gradients() * 10 > r->per_node(4).gradients() * 7,
             r->per_node(3).gradients() << " against " << r->per_node(4).gradients());
  BOOST_TEST_MESSAGE("async_ps top-k 10 %: target at "
                     << r->time_to_target() << " s; worker 3 " << r->per_node(3).gradients()
                     << " gradients, worker 4 " << r->per_node(4).gradients());
}

BOOST_AUTO_TEST_CASE(reaches_the_target_over_lossy_acknowledged_links) {
  t::expect_target_over_lossy_links("async_ps.textproto");
}

BOOST_AUTO_TEST_CASE(reaches_the_target_on_the_real_clock) {
  g::expect_target_real(
    t::config("quickstart_real.textproto",
              {"algorithm.async_ps={step_size: 0.15 server: 0}", "progress=false"}));
}

BOOST_AUTO_TEST_CASE(same_seed_same_trace_other_seed_differs) {
  t::expect_replay([](std::uint64_t seed) {
    return t::quickstart(
      small({"seed=" + std::to_string(seed), "link.latency_seconds=0.001", "link.loss=0.1",
             "link.duplicate=0.2", "link.reorder=0.3", "link.reorder_delay_seconds=0.005"}));
  });
}

BOOST_AUTO_TEST_SUITE_END()
