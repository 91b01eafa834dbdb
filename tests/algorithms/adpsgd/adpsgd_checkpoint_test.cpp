/// adpsgd's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same
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
#include "gossip_fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using proto_params = google::protobuf::RepeatedField<float>;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

using namespace atrain::test::ckpt;

BOOST_FIXTURE_TEST_SUITE(adpsgd_checkpoint, remove_scratch)

// AD-PSGD over lossy, duplicating acknowledged links: exchanges in progress
// complete before the hold.
BOOST_AUTO_TEST_CASE(adpsgd_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted(
    "algorithms/adpsgd.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1", "link.duplicate=0.05"}, 0.5, 1.0, 1.3,
    "adpsgd");
}

// No exchange half-applied at the barrier: the run that stops right after
// it (workers held, nothing delivered later) has applied both sides of
// every exchange, each pair sum preserved; and the file's exchange counts and
// served marks are exactly those of that ledger.
BOOST_AUTO_TEST_CASE(adpsgd_checkpoint_has_no_half_applied_exchange) {
  namespace g = atrain::test::gossip;
  g::exchange_book book;
  std::shared_ptr<const atrain::run_plan> plan;
  const auto file = run_probed_to_checkpoint(
    "algorithms/adpsgd.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1", "link.duplicate=0.05"}, 0.5, "ad_pairs",
    [&](atrain::run_probe& probe) { g::harvest_exchanges(probe, book); }, plan);
  const auto ck = load(file, *plan);
  const auto& g_r = plan->topo->g_r;
  std::map<std::uint32_t, std::uint64_t> begun;  // active node -> exchanges in the ledger
  double worst = 0;
  for (const auto& [key, s] : book) {
    BOOST_TEST(s.active_count == 1,
               "exchange " << key.first << "/" << key.second << " half-applied");
    BOOST_TEST(s.passive_count == 1);
    ++begun[key.first];
    for (std::size_t k = 0; k < s.active.size() && k < s.passive.size(); ++k)
      worst = std::max(worst, std::abs(s.active[k] + s.passive[k]) / (1.0 + std::abs(s.active[k])));
  }
  // From the file: an active node's newest exchange was served by one of
  // its passive neighbours, and no neighbour served one it has not begun.
  for (const auto& s : ck->nodes()) {
    const auto i = s.node();
    BOOST_TEST(s.compute().gradients() == s.wakes(), "node " << i << ": a gradient in flight");
    const auto m = s.adpsgd().exchange_seq();
    BOOST_TEST(m == begun[i], "node " << i << "'s exchange count differs from the ledger");
    if (m == 0)
      continue;
    std::uint64_t served = 0;
    for (auto j : g_r.out(i)) {
      const auto& nb = g_r.out(j);
      const auto at = std::find(nb.begin(), nb.end(), i) - nb.begin();
      served =
        std::max(served, ck->nodes(static_cast<int>(j)).adpsgd().served(static_cast<int>(at)));
    }
    BOOST_TEST(served == m, "node " << i << ": exchange " << m << " not served, newest " << served);
  }
  BOOST_TEST(worst < 1e-6);
  BOOST_TEST(book.size() > 100u);
  BOOST_TEST_MESSAGE(
    "adpsgd at " << ck->time_seconds() << " s: " << book.size()
                 << " exchanges, all applied on both sides; worst pair-sum residual " << worst);
}
BOOST_AUTO_TEST_SUITE_END()
