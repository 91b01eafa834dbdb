/// Fault injection (spec.faults, actors/faults.hpp): the schedule's lookups,
/// and R-FAST plus synchronous baselines running through each injected fault
/// on the virtual clock, with the invariants checked and the report's faults
/// section filled in.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "atrain/actors/faults.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;

namespace {

using overrides = std::vector<std::string>;

overrides with(overrides base, const overrides& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

atrain::proto::RunReport run(const std::string& config, const overrides& o) {
  auto report = atrain::run_experiment(t::config(config, with({"progress=false"}, o)));
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  return *report;
}

void expect_target(const atrain::proto::RunReport& r) {
  BOOST_TEST(r.stop_reason() == "target accuracy reached");
  BOOST_TEST(r.has_time_to_target());
}

std::uint64_t hits_of(const atrain::proto::FaultRecord& f) {
  return std::stoull(f.effect().substr(0, f.effect().find(' ')));
}

/// An R-FAST run checked for mass after every event; it must reach the target.
atrain::proto::RunReport
rfast_to_target_keeping_mass(std::shared_ptr<const atrain::run_plan> plan) {
  std::size_t checks = 0;
  double worst = 0;
  auto r = t::run_checking_mass(std::move(plan), checks, worst);
  BOOST_TEST(r.error().empty(), r.error());
  expect_target(r);
  BOOST_TEST(checks > 1000u);
  BOOST_TEST(r.mass_residual() < 1e-10);
  return r;
}

const std::string half_partition =
  "faults.partition=[{side_a: [0, 1, 2, 3] from_seconds: 0.2 to_seconds: 0.8}]";

}  // namespace

BOOST_AUTO_TEST_SUITE(faults)

BOOST_AUTO_TEST_CASE(schedule_windows_sides_and_corruption) {
  atrain::proto::FaultSchedule f;
  auto* s = f.add_straggle();
  s->set_node(2);
  s->set_factor(4);
  s->set_from_seconds(1);
  s->set_to_seconds(2);
  auto* p = f.add_partition();
  p->add_side_a(0);
  p->add_side_a(1);
  p->set_from_seconds(0.5);  // to 0: the rest of the run
  auto* b = f.add_loss_burst();
  b->set_loss(0.5);
  b->set_from_seconds(0);
  b->set_to_seconds(1);
  auto* e = b->add_links();
  e->set_from(3);
  e->set_to(4);
  auto* g = f.add_bad_gradients();
  g->set_node(1);
  g->set_kind(atrain::proto::BadGradients::SCALED);
  g->set_factor(-2);
  g->set_from_seconds(3);
  const atrain::fault_schedule fs{f};
  atrain::fault_schedule::hits h;
  BOOST_TEST(fs.compute_factor(2, 0.99, &h) == 1.0);
  BOOST_TEST(fs.compute_factor(2, 1.0, &h) == 4.0);
  BOOST_TEST(fs.compute_factor(2, 2.0, &h) == 1.0);  // the window is half open
  BOOST_TEST(fs.compute_factor(3, 1.5, &h) == 1.0);
  BOOST_TEST(fs.link(0, 5, 0.4).cut == false);
  BOOST_TEST(fs.link(0, 5, 0.5, &h).cut == true);
  BOOST_TEST(fs.link(5, 1, 100).cut == true);  // both directions, to the end
  BOOST_TEST(fs.link(0, 1, 1).cut == false);   // same side
  BOOST_TEST(fs.link(5, 6, 1).cut == false);   // same side (the complement)
  BOOST_TEST(fs.link(3, 4, 0.5).loss == 0.5);
  BOOST_TEST(fs.link(4, 3, 0.5).loss == 0.0);  // directed
  float grad[3] = {1, -2, 3};
  BOOST_TEST(!fs.corrupt(1, 2.9, grad, 3));
  BOOST_TEST(fs.corrupt(1, 3.0, grad, 3, &h));
  BOOST_TEST(grad[1] == 4.0f);
  BOOST_REQUIRE(h.size() == fs.size());
  BOOST_TEST(h[0] == 1u);  // straggle counted once (t = 1.0)
  BOOST_TEST(h[1] == 1u);  // partition counted once (t = 0.5)
  BOOST_TEST(h[2] == 0u);  // burst looked up without counters
  BOOST_TEST(h[3] == 1u);  // bad gradients
  const auto d = fs.describe();
  BOOST_REQUIRE(d.size() == 4u);
  BOOST_TEST(d[1].what == "{0,1} | every other node");
  BOOST_TEST(d[2].what == "loss 0.5 on 3->4");
}

BOOST_AUTO_TEST_CASE(straggle_bases_and_fixed_delays_are_looked_up_apart) {
  atrain::proto::FaultSchedule f;
  auto add = [&f](std::uint32_t node, double factor, atrain::proto::StraggleBasis basis,
                  double add_seconds) {
    auto* s = f.add_straggle();
    s->set_node(node);
    s->set_factor(factor);
    s->set_basis(basis);
    s->set_add_seconds(add_seconds);
  };
  add(1, 3, atrain::proto::MEASURED, 0);
  add(1, 2, atrain::proto::NOMINAL_TAU, 0.25);
  add(1, 1, atrain::proto::MEASURED, 0.5);
  const atrain::fault_schedule fs{f};
  atrain::fault_schedule::hits h;
  const auto s = fs.compute_slowdown(1, 0, &h);
  BOOST_TEST(s.measured == 3.0);
  BOOST_TEST(s.nominal == 2.0);
  BOOST_TEST(s.nominal_active);
  BOOST_TEST(s.add_seconds == 0.75);
  BOOST_TEST(fs.compute_factor(1, 0) == 6.0);  // every factor, whatever its basis
  BOOST_TEST((h == atrain::fault_schedule::hits{1, 1, 1}));
  const auto none = fs.compute_slowdown(0, 0);
  BOOST_TEST((none.measured == 1.0 && none.nominal == 1.0 && !none.nominal_active &&
              none.add_seconds == 0.0));
  const auto d = fs.describe();
  BOOST_TEST(d[0].what == "node 1 computes x3");
  BOOST_TEST(d[1].what == "node 1 computes x2 of its nominal tau + 0.25 s per gradient");
}

BOOST_AUTO_TEST_CASE(a_fixed_delay_straggler_adds_its_delay_to_every_gradient) {
  // tau 10 ms without jitter, + 30 ms on node 3: 40 ms per gradient, so a
  // quarter of the others' count in 2 s (the first gradient starts at 0).
  const auto r = run("quickstart.textproto",
                     {"cost.jitter=0", "faults.straggle=[{node: 3 factor: 1 add_seconds: 0.03}]",
                      "stop.stop_at_target=false", "stop.time_seconds=2"});
  const auto slow = r.per_node(3).gradients();
  BOOST_TEST(slow >= 48u);  // 2 s / 40 ms, the tracker's first gradient, +- a wake
  BOOST_TEST(slow <= 52u);
  for (const auto& n : r.per_node())
    if (n.node() != 3)
      BOOST_TEST(n.gradients() >= 190u);  // 2 s / 10 ms
  BOOST_REQUIRE(r.faults_size() == 1);
  BOOST_TEST(r.faults(0).what() == "node 3 computes x1 + 0.03 s per gradient");
}

BOOST_AUTO_TEST_CASE(rfast_through_a_healing_partition_keeps_its_mass_and_reaches_the_target) {
  auto plan = t::quickstart({half_partition, "progress=false"});
  auto r = rfast_to_target_keeping_mass(plan);
  BOOST_REQUIRE(r.faults_size() == 1);
  BOOST_TEST(r.faults(0).kind() == "partition");
  BOOST_TEST(r.faults(0).to_seconds() == 0.8);
  BOOST_TEST(hits_of(r.faults(0)) > 100u);
  BOOST_TEST(r.packets_dropped() == hits_of(r.faults(0)));  // the only losses
  BOOST_TEST_MESSAGE("rfast, partition 0.2-0.8 s: target at " << r.time_to_target() << " s, "
                                                              << r.faults(0).effect());
}

BOOST_AUTO_TEST_CASE(allreduce_waits_out_a_partition_then_reaches_the_target) {
  const auto base = run("algorithms/allreduce.textproto", {"eval.period_seconds=0.05"});
  const auto cut =
    run("algorithms/allreduce.textproto", {half_partition, "eval.period_seconds=0.05"});
  expect_target(base);
  expect_target(cut);
  BOOST_TEST(cut.packets_retransmitted() > 0u);
  BOOST_REQUIRE(cut.faults_size() == 1);
  BOOST_TEST(hits_of(cut.faults(0)) > 0u);
  // A synchronous ring cannot step while it is cut: the same steps happen,
  // 0.6 s later (virtual time, deterministic), give or take an evaluation
  // period and a round.
  BOOST_TEST(base.time_to_target() > 0.8);
  BOOST_TEST(cut.time_to_target() >= base.time_to_target() + 0.5);
  BOOST_TEST(cut.time_to_target() <= base.time_to_target() + 0.7);
  BOOST_TEST_MESSAGE("allreduce: target at " << base.time_to_target() << " s, with the partition "
                                             << cut.time_to_target() << " s");
}

BOOST_AUTO_TEST_CASE(a_straggler_window_slows_one_node_and_the_others_go_on) {
  const overrides slow{"faults.straggle=[{node: 3 factor: 4 from_seconds: 0 to_seconds: 100}]",
                       "stop.stop_at_target=false", "stop.time_seconds=1"};
  const auto r = run("quickstart.textproto", slow);
  BOOST_REQUIRE(r.per_node_size() == 8);
  for (const auto& n : r.per_node())
    if (n.node() != 3)
      BOOST_TEST(r.per_node(3).gradients() * 3 < n.gradients());
  BOOST_REQUIRE(r.faults_size() == 1);
  BOOST_TEST(hits_of(r.faults(0)) == r.per_node(3).gradients());
  // The ring waits for the slowest node at every step: every node computes
  // as few gradients as node 3 (a round is 4 tau + the ring's 14 latencies
  // instead of tau + 14 latencies).
  const auto ring = run("algorithms/allreduce.textproto", slow);
  const auto plain =
    run("algorithms/allreduce.textproto", {"stop.stop_at_target=false", "stop.time_seconds=1"});
  BOOST_TEST(ring.gradients_total() * 4 < plain.gradients_total() * 3);
  for (const auto& n : ring.per_node())
    BOOST_TEST(n.gradients() <= ring.per_node(3).gradients() + 1);
  BOOST_TEST(std::isfinite(ring.final().train_loss()));
  // Both report node 3, and only node 3, as a straggler (seconds per
  // gradient from the heartbeats: about 4x the median; jitter alone stays
  // under 1.5x), detected at the first evaluation.
  for (const auto* rep : {&r, &ring}) {
    BOOST_REQUIRE(rep->stragglers_size() == 1);
    BOOST_TEST(rep->stragglers(0).node() == 3u);
    BOOST_TEST(rep->stragglers(0).detected_seconds() <= 0.25 + 1e-9);
    BOOST_TEST(rep->stragglers(0).slowest_factor() > 3.0);
    BOOST_TEST(rep->stragglers(0).slowest_factor() < 5.5);
    BOOST_TEST(!rep->stragglers(0).has_recovered_seconds());
  }
  BOOST_TEST(plain.stragglers_size() == 0);
  BOOST_TEST_MESSAGE("rfast node 3 x4: " << r.per_node(3).gradients() << " gradients vs node 0 "
                                         << r.per_node(0).gradients() << "; allreduce "
                                         << ring.gradients_total() << " vs "
                                         << plain.gradients_total() << " gradients");
}

BOOST_AUTO_TEST_CASE(a_straggler_window_is_detected_and_its_recovery_too) {
  const auto r = run("quickstart.textproto",
                     {"faults.straggle=[{node: 6 factor: 5 from_seconds: 0.5 to_seconds: 1.0}]",
                      "stop.stop_at_target=false", "stop.time_seconds=2"});
  BOOST_REQUIRE(r.stragglers_size() == 1);
  BOOST_TEST(r.stragglers(0).node() == 6u);
  BOOST_TEST(r.stragglers(0).detected_seconds() >= 0.5);
  BOOST_TEST(r.stragglers(0).detected_seconds() <= 1.0);
  BOOST_REQUIRE(r.stragglers(0).has_recovered_seconds());
  BOOST_TEST(r.stragglers(0).recovered_seconds() > 1.0);
  BOOST_TEST(r.stragglers(0).recovered_seconds() <= 1.5);
}

BOOST_AUTO_TEST_CASE(loss_bursts_and_delay_spikes_are_absorbed) {
  const overrides burst{"faults.loss_burst=[{loss: 0.5 from_seconds: 0.1 to_seconds: 0.7}]",
                        "faults.delay_spike=[{extra_latency_seconds: 0.05 from_seconds: 0.3 "
                        "to_seconds: 0.6 links: [{from: 0 to: 1}, {from: 1 to: 0}]}]"};
  const auto base = run("quickstart.textproto", {});
  const auto r = run("quickstart.textproto", burst);
  expect_target(r);
  BOOST_TEST(r.packets_dropped() > base.packets_dropped());
  BOOST_REQUIRE(r.faults_size() == 2);
  BOOST_TEST(hits_of(r.faults(0)) > 0u);
  BOOST_TEST(hits_of(r.faults(1)) > 0u);
  const auto d = run("algorithms/dpsgd.textproto", burst);
  expect_target(d);
  BOOST_TEST(d.packets_retransmitted() > 0u);
  BOOST_TEST_MESSAGE("rfast with a 50% burst: " << r.packets_dropped() << " dropped, target at "
                                                << r.time_to_target() << " s; dpsgd "
                                                << d.packets_retransmitted() << " retransmitted");
}

BOOST_AUTO_TEST_CASE(scaled_gradients_are_injected_and_rfast_recovers) {
  const auto r = run("quickstart.textproto",
                     {"faults.bad_gradients=[{node: 2 kind: SCALED factor: 20 from_seconds: 0.1 "
                      "to_seconds: 0.3}]"});
  expect_target(r);
  BOOST_REQUIRE(r.faults_size() == 1);
  BOOST_TEST(hits_of(r.faults(0)) > 5u);
  BOOST_TEST(r.mass_residual() < 1e-10);
}

BOOST_AUTO_TEST_CASE(a_crashed_rfast_worker_is_restarted_and_the_mass_stays_conserved) {
  auto plan = t::quickstart(
    {"faults.crash=[{node: 2 at_seconds: 0.3 restart_after_seconds: 0.2}]", "progress=false"});
  auto r = rfast_to_target_keeping_mass(plan);
  BOOST_REQUIRE(r.faults_size() == 1);
  BOOST_TEST(r.faults(0).kind() == "crash");
  BOOST_TEST(r.faults(0).effect().find("restarted at") != std::string::npos, r.faults(0).effect());
  // The model came from a G_R in-neighbour of node 2, not from x^0.
  bool from_neighbour = false;
  for (auto j : plan->topo->g_r.in(2))
    from_neighbour = from_neighbour || r.faults(0).effect().find("node " + std::to_string(j) +
                                                                 "'s model") != std::string::npos;
  BOOST_TEST(from_neighbour, r.faults(0).effect());
  // Node 2 worked before the crash and after the restart (both counted).
  const auto base = run("quickstart.textproto", {});
  BOOST_TEST(r.per_node(2).gradients() > 0u);
  BOOST_TEST(r.per_node(2).gradients() < r.per_node(3).gradients());
  BOOST_TEST_MESSAGE("rfast crash of node 2 at 0.3 s, restart 0.2 s later: target at "
                     << r.time_to_target() << " s (no crash: " << base.time_to_target() << " s); "
                     << r.faults(0).effect());
}

BOOST_AUTO_TEST_CASE(an_rfast_worker_lost_for_good_leaves_its_buffer_relaying_the_mass) {
  // Its G_R out-neighbours stop pulling its frozen model (stale_model_wakes,
  // default 50) and the run reaches the target with the mass conserved.
  const std::string crash = "faults.crash=[{node: 2 at_seconds: 0.3}]";
  auto r = rfast_to_target_keeping_mass(t::quickstart({crash, "progress=false"}));
  BOOST_REQUIRE(r.faults_size() == 1);
  BOOST_TEST(r.faults(0).effect().find("withdrew the node's gradient") != std::string::npos,
             r.faults(0).effect());
  // Keeping the dead node's last model in the pull step drags everyone back.
  const auto keep = run("quickstart.textproto",
                        {crash, "algorithm.rfast.stale_model_wakes=0", "stop.time_seconds=5"});
  BOOST_TEST(!keep.has_time_to_target());
  BOOST_TEST_MESSAGE("rfast without node 2's worker: target at "
                     << r.time_to_target()
                     << " s; keeping its model: " << keep.final().test_accuracy() << " at 5 s");
}

BOOST_AUTO_TEST_CASE(a_node_lost_for_good_is_reported_and_rfast_goes_on) {
  const auto r =
    run("quickstart.textproto", {"faults.crash=[{node: 5 at_seconds: 0.3 whole_node: true}]",
                                 "stop.stop_at_target=false", "stop.time_seconds=2"});
  BOOST_TEST(r.stop_reason() == "time budget spent");
  BOOST_REQUIRE(r.faults_size() == 1);
  BOOST_TEST(r.faults(0).effect().find("lost for good") != std::string::npos, r.faults(0).effect());
  BOOST_TEST(std::isfinite(r.final().train_loss()));
  // What is lost: node 5's tracker mass (its share of the gradient sum). The
  // supervisor starts a new tracking epoch over the 7 survivors, so the
  // tracked sum equals their gradients again and training goes on unbiased
  // (without it: about 0.73-0.77 at 2 s, see rfast_reroot_test).
  BOOST_TEST(r.faults(0).effect().find("new tracking epoch 1 over the 7 survivors") !=
               std::string::npos,
             r.faults(0).effect());
  BOOST_TEST(r.final().test_accuracy() > 0.83);
  BOOST_TEST(r.mass_residual() < 1e-12);
  BOOST_TEST(r.per_node(5).gradients() > 0u);  // its work before the crash still counts
  BOOST_TEST_MESSAGE("rfast without node 5: accuracy " << r.final().test_accuracy()
                                                       << ", mass residual " << r.mass_residual());
}

BOOST_AUTO_TEST_CASE(a_synchronous_ring_that_loses_a_node_fails_with_the_reason) {
  auto report = atrain::run_experiment(
    t::config("algorithms/allreduce.textproto",
              {"faults.crash=[{node: 3 at_seconds: 0.5}]", "progress=false"}));
  BOOST_REQUIRE(report);
  BOOST_TEST(report->stop_reason() == "error");
  BOOST_TEST(report->error().find("node 3 crashed") != std::string::npos, report->error());
  BOOST_TEST(report->error().find("cannot go on without it") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(asynchronous_algorithms_go_on_without_a_crashed_node) {
  for (const char* a : {"dasgd", "adpsgd", "async_ps"}) {
    const auto r = run(std::string{"algorithms/"} + a + ".textproto",
                       {"faults.crash=[{node: 2 at_seconds: 0.3}]"});
    BOOST_TEST_CONTEXT(a) {
      expect_target(r);
      BOOST_REQUIRE(r.faults_size() == 1);
      BOOST_TEST(r.faults(0).effect().find("lost for good") != std::string::npos);
    }
  }
  // Push-sum cannot: the mass it sends to the lost node is gone.
  auto r = atrain::run_experiment(t::config(
    "algorithms/osgp.textproto", {"faults.crash=[{node: 2 at_seconds: 0.3}]", "progress=false"}));
  BOOST_REQUIRE(r);
  BOOST_TEST(r->error().find("osgp cannot go on without it") != std::string::npos, r->error());
  // The parameter server's node lost whole takes the served model with it:
  // the run ends saying so (its worker alone would be lost for good).
  auto ps = atrain::run_experiment(
    t::config("algorithms/async_ps.textproto",
              {"faults.crash=[{node: 0 at_seconds: 0.3 whole_node: true}]", "progress=false"}));
  BOOST_REQUIRE(ps);
  BOOST_TEST(ps->error().find("node 0 crashed whole at 0.300000 s with the parameter server") !=
               std::string::npos,
             ps->error());
}

BOOST_AUTO_TEST_CASE(a_node_computing_nan_is_quarantined_at_the_source) {
  const std::string nan =
    "faults.bad_gradients=[{node: 2 kind: NOT_FINITE from_seconds: 0.1 to_seconds: 0.6}]";
  auto r = rfast_to_target_keeping_mass(t::quickstart({nan, "progress=false"}));
  BOOST_REQUIRE(r.faults_size() == 1);
  BOOST_REQUIRE(r.quarantined_size() == 1);
  BOOST_TEST(r.quarantined(0).node() == 2u);
  BOOST_TEST(r.quarantined(0).since_seconds() >= 0.1);
  BOOST_TEST(r.quarantined(0).since_seconds() < 0.15);
  BOOST_TEST(r.quarantined(0).gradients_refused() == hits_of(r.faults(0)));
  BOOST_TEST(r.packets_rejected() == 0u);  // nothing non-finite ever left node 2
  const auto d = run("algorithms/dpsgd.textproto", {nan});
  expect_target(d);
  BOOST_REQUIRE(d.quarantined_size() == 1);
  BOOST_TEST(d.quarantined(0).gradients_refused() > 10u);
  BOOST_TEST(std::isfinite(d.consensus_error()));
  BOOST_TEST_MESSAGE("rfast: node 2 quarantined from " << r.quarantined(0).since_seconds() << " s, "
                                                       << r.quarantined(0).gradients_refused()
                                                       << " gradients refused, target at "
                                                       << r.time_to_target() << " s");
}

BOOST_AUTO_TEST_CASE(a_session_with_several_faults_replays_exactly) {
  t::expect_replay([](std::uint64_t seed) {
    return t::quickstart({"seed=" + std::to_string(seed), "stop.time_seconds=1",
                          "stop.stop_at_target=false", "progress=false", half_partition,
                          "faults.straggle=[{node: 5 factor: 3 from_seconds: 0.1 to_seconds: 0.5}]",
                          "faults.loss_burst=[{loss: 0.3 from_seconds: 0.4 to_seconds: 0.9}]",
                          "faults.delay_spike=[{extra_latency_seconds: 0.02 from_seconds: 0.5}]",
                          "faults.crash=[{node: 6 at_seconds: 0.3 restart_after_seconds: 0.1}]"});
  });
}

// 128 nodes on the exponential graph have 1,664 links (both graphs share
// them), more than the evaluator keeps asking at once (1,024): every
// evaluation still completes, and the drops it sums over all links are the
// loss rate of every packet sent (the first 1,024 links alone read ~0.12).
BOOST_AUTO_TEST_CASE(an_evaluation_counts_every_link_of_a_128_node_run) {
  const auto r =
    run("quickstart.textproto", {"nodes=128", "link.loss=0.2", "stop.stop_at_target=false",
                                 "stop.time_seconds=0.5", "eval.period_seconds=0.1"});
  BOOST_TEST(r.metrics_size() == 6);  // t = 0, 0.1, ..., 0.5
  const double rate =
    static_cast<double>(r.packets_dropped()) / static_cast<double>(r.messages_sent());
  BOOST_TEST(r.messages_sent() > 100000u);
  BOOST_TEST(rate > 0.19);
  BOOST_TEST(rate < 0.21);
  BOOST_TEST_MESSAGE("128 nodes, loss 0.2: " << r.packets_dropped() << " of " << r.messages_sent()
                                             << " packets dropped (" << rate << ")");
}

BOOST_AUTO_TEST_SUITE_END()
