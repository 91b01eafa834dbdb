/// rfast's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same checks).
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

#include "algorithms/rfast/rfast.hpp"
#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using proto_params = google::protobuf::RepeatedField<float>;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

using namespace atrain::test::ckpt;

BOOST_FIXTURE_TEST_SUITE(rfast_checkpoint, remove_scratch)

// R-FAST over lossy, duplicating, reordering links, with a loss burst
// active across the first barrier: every generator and sequence counter is
// in the checkpoint.
BOOST_AUTO_TEST_CASE(rfast_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted(
    "quickstart.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1", "link.duplicate=0.05", "link.reorder=0.1",
     "link.reorder_delay_seconds=0.003",
     "faults.loss_burst=[{loss: 0.3 from_seconds: 0.5 to_seconds: 1.5}]"},
    1.0, 2.0, 2.6, "rfast");
}

// Coded links (link.codec): the coders' residuals and running sums and the
// receivers' decoded sums are in the checkpoint, so every later message is
// coded as in the uninterrupted run.
BOOST_AUTO_TEST_CASE(coded_rfast_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted(
    "quickstart.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1", "link.duplicate=0.05", "link.reorder=0.1",
     "link.reorder_delay_seconds=0.003",
     "link.codec={kind: INT8 error_feedback: true resync_every: 5}"},
    1.0, 2.0, 2.6, "rfast_coded");
  // Top-k: the models as replicas, whose copies are saved at both ends.
  expect_resume_equals_uninterrupted("quickstart.textproto",
                                     {"dataset.max_train_samples=8000", "link.loss=0.1",
                                      "link.reorder=0.1", "link.reorder_delay_seconds=0.003",
                                      "link.codec={kind: TOPK topk_fraction: 0.2}"},
                                     1.0, 2.0, 2.6, "rfast_topk");
}

BOOST_AUTO_TEST_CASE(the_barrier_conserves_rfast_tracker_mass) {
  const auto file = scratch("mass_{k}.ckpt").string();
  auto plan =
    t::quickstart({"dataset.max_train_samples=4000", "progress=false", "stop.stop_at_target=false",
                   "stop.time_seconds=0.7", "link.latency_seconds=0.004",
                   "checkpoint.at_seconds=[0.3,0.5]", "checkpoint.file=" + file});
  // The invariant after every event, the barriers included.
  std::size_t checks = 0;
  double worst = 0;
  const auto report = t::run_checking_mass(plan, checks, worst);
  BOOST_TEST(report.error().empty(), report.error());
  BOOST_REQUIRE(report.checkpoints_size() == 2);
  BOOST_TEST(worst < 1e-12);
  BOOST_TEST(checks > 1000u);

  // Independently from the file: sum z + sum c_ij (rho_j - rho~_ij) =
  // sum g_prev, and the drain left nothing in flight: every node holds its
  // in-neighbours' latest rho exactly (no loss on these links).
  const auto ck = load(scratch("mass_1.ckpt"), *plan);
  const auto& topo = *plan->topo;
  const std::size_t dim = plan->dim();
  std::vector<double> lhs(dim, 0.0), rhs(dim, 0.0);
  for (const auto& s : ck->nodes()) {
    const auto& r = s.rfast();  // R-FAST's own part
    for (std::size_t k = 0; k < dim; ++k) {
      lhs[k] += r.tracker(static_cast<int>(k));
      rhs[k] += r.g_prev(static_cast<int>(k));
    }
    for (const auto& m : r.mass_in()) {
      const auto& sender = ck->nodes(static_cast<int>(m.node())).rfast();
      BOOST_TEST(m.seq() == sender.pushes(),
                 "node " << s.node() << " misses a push of " << m.node());
      BOOST_TEST(std::equal(m.rho_hat().begin(), m.rho_hat().end(), sender.rho().begin()));
      const double c = topo.c(s.node(), m.node());
      for (std::size_t k = 0; k < dim; ++k) {
        const double used =
          m.consumed_all() ? m.rho_hat(static_cast<int>(k)) : m.rho_tilde(static_cast<int>(k));
        lhs[k] += c * (sender.rho(static_cast<int>(k)) - used);
      }
    }
    // The worker held with nothing in flight: every gradient it computed is
    // in the tracker (init + one per wake).
    BOOST_TEST(s.compute().gradients() == s.wakes() + 1);
    BOOST_TEST(r.tracks() == s.wakes());
  }
  double err = 0, scale = 1;
  for (std::size_t k = 0; k < dim; ++k) {
    err = std::max(err, std::abs(lhs[k] - rhs[k]));
    scale = std::max(scale, std::abs(rhs[k]));
  }
  BOOST_TEST(err / scale < 1e-12);

  // g_prev is the last gradient, kept in float: a checkpoint whose g_prev a
  // float cannot hold is refused, not rounded on restore.
  auto node = ck->nodes(0);
  const auto check = plan->algorithm().check_node;
  BOOST_REQUIRE(check != nullptr);
  BOOST_TEST(check(node, 0, *plan).empty());
  node.mutable_rfast()->set_g_prev(1, 0.1);
  const auto why = check(node, 0, *plan);
  BOOST_TEST(why.find("g_prev[1]") != std::string::npos, why);
  node.mutable_rfast()->set_g_prev(1, 1e300);
  BOOST_TEST(!check(node, 0, *plan).empty());
  BOOST_TEST_MESSAGE("mass residual at the checkpoint (from the file): "
                     << err / scale << "; after every event: worst " << worst << " over " << checks
                     << " checks; drain " << report.checkpoints(0).drain_seconds() << " s");
}
BOOST_AUTO_TEST_SUITE_END()
