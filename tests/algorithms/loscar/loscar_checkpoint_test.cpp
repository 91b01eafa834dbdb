/// loscar's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same
/// checks).
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

#include "atrain/actors/checkpoint.hpp"
#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using proto_params = google::protobuf::RepeatedField<float>;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

using namespace atrain::test::ckpt;

BOOST_FIXTURE_TEST_SUITE(loscar_checkpoint, remove_scratch)

// LOSCAR-SGD over lossy, duplicating, reordering links, a slow node and the
// aggregator away from node 0: the barrier finds workers in every phase and
// the aggregator inside a round.
BOOST_AUTO_TEST_CASE(loscar_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted(
    "algorithms/loscar.textproto",
    {"dataset.max_train_samples=8000", "nodes=4", "algorithm.loscar.aggregator=2", "link.loss=0.1",
     "link.duplicate=0.05", "link.reorder=0.1", "link.reorder_delay_seconds=0.003",
     "cost.slowdown=[{node: 1 factor: 2}]"},
    1.0, 2.0, 2.6, "loscar");
}

// Coded links (link.codec, error feedback): the workers' and the
// aggregator's residuals share node 2's state and each takes back its own.
BOOST_AUTO_TEST_CASE(coded_loscar_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/loscar.textproto",
                                     {"dataset.max_train_samples=8000", "nodes=4",
                                      "algorithm.loscar.aggregator=2", "link.loss=0.1",
                                      "link.reorder=0.1", "link.reorder_delay_seconds=0.003",
                                      "link.codec={kind: INT8 block: 16 error_feedback: true}"},
                                     1.0, 2.0, 2.6, "loscar_coded");
}

// LOSCAR-SGD at rest, from the file alone (ALGORITHMS.md §3): the
// aggregator collects round R and holds exactly the y_i[S_R] of the workers
// in round R that sent theirs, bit for bit; a worker is in R, or in R - 1
// overlapping with m_{R-1} in hand (the drained links delivered it); a
// waiting worker has no mean; each worker's step count is its round's
// N + Q steps per round plus its place in the round.
BOOST_AUTO_TEST_CASE(loscar_checkpoint_holds_a_consistent_round) {
  const auto file = scratch("loscar_inv_{k}.ckpt").string();
  constexpr std::uint64_t n_steps = 3, q_steps = 2;
  auto plan = t::config("algorithms/loscar.textproto",
                        {"dataset.max_train_samples=4000", "nodes=4", "progress=false",
                         "stop.stop_at_target=false", "stop.time_seconds=0.96",
                         "algorithm.loscar.aggregator=2", "algorithm.loscar.local_steps=3",
                         "algorithm.loscar.overlap_steps=2", "link.loss=0.1", "link.reorder=0.1",
                         "link.reorder_delay_seconds=0.003", "cost.slowdown=[{node: 1 factor: 2}]",
                         "checkpoint.at_seconds=[0.3,0.52,0.71,0.9]", "checkpoint.file=" + file});
  const auto report = run(plan);
  BOOST_REQUIRE(report.checkpoints_size() == 4);
  using W = atrain::proto::LoscarWorkerState;
  std::map<int, int> phases;
  int behind = 0;
  for (int c = 1; c <= 4; ++c) {
    const auto ck = load(scratch("loscar_inv_" + std::to_string(c) + ".ckpt"), *plan);
    const auto& agg = ck->nodes(2).loscar().aggregator();
    const auto r_agg = agg.round();
    const auto k = static_cast<std::size_t>(agg.got_size()) /
                   std::max<std::size_t>(1, static_cast<std::size_t>(agg.got_from_size()));
    std::set<std::uint32_t> sent;
    for (int i = 0; i < ck->nodes_size(); ++i) {
      const auto& s = ck->nodes(i);
      const auto& l = s.loscar().worker();
      ++phases[l.phase()];
      const std::uint64_t base = l.round() * (n_steps + q_steps);
      const std::uint64_t in_round = l.phase() == W::LOCAL     ? l.done()
                                     : l.phase() == W::OVERLAP ? n_steps + l.done()
                                                               : n_steps + q_steps;
      BOOST_TEST(s.wakes() == base + in_round, "node " << i << " steps");
      if (l.phase() != W::LOCAL)
        BOOST_TEST(l.snapshot_at() == base + n_steps);
      BOOST_TEST((l.round() == r_agg || l.round() + 1 == r_agg), "node " << i << " round");
      if (l.round() + 1 == r_agg) {
        ++behind;
        BOOST_TEST(l.phase() == W::OVERLAP);
        BOOST_TEST(l.have_mean());
      }
      if (l.phase() == W::WAITING)
        BOOST_TEST(!l.have_mean());
      if (l.round() == r_agg && l.phase() != W::LOCAL)
        sent.insert(static_cast<std::uint32_t>(i));
    }
    std::set<std::uint32_t> got(agg.got_from().begin(), agg.got_from().end());
    BOOST_TEST((got == sent), "checkpoint " << c << ": the aggregator's senders");
    for (int j = 0; j < agg.got_from_size(); ++j) {
      const auto& y = ck->nodes(static_cast<int>(agg.got_from(j))).loscar().worker().y_s();
      BOOST_REQUIRE(static_cast<std::size_t>(y.size()) == k);
      BOOST_TEST(std::memcmp(y.data(), agg.got().data() + static_cast<std::size_t>(j) * k,
                             sizeof(float) * k) == 0);
    }
  }
  // A file whose aggregator state does not fit the spec is refused, naming it.
  auto bad = *load(scratch("loscar_inv_1.ckpt"), *plan);
  bad.mutable_nodes(2)->mutable_loscar()->mutable_aggregator()->clear_average();
  BOOST_REQUIRE(atrain::write_checkpoint(bad, scratch("loscar_bad.ckpt").string()));
  const auto why = load_error(scratch("loscar_bad.ckpt"), *plan);
  BOOST_TEST(why.find("node 2: loscar_aggregator.average has 0 values") != std::string::npos, why);
  // A node holding another algorithm's part is refused before LOSCAR reads it.
  auto other = *load(scratch("loscar_inv_1.ckpt"), *plan);
  other.mutable_nodes(1)->mutable_dasgd()->set_applied(1);
  BOOST_REQUIRE(atrain::write_checkpoint(other, scratch("loscar_other.ckpt").string()));
  const auto other_why = load_error(scratch("loscar_other.ckpt"), *plan);
  BOOST_TEST(other_why.find("node 1: holds another algorithm's state") != std::string::npos,
             other_why);
  // A file of checkpoint format 1 (flat node states) is refused as such.
  {
    std::fstream f{scratch("loscar_inv_1.ckpt"), std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(7);
    f.put('1');
  }
  const auto old_why = load_error(scratch("loscar_inv_1.ckpt"), *plan);
  BOOST_TEST(old_why.find("checkpoint format 1") != std::string::npos, old_why);
  BOOST_TEST_MESSAGE("LOSCAR at 4 checkpoints: worker phases local/overlap/waiting = "
                     << phases[W::LOCAL] << "/" << phases[W::OVERLAP] << "/" << phases[W::WAITING]
                     << ", " << behind << " workers one round behind the aggregator");
}
BOOST_AUTO_TEST_SUITE_END()
