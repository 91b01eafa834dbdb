#pragma once
/// Shared by the checkpoint tests: scratch files, running a spec
/// uninterrupted / stopped at a barrier / resumed, and comparing the states
/// and reports bit for bit.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "atrain/actors/checkpoint.hpp"
#include "fixtures.hpp"

namespace atrain::test::ckpt {

namespace t = atrain::test;
namespace fs = std::filesystem;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

inline fs::path scratch_dir() {
  return fs::temp_directory_path() / ("atrain_ckpt_test_" + std::to_string(::getpid()));
}

inline fs::path scratch(const std::string& name) {
  fs::create_directories(scratch_dir());
  return scratch_dir() / name;
}

/// Each test's checkpoint files go when it ends.
struct remove_scratch {
  remove_scratch() = default;
  remove_scratch(const remove_scratch&) = delete;
  remove_scratch& operator=(const remove_scratch&) = delete;
  ~remove_scratch() {
    std::error_code ec;
    fs::remove_all(scratch_dir(), ec);
  }
};

inline std::vector<std::string> with(std::vector<std::string> base,
                                     const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

inline RunReport run(std::shared_ptr<const atrain::run_plan> plan,
                     std::shared_ptr<const Checkpoint> resume = nullptr,
                     const std::string& file = {}) {
  atrain::run_options opts;
  opts.progress = false;
  opts.resume = std::move(resume);
  opts.resume_file = file;
  auto report = atrain::run_experiment(std::move(plan), opts);
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  return *report;
}

inline std::shared_ptr<const Checkpoint> load(const fs::path& file, const atrain::run_plan& plan) {
  auto ck = atrain::load_checkpoint(file.string(), plan);
  if (!ck)
    BOOST_FAIL("cannot load " << file << ": " << atrain::error_text(ck.error()));
  return *ck;
}

/// The report without what legitimately differs between an uninterrupted
/// run and a resumed one (wall time, checkpoint file names, resume note).
inline std::string comparable(RunReport r) {
  r.clear_wall_seconds();
  r.clear_checkpoints();
  r.clear_resumed_from();
  r.clear_resumed_at_seconds();
  return r.SerializeAsString();
}

/// Every node's saved state (models, trackers, samplers, generators,
/// counters), every link's and the evaluator's must be identical bit for bit.
inline void expect_same_state(const Checkpoint& a, const Checkpoint& b) {
  BOOST_TEST(a.time_ns() == b.time_ns());
  BOOST_TEST(a.trace_hash() == b.trace_hash());
  BOOST_TEST(a.trace_events() == b.trace_events());
  BOOST_REQUIRE(a.nodes_size() == b.nodes_size());
  for (int i = 0; i < a.nodes_size(); ++i) {
    const auto& x = a.nodes(i).params();
    const auto& y = b.nodes(i).params();
    BOOST_REQUIRE(x.size() == y.size());
    BOOST_TEST(
      std::memcmp(x.data(), y.data(), sizeof(float) * static_cast<std::size_t>(x.size())) == 0,
      "node " << i << "'s model differs");
    BOOST_TEST(a.nodes(i).SerializeAsString() == b.nodes(i).SerializeAsString(),
               "node " << i << "'s state differs");
  }
  BOOST_REQUIRE(a.links_size() == b.links_size());
  for (int k = 0; k < a.links_size(); ++k)
    BOOST_TEST(a.links(k).SerializeAsString() == b.links(k).SerializeAsString());
  BOOST_TEST(a.evaluator().SerializeAsString() == b.evaluator().SerializeAsString());
}

/// Runs `base` with checkpoints at T1 < T2 uninterrupted (A), the same spec
/// stopped `b_stop_after` after T1 (B, checkpoint at T1 only; a barrier
/// that waits for a restart needs longer), and A's spec resumed
/// from B's file (C): B's checkpoint equals A's first, C's second equals
/// A's second, and C's report equals A's.
inline void expect_resume_equals_uninterrupted(const std::string& config,
                                               const std::vector<std::string>& base, double t1,
                                               double t2, double end, const std::string& tag,
                                               double b_stop_after = 1e-4) {
  const auto a_file = scratch(tag + "_A_{k}.ckpt").string();
  const auto b_file = scratch(tag + "_B_{k}.ckpt").string();
  const auto c_file = scratch(tag + "_C_{k}.ckpt").string();
  auto times = "checkpoint.at_seconds=[" + std::to_string(t1) + "," + std::to_string(t2) + "]";
  auto common = with(base, {"progress=false", "stop.stop_at_target=false",
                            "stop.time_seconds=" + std::to_string(end), times});
  auto plan_a = t::config(config, with(common, {"checkpoint.file=" + a_file}));
  const auto a = run(plan_a);
  BOOST_REQUIRE(a.checkpoints_size() == 2);
  auto plan_b =
    t::config(config, with(base, {"progress=false", "stop.stop_at_target=false",
                                  "stop.time_seconds=" + std::to_string(t1 + b_stop_after),
                                  "checkpoint.at_seconds=[" + std::to_string(t1) + "]",
                                  "checkpoint.file=" + b_file}));
  const auto b = run(plan_b);
  BOOST_REQUIRE(b.checkpoints_size() == 1);
  BOOST_TEST(b.duration_seconds() < end);
  const auto a1 = load(scratch(tag + "_A_1.ckpt"), *plan_a);
  const auto b1 = load(scratch(tag + "_B_1.ckpt"), *plan_a);  // only stop/checkpoint differ
  expect_same_state(*a1, *b1);
  auto plan_c = t::config(config, with(common, {"checkpoint.file=" + c_file}));
  const auto resumed = scratch(tag + "_B_1.ckpt").string();
  const auto c = run(plan_c, load(resumed, *plan_c), resumed);
  BOOST_TEST(c.resumed_from() == resumed);
  BOOST_TEST(c.resumed_at_seconds() == b1->time_seconds());
  BOOST_REQUIRE(c.checkpoints_size() == 2);  // B's, then C's own second
  BOOST_TEST(c.checkpoints(1).number() == 2u);
  expect_same_state(*load(scratch(tag + "_A_2.ckpt"), *plan_a),
                    *load(scratch(tag + "_C_2.ckpt"), *plan_a));
  BOOST_TEST(c.trace_hash() == a.trace_hash());
  BOOST_TEST(c.trace_events() == a.trace_events());
  BOOST_TEST(c.final().train_loss() == a.final().train_loss());
  BOOST_TEST(c.final().test_accuracy() == a.final().test_accuracy());
  BOOST_TEST(c.metrics_size() == a.metrics_size());
  BOOST_TEST(comparable(c) == comparable(a));
  const auto& ck = a.checkpoints(0);
  BOOST_TEST(ck.taken_seconds() >= ck.requested_seconds());
  BOOST_TEST_MESSAGE(tag << ": checkpoint at " << ck.requested_seconds() << " s drained in "
                         << ck.drain_seconds() << " s virtual (" << ck.bytes()
                         << " bytes); resumed run = uninterrupted: trace " << a.trace_hash() << " ("
                         << a.trace_events() << " events), final loss " << a.final().train_loss()
                         << ", " << a.metrics_size() << " rows");
}

/// `config` run with a probe, a checkpoint at `at` and the stop right after
/// it (the run ends at T_c, its workers held); `each_step` sees the probe
/// after every scheduler step. Returns the checkpoint's file; `plan` is the
/// spec without the stop (to load the file with).
inline fs::path run_probed_to_checkpoint(const std::string& config,
                                         std::vector<std::string> overrides, double at,
                                         const std::string& tag,
                                         const std::function<void(atrain::run_probe&)>& each_step,
                                         std::shared_ptr<const atrain::run_plan>& plan) {
  const auto file = scratch(tag + "_{k}.ckpt").string();
  plan = t::config(config, overrides);
  auto stopped = t::config(
    config, with(std::move(overrides), {"progress=false", "stop.stop_at_target=false",
                                        "stop.time_seconds=" + std::to_string(at + 1e-4),
                                        "checkpoint.at_seconds=[" + std::to_string(at) + "]",
                                        "checkpoint.file=" + file}));
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  opts.progress = false;
  atrain::virtual_run vr{stopped, opts};
  while (vr.step())
    each_step(*probe);
  auto report = vr.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_REQUIRE(report->checkpoints_size() == 1);
  return scratch(tag + "_1.ckpt");
}

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

inline void write_bytes(const fs::path& p, const std::string& b) {
  std::ofstream out{p, std::ios::binary};
  out << b;
}

inline std::string load_error(const fs::path& file, const atrain::run_plan& plan) {
  auto ck = atrain::load_checkpoint(file.string(), plan);
  BOOST_REQUIRE(!ck);
  return atrain::error_text(ck.error());
}

inline std::string spec_error_of(const std::string& config,
                                 const std::vector<std::string>& overrides) {
  try {
    (void)t::config(config, overrides);
  } catch (const atrain::spec_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace atrain::test::ckpt
