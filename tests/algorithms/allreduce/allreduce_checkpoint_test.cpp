/// allreduce's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same
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

BOOST_FIXTURE_TEST_SUITE(allreduce_checkpoint, remove_scratch)

// Ring-AllReduce over acknowledged links that lose packets: the barrier
// waits for every retransmission; the ring is idle at the checkpoint.
BOOST_AUTO_TEST_CASE(allreduce_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/allreduce.textproto",
                                     {"dataset.max_train_samples=8000", "link.loss=0.1"}, 1.0, 2.0,
                                     2.6, "allreduce");
}

/// Ring-AllReduce with straggler_policy SKIP, node 3 four times slower,
/// over lossy acknowledged links: the others start steps without it (it
/// joins with zeros), its gradient joins a later step.
const std::vector<std::string> allreduce_skip = {
  "dataset.max_train_samples=8000", "link.loss=0.1", "algorithm.allreduce.straggler_policy=SKIP",
  "faults.straggle=[{node: 3 factor: 4 from_seconds: 0}]"};

// Resumed = uninterrupted; and from the file: the ring is idle in one step
// on every node with one model bit for bit, and every gradient a node made
// went into a step once (its staleness count) or waits in the file.
BOOST_AUTO_TEST_CASE(allreduce_skip_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/allreduce.textproto", allreduce_skip, 1.0, 2.0,
                                     2.6, "allreduce_skip");
  const auto plan = t::config("algorithms/allreduce.textproto", allreduce_skip);
  std::uint64_t waiting = 0;
  std::string figures;
  for (int k = 1; k <= 2; ++k) {
    const auto ck = load(scratch("allreduce_skip_A_" + std::to_string(k) + ".ckpt"), *plan);
    const auto& first = ck->nodes(0);
    std::uint64_t here = 0, late = 0;
    for (const auto& s : ck->nodes()) {
      BOOST_TEST(s.ring().round() == first.ring().round());
      BOOST_TEST(s.wakes() == s.ring().round());
      BOOST_TEST(std::equal(first.params().begin(), first.params().end(), s.params().begin(),
                            s.params().end()));
      const auto pending = static_cast<std::uint64_t>(s.ring().skip().pending_read_size());
      BOOST_TEST(s.compute().gradients() == s.staleness_count() + pending, "node " << s.node());
      here += pending;
      late += s.late();
    }
    waiting += here;
    figures += " " + std::to_string(ck->time_seconds()) + " s: " + std::to_string(here) +
               " waiting, " + std::to_string(late) + " late applied;";
  }
  BOOST_TEST(waiting > 0u);  // the barriers cut through late work
  // A file whose waiting gradients' sum is not of the model's size is refused.
  auto bad = *load(scratch("allreduce_skip_A_1.ckpt"), *plan);
  bad.mutable_nodes(2)->mutable_ring()->mutable_skip()->add_pending_read(0);
  bad.mutable_nodes(2)->mutable_ring()->mutable_skip()->add_pending(1);
  const auto refused = scratch("allreduce_skip_bad.ckpt");
  BOOST_REQUIRE(atrain::write_checkpoint(bad, refused.string()));
  const auto why = load_error(refused, *plan);
  BOOST_TEST(why.find("node 2: ring_skip: the waiting gradients' sum does not fit the model") !=
               std::string::npos,
             why);
  BOOST_TEST_MESSAGE("allreduce SKIP checkpoints (gradients):" << figures);
}
BOOST_AUTO_TEST_SUITE_END()
