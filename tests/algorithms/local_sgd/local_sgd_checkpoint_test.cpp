/// local_sgd's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same
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

BOOST_FIXTURE_TEST_SUITE(local_sgd_checkpoint, remove_scratch)

// Local SGD (WAIT) over lossy acknowledged links. The barrier at 0.45 s
// falls into an average: every node takes its remaining local steps, the
// ring finishes, and every node holds right after the average.
BOOST_AUTO_TEST_CASE(local_sgd_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/local_sgd.textproto",
                                     {"dataset.max_train_samples=8000", "link.loss=0.1"}, 0.45, 1.0,
                                     1.3, "local_sgd");
}

// From the files of a run checkpointing every 30 ms: the ring is idle in
// one round on every node, every node took H local steps per average plus
// those since the last one, and the nodes held right after an average (a
// barrier that fell into a round lets it finish) hold one model bit for bit.
BOOST_AUTO_TEST_CASE(local_sgd_checkpoints_hold_the_ring_idle_and_the_averages_equal) {
  const auto file = scratch("ls_every_{k}.ckpt").string();
  const std::vector<std::string> base{"dataset.max_train_samples=8000", "link.loss=0.1"};
  const auto a = run(
    t::config("algorithms/local_sgd.textproto",
              with(base, {"progress=false", "stop.stop_at_target=false", "stop.time_seconds=0.6",
                          "checkpoint.every_seconds=0.03", "checkpoint.file=" + file})));
  BOOST_REQUIRE(a.checkpoints_size() > 10);
  const auto plan = t::config("algorithms/local_sgd.textproto", base);
  const std::uint64_t h = plan->spec.algorithm().local_sgd().local_steps();
  std::size_t mid_round = 0;
  std::string when;
  for (int k = 1; k <= a.checkpoints_size(); ++k) {
    const auto ck = load(scratch("ls_every_" + std::to_string(k) + ".ckpt"), *plan);
    const auto& first = ck->nodes(0);
    const proto_params* averaged = nullptr;
    std::size_t at_average = 0;
    for (const auto& s : ck->nodes()) {
      BOOST_TEST(s.ring().round() == first.ring().round());
      BOOST_TEST(s.ring().averages() == s.ring().round());
      BOOST_TEST(s.wakes() == h * s.ring().averages() + s.ring().since_average());
      BOOST_TEST(s.ring().since_average() < h);
      BOOST_TEST(s.compute().gradients() == s.wakes(),
                 "node " << s.node() << ": a gradient in flight");
      if (s.ring().since_average() != 0)
        continue;
      ++at_average;
      if (averaged == nullptr)
        averaged = &s.params();
      else
        BOOST_TEST(std::equal(averaged->begin(), averaged->end(), s.params().begin()));
    }
    if (at_average == static_cast<std::size_t>(ck->nodes_size())) {
      ++mid_round;
      when += " " + std::to_string(ck->requested_seconds());
    }
  }
  BOOST_TEST(mid_round > 0u);  // some barrier fell into an average
  BOOST_TEST_MESSAGE("local_sgd: "
                     << a.checkpoints_size() << " checkpoints, " << mid_round
                     << " of them requested during an average (every node held right after "
                        "it, one model):"
                     << when);
}

/// Local SGD with straggler_policy SKIP, node 3 four times slower, over
/// lossy acknowledged links: the others start averages without it, it joins
/// with its current model and applies its gradient one average late. The
/// barrier lets such a gradient finish and be applied when the average ends
/// (a held rank the average reaches joins at once, as SKIP does): the file
/// has no gradient waiting, every rank in one round.
BOOST_AUTO_TEST_CASE(local_sgd_skip_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  const std::vector<std::string> base{"dataset.max_train_samples=8000", "link.loss=0.1",
                                      "algorithm.local_sgd.straggler_policy=SKIP",
                                      "faults.straggle=[{node: 3 factor: 4 from_seconds: 0}]"};
  expect_resume_equals_uninterrupted("algorithms/local_sgd.textproto", base, 0.45, 1.0, 1.3,
                                     "local_sgd_skip");
  const auto plan = t::config("algorithms/local_sgd.textproto", base);
  const auto ck = load(scratch("local_sgd_skip_B_1.ckpt"), *plan);
  std::uint64_t late = 0;
  for (const auto& s : ck->nodes()) {
    BOOST_TEST(s.ring().round() == ck->nodes(0).ring().round());
    BOOST_TEST(s.compute().gradients() == s.wakes(), "node " << s.node() << ": a gradient waits");
    late += s.late();
  }
  BOOST_TEST(ck->nodes(3).late() > 0u);  // the straggler's gradients were late before the barrier
  BOOST_TEST_MESSAGE("local_sgd SKIP checkpoint at " << ck->time_seconds() << " s: round "
                                                     << ck->nodes(0).ring().round() << ", " << late
                                                     << " late gradients applied");
}
BOOST_AUTO_TEST_SUITE_END()
