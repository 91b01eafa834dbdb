/// async_ps's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same
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

#include "algorithms/async_ps/async_ps.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using proto_params = google::protobuf::RepeatedField<float>;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

using namespace atrain::test::ckpt;

BOOST_FIXTURE_TEST_SUITE(async_ps_checkpoint, remove_scratch)

// ---- async_ps, AD-PSGD, Local SGD, centralized

// The parameter server over lossy, duplicating acknowledged links: the
// server joins the barrier (its float64 model, version and ledger marks).
BOOST_AUTO_TEST_CASE(async_ps_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted(
    "algorithms/async_ps.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1", "link.duplicate=0.05"}, 0.5, 1.0, 1.3,
    "async_ps");
  // Coded links: the server's and its node's worker's residuals share that
  // node's state, and each takes back its own.
  expect_resume_equals_uninterrupted("algorithms/async_ps.textproto",
                                     {"dataset.max_train_samples=8000", "link.loss=0.1",
                                      "link.codec={kind: INT8 block: 32 error_feedback: true}"},
                                     0.5, 1.0, 1.3, "async_ps_coded");
  // Top-k: the server's models travel as replicas; each worker's decoder
  // (its copy of the model) is saved with it.
  expect_resume_equals_uninterrupted(
    "algorithms/async_ps.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1",
     "link.codec={kind: TOPK topk_fraction: 0.1 error_feedback: true}"},
    0.5, 1.0, 1.3, "async_ps_topk");
}

// From the file: the server's model is x^0 - sum_k gamma_k g_k recomputed
// here from the server's ledger of applied gradients (exactly: the same
// float64 operations in the same order), every request sent was applied
// once and answered (the drain left nothing outstanding), and the worker
// that holds the newest version holds the server's model.
BOOST_AUTO_TEST_CASE(async_ps_checkpoint_holds_the_server_model_of_its_ledger) {
  std::vector<atrain::async_ps_applied> ledger;
  std::shared_ptr<const atrain::run_plan> plan;
  const auto file = run_probed_to_checkpoint(
    "algorithms/async_ps.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1", "link.duplicate=0.05"}, 0.5, "ps_ledger",
    [&](atrain::run_probe& probe) {
      if (auto view = atrain::async_ps_take(probe.server))
        for (auto& a : view->applied)
          ledger.push_back(std::move(a));
    },
    plan);
  const auto ck = load(file, *plan);
  const auto& algo = plan->spec.algorithm().async_ps();
  const auto& ps = ck->nodes(static_cast<int>(algo.server())).async_ps().server();
  std::vector<double> y(plan->x0.begin(), plan->x0.end());
  for (std::size_t k = 0; k < ledger.size(); ++k) {
    BOOST_REQUIRE(ledger[k].version == k);
    const double gamma = algo.step_size() / (1.0 + algo.decay() * static_cast<double>(k));
    for (std::size_t j = 0; j < y.size(); ++j)
      y[j] -= gamma * static_cast<double>(ledger[k].g.ptr()[j]);
  }
  BOOST_TEST(ps.version() == ledger.size());
  BOOST_REQUIRE(static_cast<std::size_t>(ps.params_size()) == y.size());
  BOOST_TEST(std::equal(y.begin(), y.end(), ps.params().begin()),
             "the server's model is not x0 minus its ledger's updates");
  std::uint64_t requests = 0, newest = 0;
  for (const auto& s : ck->nodes()) {
    const auto i = static_cast<int>(s.node());
    requests += s.wakes();
    BOOST_TEST(ps.applied(i) == s.wakes(), "node " << i << ": a request not applied");
    BOOST_TEST(ps.sent_version(i) == s.async_ps().version(), "node " << i << ": a reply in flight");
    BOOST_TEST(s.compute().gradients() == s.wakes(), "node " << i << ": a gradient in flight");
    newest = std::max(newest, s.async_ps().version());
    if (s.async_ps().version() == ps.version())
      for (int k = 0; k < s.params_size(); ++k)
        BOOST_REQUIRE(s.params(k) == static_cast<float>(ps.params(k)));
  }
  BOOST_TEST(requests == ps.version());  // each request applied exactly once
  BOOST_TEST(newest == ps.version());
  // A file whose server state is missing is refused before anything runs.
  auto broken = *ck;
  broken.mutable_nodes(static_cast<int>(algo.server()))->mutable_async_ps()->clear_server();
  const auto bad = scratch("ps_no_server.ckpt");
  BOOST_REQUIRE(atrain::write_checkpoint(broken, bad.string()));
  const auto why = load_error(bad, *plan);
  BOOST_TEST(why.find("node 0: the parameter server's model is missing") != std::string::npos, why);
  BOOST_TEST_MESSAGE("async_ps at "
                     << ck->time_seconds() << " s: " << ledger.size()
                     << " updates recomputed from the ledger equal the saved server model "
                        "exactly; duplicates ignored "
                     << ps.duplicates());
}
BOOST_AUTO_TEST_SUITE_END()
