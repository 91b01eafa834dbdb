/// DiLoCo's checkpoints: a resumed run ends exactly like the uninterrupted
/// one (the outer model and momentum saved with the ring worker's state),
/// waiting for each average and streaming fragments with overlap; the files
/// hold one outer model on every node.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "atrain/actors/checkpoint.hpp"
#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
using namespace atrain::test::ckpt;

BOOST_FIXTURE_TEST_SUITE(diloco_checkpoint, remove_scratch)

BOOST_AUTO_TEST_CASE(diloco_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/diloco.textproto",
                                     {"dataset.max_train_samples=8000", "link.loss=0.1"}, 0.45, 1.0,
                                     1.3, "diloco");
}

BOOST_AUTO_TEST_CASE(streaming_diloco_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/diloco.textproto",
                                     {"dataset.max_train_samples=8000", "link.loss=0.1",
                                      "algorithm.diloco.fragments=4",
                                      "algorithm.diloco.overlap=true"},
                                     0.45, 1.0, 1.3, "diloco_streaming");
}

BOOST_AUTO_TEST_CASE(diloco_with_adamw_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  // Each node's AdamW moments and step count are saved with its ring state.
  expect_resume_equals_uninterrupted(
    "algorithms/diloco.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1",
     "algorithm.diloco={inner: ADAMW step_size: 0.1 inner_steps: 8 outer_step_size: 1 "
     "momentum: 0.5}"},
    0.45, 1.0, 1.3, "diloco_adamw");
}

// Every checkpoint of a run saving every 50 ms: one outer model and momentum
// on all nodes (they change only by averages every node applies), and a
// fitting part; a part that does not fit the model is refused naming it.
BOOST_AUTO_TEST_CASE(diloco_checkpoints_hold_one_outer_model) {
  const auto file = scratch("dl_every_{k}.ckpt").string();
  const std::vector<std::string> base{"dataset.max_train_samples=8000"};
  const auto a = run(
    t::config("algorithms/diloco.textproto",
              with(base, {"progress=false", "stop.stop_at_target=false", "stop.time_seconds=0.6",
                          "checkpoint.every_seconds=0.05", "checkpoint.file=" + file})));
  BOOST_REQUIRE(a.checkpoints_size() > 5);
  const auto plan = t::config("algorithms/diloco.textproto", base);
  for (int k = 1; k <= a.checkpoints_size(); ++k) {
    const auto ck = load(scratch("dl_every_" + std::to_string(k) + ".ckpt"), *plan);
    const auto& first = ck->nodes(0).ring().diloco();
    BOOST_TEST(static_cast<std::size_t>(first.outer_size()) == plan->dim());
    for (const auto& s : ck->nodes()) {
      BOOST_TEST(s.ring().diloco().SerializeAsString() == first.SerializeAsString());
      BOOST_TEST(s.ring().round() == ck->nodes(0).ring().round());
      BOOST_TEST(s.compute().gradients() == s.wakes());
    }
  }
  auto bad = *load(scratch("dl_every_1.ckpt"), *plan);
  bad.mutable_nodes(3)->mutable_ring()->mutable_diloco()->mutable_momentum()->RemoveLast();
  const auto refused = scratch("dl_bad.ckpt");
  BOOST_REQUIRE(atrain::write_checkpoint(bad, refused.string()));
  const auto why = load_error(refused, *plan);
  BOOST_TEST(why.find("diloco: the outer model or momentum does not fit the model") !=
               std::string::npos,
             why);
}

BOOST_AUTO_TEST_SUITE_END()
