/// Checkpoints common to every algorithm (README "Checkpoint and resume"):
/// bad checkpoint files refused before anything starts, every block
/// validated field by field, a real-clock run resumed to its target. Each
/// algorithm's resume-equals-uninterrupted and invariant checks are in
/// tests/algorithms/NAME/NAME_checkpoint_test.cpp.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "algorithms/async_ps/async_ps.hpp"
#include "algorithms/dasgd/dasgd.hpp"
#include "algorithms/dpsgd/dpsgd.hpp"
#include "algorithms/rfast/rfast.hpp"
#include "algorithms/sgp/sgp.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"
#include "gossip_fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using proto_params = google::protobuf::RepeatedField<float>;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

using namespace atrain::test::ckpt;

BOOST_FIXTURE_TEST_SUITE(checkpoint, remove_scratch)

BOOST_AUTO_TEST_CASE(bad_checkpoint_files_are_refused_before_the_run_starts) {
  const auto file = scratch("bad_{k}.ckpt").string();
  auto plan = t::quickstart({"dataset.max_train_samples=4000", "progress=false",
                             "stop.stop_at_target=false", "stop.time_seconds=0.31",
                             "checkpoint.at_seconds=[0.3]", "checkpoint.file=" + file});
  (void)run(plan);
  const auto good = scratch("bad_1.ckpt");
  // Only stop, checkpoint, out_dir and progress may change.
  auto later = t::quickstart({"dataset.max_train_samples=4000", "stop.time_seconds=5",
                              "out_dir=elsewhere", "progress=true"});
  BOOST_REQUIRE(atrain::load_checkpoint(good.string(), *later));
  // Taken after this plan's own stop time (0.31 s: the drain ended later).
  BOOST_TEST(load_error(good, *plan).find("not before the spec's stop.time_seconds") !=
             std::string::npos);
  const auto bytes = read_bytes(good);

  auto truncated = scratch("truncated.ckpt");
  write_bytes(truncated, bytes.substr(0, bytes.size() / 2));
  BOOST_TEST(load_error(truncated, *later).find("truncated") != std::string::npos);

  auto corrupted = scratch("corrupted.ckpt");
  auto flipped = bytes;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x10);
  write_bytes(corrupted, flipped);
  BOOST_TEST(load_error(corrupted, *later).find("corrupted: the checksum") != std::string::npos);

  auto garbage = scratch("garbage.ckpt");
  write_bytes(garbage, "name: \"not a checkpoint\"\n");
  BOOST_TEST(load_error(garbage, *later).find("not an atrain checkpoint") != std::string::npos);

  BOOST_TEST(load_error(scratch("missing.ckpt"), *later).find("cannot open") != std::string::npos);

  // Another spec: the differing field is named.
  auto other = t::quickstart({"dataset.max_train_samples=4000", "stop.time_seconds=5", "seed=2"});
  const auto why = load_error(good, *other);
  BOOST_TEST(why.find("different spec") != std::string::npos, why);
  BOOST_TEST(why.find("seed") != std::string::npos, why);
  BOOST_TEST_MESSAGE(why);
  auto steps = t::quickstart(
    {"dataset.max_train_samples=4000", "stop.time_seconds=5", "algorithm.rfast.step_size=0.5"});
  BOOST_TEST(load_error(good, *steps).find("step_size") != std::string::npos);

  // Another node count.
  auto fewer = t::quickstart({"dataset.max_train_samples=4000", "nodes=4"});
  const auto nodes = load_error(good, *fewer);
  BOOST_TEST(nodes.find("holds 8 nodes; the spec runs 4") != std::string::npos, nodes);
}

BOOST_AUTO_TEST_CASE(checkpoint_blocks_are_validated_field_by_field) {
  auto e =
    spec_error_of("quickstart.textproto", {"checkpoint.at_seconds=[2,1]", "checkpoint.file=x"});
  BOOST_TEST(e.find("checkpoint.at_seconds[1]: must be after checkpoint.at_seconds[0]") !=
               std::string::npos,
             e);
  e = spec_error_of("quickstart.textproto", {"checkpoint.at_seconds=[1]"});
  BOOST_TEST(e.find("checkpoint.file: must name the file") != std::string::npos, e);
  e = spec_error_of("quickstart.textproto", {"checkpoint.file=x"});
  BOOST_TEST(e.find("checkpoint: needs at_seconds or every_seconds") != std::string::npos, e);
  e = spec_error_of("quickstart.textproto", {"checkpoint.at_seconds=[40]", "checkpoint.file=x"});
  BOOST_TEST(e.find("must be before stop.time_seconds") != std::string::npos, e);
  e = spec_error_of("quickstart.textproto", {"checkpoint.every_seconds=1", "checkpoint.file=x",
                                             "faults.crash=[{node: 1 at_seconds: 2}]"});
  BOOST_TEST(e.find("faults.crash[0]: a run with checkpoints restarts its crashed workers") !=
               std::string::npos,
             e);
  e = spec_error_of("quickstart.textproto",
                    {"checkpoint.every_seconds=1", "checkpoint.file=x",
                     "faults.crash=[{node: 1 at_seconds: 2 restart_after_seconds: 0.2}]"});
  BOOST_TEST(e.empty(), e);
  for (const char* algo : {"allreduce", "dpsgd", "local_sgd"}) {  // SKIP is checkpointable
    e = spec_error_of(std::string{"algorithms/"} + algo + ".textproto",
                      {"checkpoint.every_seconds=1", "checkpoint.file=x",
                       std::string{"algorithm."} + algo + ".straggler_policy=SKIP"});
    BOOST_TEST(e.empty(), algo << ": " << e);
  }
}

// REAL clock (gradients padded to 10 ms like the virtual quickstart, so the
// target lies well after the checkpoint): no equality claim (the interleaving is real), only that
// the checkpoint is written and a resumed run continues from it to the target.
BOOST_AUTO_TEST_CASE(real_clock_run_writes_a_checkpoint_and_resumes_to_the_target) {
  const auto file = scratch("real_{k}.ckpt").string();
  auto first =
    t::config("quickstart_real.textproto",
              {"progress=false", "cost.real_min_seconds=0.01", "stop.stop_at_target=false",
               "stop.time_seconds=0.6", "checkpoint.at_seconds=[0.5]", "checkpoint.file=" + file});
  const auto a = run(first);
  BOOST_REQUIRE(a.checkpoints_size() == 1);
  const auto saved = scratch("real_1.ckpt").string();
  auto rest =
    t::config("quickstart_real.textproto", {"progress=false", "cost.real_min_seconds=0.01"});
  const auto ck = load(saved, *rest);
  BOOST_TEST(ck->time_seconds() >= 0.5);
  // 10 ms per gradient (as the virtual quickstart): the target comes after ~1 s.
  BOOST_TEST(!ck->evaluator().report().has_time_to_target());
  const auto b = run(rest, ck, saved);
  BOOST_TEST(b.resumed_from() == saved);
  BOOST_TEST(b.has_time_to_target());
  BOOST_TEST(b.time_to_target() > ck->time_seconds());
  BOOST_TEST(b.duration_seconds() > ck->time_seconds());
  // The rows before the checkpoint are kept; the resumed run adds its own.
  const auto& kept = ck->evaluator().report().metrics();
  BOOST_TEST(b.metrics_size() > kept.size());
  std::uint64_t before = 0;
  for (const auto& n : ck->nodes())
    before += n.compute().gradients();
  BOOST_TEST(b.gradients_total() > before);
  BOOST_TEST(b.mass_residual() < 1e-9);
  BOOST_TEST_MESSAGE("REAL: checkpoint at "
                     << ck->time_seconds() << " s (drain " << a.checkpoints(0).drain_seconds()
                     << " s), resumed run reached the target at " << b.time_to_target() << " s");
}

BOOST_AUTO_TEST_SUITE_END()
