/// Checkpoints combined with injected crashes (README "Checkpoint and
/// resume", docs/RELIABILITY.md): a barrier never cuts through a restart (it
/// waits until the crashed worker has joined), a crash due during a barrier
/// waits for its end, and the file says which crashes happened, which the
/// barrier held back and each node's restarts. A resumed run therefore does
/// not inject a crash twice, and ends exactly like the uninterrupted run —
/// with crashes before, during and after the checkpoint, for every
/// algorithm that restarts a crashed worker.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "checkpoint_fixtures.hpp"

using namespace atrain::test::ckpt;

namespace {

struct algo_case {
  std::string name;
  std::string config;
  std::vector<std::string> base;
};

std::ostream& operator<<(std::ostream& os, const algo_case& c) {
  return os << c.name;
}

/// Every algorithm that restarts a crashed worker, over lossy links.
const std::vector<algo_case>& restartable() {
  static const std::vector<std::string> lossy{"dataset.max_train_samples=8000", "link.loss=0.1"};
  static const auto four = with(lossy, {"nodes=4"});
  static const std::vector<algo_case> all{
    {"rfast", "quickstart.textproto", lossy},
    {"async_ps", "algorithms/async_ps.textproto", lossy},
    {"adpsgd", "algorithms/adpsgd.textproto", lossy},
    {"dpsgd", "algorithms/dpsgd.textproto", lossy},
    {"allreduce", "algorithms/allreduce.textproto", lossy},
    {"local_sgd", "algorithms/local_sgd.textproto", lossy},
    {"diloco", "algorithms/diloco.textproto", lossy},
    {"sgp", "algorithms/sgp.textproto", lossy},
    {"osgp", "algorithms/osgp.textproto", lossy},
    {"dasgd", "algorithms/dasgd.textproto", four},
    {"loscar", "algorithms/loscar.textproto", four},
  };
  return all;
}

namespace data = boost::unit_test::data;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(checkpoint_crash, remove_scratch)

// Node 1 crashes 50 ms before the first barrier and restarts 100 ms later:
// the barrier waits for it to join; node 2 crashes between the barriers
// (after the resume point) and restarts. The resumed run injects node 1's
// crash no second time and node 2's at its time.
BOOST_DATA_TEST_CASE(a_barrier_waits_for_a_restart_and_a_resumed_run_replays_the_rest,
                     data::make(restartable()), c) {
  const double t1 = 0.5, t2 = 1.0, end = 1.3;
  const auto& name = c.name;
  const auto crashes =
    "faults.crash=[{node: 1 at_seconds: " + std::to_string(t1 - 0.05) +
    " restart_after_seconds: 0.1}, {node: 2 at_seconds: " + std::to_string(t1 + 0.2) +
    " restart_after_seconds: 0.05}]";
  expect_resume_equals_uninterrupted(c.config, with(c.base, {crashes}), t1, t2, end, name + "_wait",
                                     0.2);
  const auto plan = t::config(c.config, with(c.base, {crashes}));
  const auto ck = load(scratch(name + "_wait_B_1.ckpt"), *plan);
  // The barrier began after node 1's replacement joined (>= t1 + 0.05).
  BOOST_TEST(ck->requested_seconds() == t1);
  BOOST_TEST(ck->time_seconds() >= t1 + 0.05);
  const auto& sup = ck->supervisor();
  BOOST_TEST(std::vector<std::uint32_t>(sup.crashes_fired().begin(), sup.crashes_fired().end()) ==
             std::vector<std::uint32_t>{0});
  BOOST_TEST(sup.crashes_deferred_size() == 0);
  BOOST_REQUIRE(sup.incarnations_size() == ck->nodes_size());
  BOOST_TEST(sup.incarnations(1) == 1u);
  BOOST_TEST(sup.incarnations(2) == 0u);
  // The report's fault records survive the resume (checked whole by
  // expect_resume_equals_uninterrupted; here: node 1's says restarted).
  BOOST_REQUIRE(ck->evaluator().fault_effects_size() == 1);
  BOOST_TEST(ck->evaluator().fault_effects(0).effect().find("restarted at") != std::string::npos);
  BOOST_TEST_MESSAGE(name << ": barrier requested at " << t1 << " s began after the restart, "
                          << "taken at " << ck->time_seconds() << " s");
}

// A crash due while the barrier drains waits for its end: the file lists it
// as held back, the resumed run injects it when its barrier lets the
// workers go — as the uninterrupted run did.
BOOST_DATA_TEST_CASE(a_crash_due_during_a_barrier_happens_at_its_end, data::make(restartable()),
                     c) {
  const double t1 = 0.5, t2 = 1.0, end = 1.3;
  const auto& name = c.name;
  // 1 us after the barrier began: every algorithm's drain (at least the
  // gradient in flight) lasts longer.
  const auto crashes = "faults.crash=[{node: 3 at_seconds: " + std::to_string(t1 + 1e-6) +
                       " restart_after_seconds: 0.05}]";
  expect_resume_equals_uninterrupted(c.config, with(c.base, {crashes}), t1, t2, end,
                                     name + "_held");
  const auto plan = t::config(c.config, with(c.base, {crashes}));
  const auto ck = load(scratch(name + "_held_B_1.ckpt"), *plan);
  const auto& sup = ck->supervisor();
  BOOST_TEST(sup.crashes_fired_size() == 0);
  BOOST_TEST(sup.crashes_deferred_size() == 1);
  BOOST_TEST_MESSAGE(name << ": crash due at " << t1 + 1e-6 << " s held until the barrier's "
                          << "end at " << ck->time_seconds() << " s");
}

// A crash without restart cannot be checkpointed (the run's topology would
// change for good): refused by the spec check, naming the crash.
BOOST_AUTO_TEST_CASE(a_node_lost_for_good_is_refused_with_checkpoints) {
  const auto e = spec_error_of("quickstart.textproto",
                               {"checkpoint.every_seconds=1", "checkpoint.file=x",
                                "faults.crash=[{node: 1 at_seconds: 0.5 restart_after_seconds: "
                                "0.1}, {node: 2 at_seconds: 2}]"});
  BOOST_TEST(e.find("faults.crash[1]: a run with checkpoints restarts its crashed workers") !=
               std::string::npos,
             e);
  BOOST_TEST(e.find("faults.crash[0]") == std::string::npos, e);
}

// Centralized SGD has no other node to take a model from: its replacement
// restarts from the run's last checkpoint (model, step count, sampler) and
// the steps after it are lost. With the virtual clock the replacement then
// repeats them exactly: the run crashed at 0.7 s and restarted 0.05 s later
// ends, (R - T_c) later, with the uninterrupted run's model bit for bit.
// Before any checkpoint it restarts from x^0 (the run from the start).
BOOST_AUTO_TEST_CASE(centralized_restarts_from_its_last_checkpoint) {
  const std::string config = "algorithms/centralized.textproto";
  const std::vector<std::string> base{"dataset.max_train_samples=8000", "progress=false",
                                      "stop.stop_at_target=false"};
  const double end = 1.2, crash_at = 0.7, restart_after = 0.05;
  auto plan_u = t::config(
    config, with(base, {"stop.time_seconds=" + std::to_string(end), "checkpoint.at_seconds=[0.5]",
                        "checkpoint.file=" + scratch("central_U_{k}.ckpt").string()}));
  const auto u = run(plan_u);
  BOOST_REQUIRE(u.checkpoints_size() == 1);
  const double taken = u.checkpoints(0).taken_seconds();
  const double lost = crash_at + restart_after - taken;  // the replacement's delay
  const auto crash = "faults.crash=[{node: 0 at_seconds: " + std::to_string(crash_at) +
                     " restart_after_seconds: " + std::to_string(restart_after) + "}]";
  auto plan_k =
    t::config(config, with(base, {"stop.time_seconds=" + std::to_string(end + lost),
                                  "checkpoint.at_seconds=[0.5]", crash,
                                  "checkpoint.file=" + scratch("central_K_{k}.ckpt").string()}));
  const auto k = run(plan_k);
  BOOST_REQUIRE(k.faults_size() == 1);
  BOOST_TEST(k.faults(0).effect().find("checkpoint 1") != std::string::npos, k.faults(0).effect());
  BOOST_TEST(k.final().train_loss() == u.final().train_loss());
  BOOST_TEST(k.final().test_accuracy() == u.final().test_accuracy());
  // No checkpoint before the crash: x^0, the run from the start again.
  auto plan_0 = t::config(
    config,
    with(base, {"stop.time_seconds=" + std::to_string(0.5 + crash_at + restart_after), crash}));
  auto plan_e = t::config(config, with(base, {"stop.time_seconds=0.5"}));
  const auto z = run(plan_0);
  const auto e = run(plan_e);
  BOOST_TEST(z.faults(0).effect().find("x^0") != std::string::npos, z.faults(0).effect());
  BOOST_TEST(z.final().train_loss() == e.final().train_loss());
  BOOST_TEST_MESSAGE("centralized: checkpoint at "
                     << taken << " s, crash at " << crash_at << " s, restarted " << restart_after
                     << " s later from the checkpoint: "
                     << "final loss " << k.final().train_loss() << " = uninterrupted "
                     << u.final().train_loss() << " (" << lost
                     << " s later); effect: " << k.faults(0).effect());
  // And a checkpointed run with a restart resumes exactly.
  expect_resume_equals_uninterrupted(config,
                                     {"dataset.max_train_samples=8000",
                                      "faults.crash=[{node: 0 at_seconds: 0.45 "
                                      "restart_after_seconds: 0.1}]"},
                                     0.5, 1.0, 1.3, "central_wait", 0.2);
}

BOOST_AUTO_TEST_SUITE_END()
