/// DASGD (ALGORITHMS.md §2) on the actor runtime: exactly-once application of
/// every gradient over lossy acknowledged links, each replica equal to x0
/// minus the gradients its ledger says it applied, staleness against an
/// independent count, batching (broadcast_every), coalescing on
/// bandwidth-bound links, restarts (with batching and coalescing: only the
/// dead worker's unsent batch is lost), malformed packets, the quickstart
/// target, replay and the real clock.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "algorithms/dasgd/dasgd.hpp"
#include "dasgd_ledger.hpp"
#include "fixtures.hpp"
#include "gossip_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;

namespace {

std::int64_t ns(double seconds) {
  return static_cast<std::int64_t>(seconds * 1e9);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dasgd)

BOOST_AUTO_TEST_CASE(every_gradient_applied_exactly_once_everywhere_over_30_percent_loss) {
  ledger_run r{t::config(
    "algorithms/dasgd.textproto",
    spec({"stop.time_seconds=2", "link.loss=0.3", "link.latency_seconds=0.002",
          "link.duplicate=0.1", "link.reorder=0.3", "link.reorder_delay_seconds=0.005"}))};
  const auto [missing, twice] = r.missing_and_twice(ns(r.report.duration_seconds() - 0.2));
  std::size_t remote = 0;
  for (const auto& n : r.nodes)
    remote += n.used.size() - n.made.size();
  BOOST_TEST_MESSAGE(r.made.size()
                     << " gradients, " << remote << " remote applications, "
                     << r.report.packets_dropped() << " dropped, "
                     << r.report.packets_retransmitted() << " retransmitted; " << missing
                     << " missing, " << twice << " twice; worst model error " << r.worst_model_error
                     << " over " << r.model_checks << " checks");
  BOOST_TEST(r.report.packets_dropped() > 100u);
  BOOST_TEST(r.report.packets_retransmitted() > 100u);
  BOOST_TEST(r.made.size() > 500u);
  BOOST_TEST(missing == 0u);
  BOOST_TEST(twice == 0u);
  BOOST_TEST(r.model_checks > 100u);
  BOOST_TEST(r.worst_model_error < 1e-5);
}

// Worker 2 dies at 0.3 s and is back 0.2 s later over lossy, duplicating,
// reordering links: the replacement takes node 0's model with its record of
// gradients seen and gets, over its re-pointed links or relayed by node 0,
// exactly the gradients missing from it (some reached only the dead worker).
// Every replica — the replacement's too — stays x0 minus the gradients its
// ledger says it applied (the replacement's opens with the record it took).
// Back after 5 ms, the dead worker's last gradients are still on their way
// to the donor: relayed, the replacement takes them as its own (numbers up
// to the dead incarnation's).
BOOST_AUTO_TEST_CASE(restarted_worker_takes_a_donors_record_and_misses_no_gradient) {
  for (const std::string after : {"0.2", "0.005"})
    BOOST_TEST_CONTEXT("restart after " << after) {
      ledger_run r{t::config(
        "algorithms/dasgd.textproto",
        spec({"stop.time_seconds=1.2", "link.loss=0.2", "link.latency_seconds=0.003",
              "link.duplicate=0.1", "link.reorder=0.3", "link.reorder_delay_seconds=0.005",
              "faults.crash=[{node: 2 at_seconds: 0.3 restart_after_seconds: " + after + "}]"}))};
      BOOST_REQUIRE(r.report.faults_size() == 1);
      const auto& effect = r.report.faults(0).effect();
      BOOST_TEST(effect.find("restarted at") != std::string::npos, effect);
      BOOST_TEST(effect.find("node 0's model and its record of") != std::string::npos, effect);
      BOOST_TEST(r.restarts.at(2) == 1);
      const auto [missing, twice] = r.missing_and_twice(ns(r.report.duration_seconds() - 0.2));
      const auto relayed = r.nodes.at(0).relayed;
      // The replacement's first model is its donor's (node 0's) at that instant.
      BOOST_REQUIRE(r.joined.count(2) == 1u);
      const auto& [first, all] = r.joined.at(2);
      BOOST_TEST((first == all.at(0)), "the replacement's first model is not node 0's");
      std::size_t before = 0;  // gradients the replacement took with the donor's model
      for (const auto& [k, c] : r.made)
        before += c.done_ns < ns(0.3) ? 1 : 0;
      BOOST_TEST_MESSAGE("restart after "
                         << after << " s: " << effect << "; " << r.made.size() << " gradients, "
                         << missing << " missing, " << twice << " twice; " << relayed
                         << " relayed by the donor; worst model error " << r.worst_model_error
                         << " over " << r.model_checks << " checks");
      BOOST_TEST(before > 50u);
      BOOST_TEST(r.made.size() > 300u);
      BOOST_TEST(missing == 0u);
      BOOST_TEST(twice == 0u);
      BOOST_TEST(relayed > 0u);  // some gradients had reached only the dead worker
      BOOST_TEST(r.model_checks > 50u);
      BOOST_TEST(r.worst_model_error < 1e-5);
    }
}

// broadcast_every 3, then also coalescing on bandwidth-bound links (10 kB/s:
// a 524-byte packet takes 52 ms on the wire, a node sends one every 30 ms,
// so queued packets merge into ranges that differ from link to link); node 2
// down at 0.3, 0.315 or 0.325 s (0, 1 or 2 gradients of its batch unsent),
// back 0.2 s or 5 ms later, over links with 20 % loss, 10 % duplication, 30 %
// reordering.
// The dead worker made M gradients and had sent 3 floor(M / 3): the rest,
// its unsent batch, is lost with it — the test derives that from the ledger
// alone, the effect must name exactly those numbers, and no replica (the
// replacement included) may apply any of them. Every other gradient made is
// applied exactly once by every node, the replacement included, and every
// replica equals x0 minus the gradients its ledger says it applied.
BOOST_AUTO_TEST_CASE(restart_with_batching_and_coalescing_loses_only_the_unsent_batch) {
  struct crash {
    std::uint32_t node;
    double at;
    std::string after;
  };
  struct condition {
    std::string name;
    bool coalesce;
    std::vector<crash> crashes;
  };
  const std::vector<crash> twice_down{{2, 0.315, "0.2"}, {1, 0.62, "0.1"}};
  std::uint64_t relayed = 0, covered = 0;
  for (const condition& c :
       {condition{"every 3", false, {{2, 0.3, "0.2"}}},
        condition{"every 3", false, {{2, 0.315, "0.2"}}},
        condition{"every 3", false, {{2, 0.32, "0.005"}}}, condition{"every 3", false, twice_down},
        condition{"every 3, coalescing", true, {{2, 0.3, "0.2"}}},
        condition{"every 3, coalescing", true, {{2, 0.315, "0.2"}}},
        condition{"every 3, coalescing", true, {{2, 0.32, "0.005"}}},
        condition{"every 3, coalescing", true, twice_down}}) {
    std::ostringstream name;
    name << c.name << ",";
    std::string crashes;
    for (const auto& k : c.crashes) {
      name << (&k == &c.crashes.front() ? " node " : "; node ") << k.node << " down at " << k.at
           << " s, back after " << k.after << " s";
      crashes += (crashes.empty() ? "" : ", ") + std::string{"{node: "} + std::to_string(k.node) +
                 " at_seconds: " + std::to_string(k.at) + " restart_after_seconds: " + k.after +
                 "}";
    }
    BOOST_TEST_CONTEXT(name.str()) {
      std::vector<std::string> extra{"stop.time_seconds=1.5",
                                     "algorithm.dasgd.broadcast_every=3",
                                     "link.loss=0.2",
                                     "link.latency_seconds=0.003",
                                     "link.duplicate=0.1",
                                     "link.reorder=0.3",
                                     "link.reorder_delay_seconds=0.005",
                                     "faults.crash=[" + crashes + "]"};
      if (c.coalesce) {
        extra.push_back("algorithm.dasgd.coalesce=true");
        extra.push_back("link.bandwidth_bytes_per_second=20000");
      }
      ledger_run r{t::config("algorithms/dasgd.textproto", spec(extra)), {}, 0, 100};
      BOOST_REQUIRE(r.report.faults_size() == static_cast<int>(c.crashes.size()));
      std::set<key> lost;
      std::string effects;
      for (std::size_t f = 0; f < c.crashes.size(); ++f) {
        const auto& k = c.crashes[f];
        const auto& effect = r.report.faults(static_cast<int>(f)).effect();
        effects += (f == 0 ? "" : " / ") + effect;
        BOOST_TEST(effect.find("'s model and its record of") != std::string::npos, effect);
        BOOST_TEST(r.restarts.at(k.node) == 1);
        // The dead incarnation's gradients: those the node made before the
        // crash; it had sent 3 floor(M / 3) of them.
        std::uint64_t dead_made = 0, replacement_first = 0;
        for (const auto& [g, made] : r.made)
          if (g.first == k.node) {
            if (made.done_ns <= ns(k.at))
              dead_made = std::max(dead_made, g.second);
            else if (replacement_first == 0)
              replacement_first = g.second;
          }
        const std::uint64_t sent = dead_made / 3 * 3;
        for (auto s = sent + 1; s <= dead_made; ++s)
          lost.insert({k.node, s});
        BOOST_TEST(dead_made > 20u);
        BOOST_TEST(replacement_first == dead_made + 1);
        if (dead_made == sent + 1)
          BOOST_TEST(effect.find("1 gradient made but not yet sent (number " +
                                 std::to_string(dead_made) + ") is lost") != std::string::npos,
                     effect);
        else if (dead_made > sent)
          BOOST_TEST(effect.find(std::to_string(dead_made - sent) +
                                 " gradients made but not yet sent (numbers " +
                                 std::to_string(sent + 1) + ".." + std::to_string(dead_made) +
                                 ") are lost") != std::string::npos,
                     effect);
        else
          BOOST_TEST(effect.find("not yet sent") == std::string::npos, effect);
      }
      std::size_t lost_applied = 0;
      for (std::size_t i = 0; i < r.times_applied.size(); ++i)
        for (const auto& k : lost)
          lost_applied += r.times_applied[i].count(k);
      // The links lag more when they coalesce: a packet takes 26 ms on the
      // wire, one comes every 30 ms, and a third of the attempts (data or ack
      // lost) go to the back of the queue again.
      const double recent = c.coalesce ? 0.4 : 0.2;
      const auto [missing, twice] =
        r.missing_and_twice(ns(r.report.duration_seconds() - recent), lost);
      std::size_t remote = 0, packets = 0;  // on the nodes that never died
      for (std::uint32_t i = 0; i < r.nodes.size(); ++i)
        if (r.restarts.at(i) == 0) {
          remote += r.nodes[i].used.size() - r.nodes[i].made.size();
          packets += r.nodes[i].packets_applied;
        }
      std::uint64_t run_relayed = 0, run_covered = 0;
      for (const auto& n : r.nodes) {
        run_relayed += n.relayed;
        run_covered += n.covered;
      }
      BOOST_TEST_MESSAGE(name.str()
                         << ": " << effects << "; " << r.made.size() << " gradients (" << remote
                         << " remote applications in " << packets << " packets), " << lost.size()
                         << " lost with the dead workers (applied " << lost_applied << " times), "
                         << missing << " missing, " << twice << " twice; " << run_relayed
                         << " relayed by the donors, " << run_covered
                         << " direct packets dropped as covered by a donor; worst model error "
                         << r.worst_model_error << " over " << r.model_checks << " checks");
      BOOST_TEST(r.made.size() > 300u);
      BOOST_TEST(missing == 0u);
      BOOST_TEST(twice == 0u);
      BOOST_TEST(lost_applied == 0u);
      BOOST_TEST(r.report.packets_rejected() == 0u);
      BOOST_TEST(r.model_checks > 50u);
      BOOST_TEST(r.worst_model_error < 1e-5);
      if (c.coalesce)
        BOOST_TEST(packets * 3 * 5 < remote * 4);  // links merged packets (3 gradients each)
      else
        BOOST_TEST(packets * 3 == remote);  // a packet per batch of 3
      relayed += run_relayed;
      covered += run_covered;
    }
  }
  // Both halves of the hand-over acted: gradients that reached only the
  // dead worker came relayed, copies handed to a link before its origin's
  // fence were dropped at the replacement.
  BOOST_TEST(relayed > 0u);
  BOOST_TEST(covered > 0u);
}

BOOST_AUTO_TEST_CASE(restart_with_batching_and_coalescing_replays_exactly) {
  t::expect_replay([](std::uint64_t seed) {
    return t::config(
      "algorithms/dasgd.textproto",
      spec({"seed=" + std::to_string(seed), "stop.time_seconds=1",
            "algorithm.dasgd.broadcast_every=3", "algorithm.dasgd.coalesce=true",
            "link.bandwidth_bytes_per_second=40000", "link.loss=0.2", "link.duplicate=0.1",
            "link.reorder=0.3", "link.reorder_delay_seconds=0.005",
            "faults.crash=[{node: 2 at_seconds: 0.3 restart_after_seconds: 0.05}]"}));
  });
}

BOOST_AUTO_TEST_CASE(staleness_is_zero_in_lock_step_and_grows_with_latency_matching_the_ledger) {
  auto run = [](const std::string& latency) {
    return ledger_run{
      t::config("algorithms/dasgd.textproto",
                spec({"stop.time_seconds=1", "cost.jitter=0", "link.latency_seconds=" + latency}))};
  };
  for (const auto& latency : {"0", "0.025"}) {
    auto r = run(latency);
    double reported = 0;
    for (const auto& n : r.report.per_node())
      reported += n.staleness_mean() / r.report.per_node_size();
    const double node0 = r.report.per_node(0).staleness_mean();
    const double ledger0 = r.ledger_staleness_mean(0);
    BOOST_TEST_MESSAGE("latency " << latency << ": mean staleness " << reported << " (max "
                                  << r.report.staleness_max() << "), node 0 " << node0
                                  << " reported vs " << ledger0 << " from the ledger");
    BOOST_TEST(std::abs(node0 - ledger0) < 1e-9);
    const double node1 = r.report.per_node(1).staleness_mean();
    BOOST_TEST(std::abs(node1 - r.ledger_staleness_mean(1)) < 1e-9);
    if (std::string{latency} == "0")
      BOOST_TEST(reported < 0.01);
    else
      BOOST_TEST(reported > 4.0);  // 2.5 tau in flight: at least 2 gradients of 3 others
  }
}

BOOST_AUTO_TEST_CASE(broadcast_every_4_sends_a_quarter_of_the_messages) {
  auto run = [](std::uint32_t every) {
    auto report = atrain::run_experiment(t::config(
      "algorithms/dasgd.textproto",
      spec({"stop.time_seconds=1", "algorithm.dasgd.broadcast_every=" + std::to_string(every)})));
    BOOST_REQUIRE(report);
    BOOST_TEST(report->error().empty(), report->error());
    return *report;
  };
  const auto one = run(1);
  const auto four = run(4);
  for (const auto* r : {&one, &four}) {
    const std::uint64_t every = r == &one ? 1 : 4;
    for (const auto& n : r->per_node()) {
      // messages = (n-1) floor(completed / k) with n - 1 = 3; the last
      // gradient read may still be running at the stop.
      const std::uint64_t sends = n.messages_sent() / 3;
      BOOST_TEST(n.messages_sent() % 3 == 0u);
      BOOST_TEST((sends == n.gradients() / every || sends == (n.gradients() - 1) / every),
                 "node " << n.node() << ": " << n.messages_sent() << " messages for "
                         << n.gradients() << " gradients, every " << every);
    }
  }
  const double ratio = static_cast<double>(four.messages_sent()) / four.gradients_total() /
                       (static_cast<double>(one.messages_sent()) / one.gradients_total());
  BOOST_TEST_MESSAGE("messages per gradient: every 1 "
                     << 1.0 * one.messages_sent() / one.gradients_total() << ", every 4 "
                     << 1.0 * four.messages_sent() / four.gradients_total() << " (ratio " << ratio
                     << ")");
  BOOST_TEST(std::abs(ratio - 0.25) < 0.02);
  g::expect_target("dasgd broadcast_every 4",
                   t::config("algorithms/dasgd.textproto",
                             {"algorithm.dasgd.broadcast_every=4", "progress=false"}));
}

BOOST_AUTO_TEST_CASE(coalescing_on_a_bandwidth_bound_link_merges_packets_and_replicas_agree) {
  // 524-byte packets at 25 kB/s: 21 ms on the wire for one gradient per 10 ms.
  auto run = [](const std::string& coalesce) {
    return ledger_run{
      t::config("algorithms/dasgd.textproto",
                spec({"stop.time_seconds=1.5", "link.bandwidth_bytes_per_second=25000",
                      "algorithm.dasgd.coalesce=" + coalesce, "link.loss=0.1"}))};
  };
  for (const std::string coalesce : {"true", "false"}) {
    auto r = run(coalesce);
    std::size_t remote = 0, packets = 0;
    for (const auto& n : r.nodes) {
      remote += n.used.size() - n.made.size();
      packets += n.packets_applied;
    }
    const auto [missing, twice] = r.missing_and_twice(ns(r.report.duration_seconds() - 0.3));
    BOOST_TEST_MESSAGE("coalesce " << coalesce << ": " << remote << " remote gradients arrived in "
                                   << packets << " packets; " << missing
                                   << " (gradient, node) pairs older than 0.3 s not applied, "
                                   << twice << " twice; worst model error " << r.worst_model_error
                                   << ", accuracy " << r.report.final().test_accuracy());
    BOOST_TEST(twice == 0u);
    BOOST_TEST(r.model_checks > 50u);
    BOOST_TEST(r.worst_model_error < 1e-5);
    if (coalesce == "true") {
      BOOST_TEST(packets < remote / 2);
      BOOST_TEST(missing == 0u);
    } else {
      BOOST_TEST(packets == remote);
      BOOST_TEST(missing > 0u);  // a FIFO per link falls behind the gradients
    }
  }
}

BOOST_AUTO_TEST_CASE(malformed_packets_are_rejected_and_counted_never_applied) {
  auto plan = t::config("algorithms/dasgd.textproto", spec({"stop.time_seconds=0.5"}));
  const std::size_t dim = plan->dim();
  std::vector<atrain::packet> bad(10);
  for (auto& p : bad) {
    p.from = 0;
    p.to = 1;
    p.kind = atrain::dasgd_gradients;
    p.seq = 1000000;
    p.f = atrain::float_blob{std::vector<float>(dim, 1.f)};
    p.scalars = {1};
  }
  bad[0].from = 99;                                                 // unknown sender
  bad[1].from = 1;                                                  // itself
  bad[2].f = atrain::float_blob{std::vector<float>(dim + 1, 0.f)};  // wrong size
  bad[3].f = atrain::float_blob{std::vector<float>(dim, std::nanf(""))};
  bad[4].kind = 77;      // unknown stream
  bad[5].scalars = {};   // no count
  bad[6].scalars = {0};  // count 0
  bad[7].seq = 2;        // count > seq
  bad[7].scalars = {3};
  bad[8].scalars = {1000000};           // covers gradient 1 of node 0, already received
  bad[9].seq = std::uint64_t{1} << 40;  // well formed, numbered from the future
  bool sent = false;
  // Every replica, node 1 included, must still equal x0 minus its ledger's
  // gradients: a bad packet applied would show as a model error of ~1.
  ledger_run r{plan,
               [&](atrain::run_probe& probe) {
                 BOOST_REQUIRE(probe.workers.size() == 4u);
                 auto target = caf::actor_cast<caf::actor>(probe.workers[1]);
                 for (auto& p : bad)
                   caf::anon_send(target, atrain::deliver_atom::value, p);
                 sent = true;
               },
               2000, 100};
  BOOST_TEST(sent);
  BOOST_TEST(r.times_applied[1].count({0, 1}) == 1u);  // gradient 1 of node 0 was already in
  BOOST_TEST(r.report.packets_rejected() == bad.size());
  BOOST_TEST(r.model_checks > 20u);
  BOOST_TEST(r.worst_model_error < 1e-5);
}

BOOST_AUTO_TEST_CASE(reaches_the_quickstart_target_with_its_config) {
  g::expect_target("dasgd", t::config("algorithms/dasgd.textproto", {"progress=false"}));
}

BOOST_AUTO_TEST_CASE(reaches_the_target_over_lossy_acknowledged_links) {
  t::expect_target_over_lossy_links("dasgd.textproto");
}

BOOST_AUTO_TEST_CASE(reaches_the_target_on_the_real_clock) {
  g::expect_target_real(
    t::config("quickstart_real.textproto", {"algorithm.dasgd.step_size=0.2", "progress=false"}));
}

BOOST_AUTO_TEST_CASE(same_seed_same_trace_other_seed_differs) {
  g::expect_replay({"algorithm.dasgd.step_size=0.2", "algorithm.dasgd.coalesce=true",
                    "progress=false", "stop.time_seconds=1", "stop.stop_at_target=false",
                    "link.loss=0.2", "link.duplicate=0.2", "link.reorder=0.3",
                    "link.reorder_delay_seconds=0.01", "link.bandwidth_bytes_per_second=50000"});
}

BOOST_AUTO_TEST_SUITE_END()
