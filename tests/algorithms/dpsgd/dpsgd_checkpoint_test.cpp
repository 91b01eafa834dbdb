/// dpsgd's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same checks).
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

#include "algorithms/dpsgd/dpsgd.hpp"
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

BOOST_FIXTURE_TEST_SUITE(dpsgd_checkpoint, remove_scratch)

// D-PSGD (synchronous gossip rounds) over lossy acknowledged links: every
// node holds at the same round boundary with no neighbour model waiting.
BOOST_AUTO_TEST_CASE(dpsgd_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/dpsgd.textproto",
                                     {"dataset.max_train_samples=8000", "link.loss=0.1"}, 1.0, 2.0,
                                     2.6, "dpsgd");
}

/// D-PSGD with straggler_policy SKIP, node 3 four times slower, over lossy
/// acknowledged links: its gradients are late, so at a barrier a node may
/// rest with its gradient done and not applied, and with neighbours' models
/// of rounds it has not mixed yet.
const std::vector<std::string> dpsgd_skip = {
  "dataset.max_train_samples=8000", "link.loss=0.1", "algorithm.dpsgd.straggler_policy=SKIP",
  "faults.straggle=[{node: 3 factor: 4 from_seconds: 0}]"};

BOOST_AUTO_TEST_CASE(dpsgd_skip_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/dpsgd.textproto", dpsgd_skip, 1.0, 2.0, 2.6,
                                     "dpsgd_skip");
}

// The same run to its barrier at 1 s, with the rounds' ledger: the file
// holds waiting gradients or models (the barrier did cut through late
// work); every gradient a node made is applied in a finished round or
// waits in the file, once; every held model is its sender's model of that
// round; and the nodes' round-r models (r: the lowest round any node is in)
// sum to n x^0 minus gamma_k g over every gradient applied before (W is
// doubly stochastic).
BOOST_AUTO_TEST_CASE(dpsgd_skip_checkpoint_holds_every_gradient_once) {
  std::map<std::uint32_t, std::vector<atrain::dpsgd_round>> ledger;
  std::shared_ptr<const atrain::run_plan> plan;
  const auto file = run_probed_to_checkpoint(
    "algorithms/dpsgd.textproto", dpsgd_skip, 1.0, "dpsgd_skip_book",
    [&](atrain::run_probe& probe) {
      for (std::uint32_t i = 0; i < probe.workers.size(); ++i)
        for (auto& d : atrain::dpsgd_take_rounds(probe.workers[i]))
          ledger[i].push_back(std::move(d));
    },
    plan);
  const auto ck = load(file, *plan);
  const auto n = static_cast<int>(plan->nodes());
  const auto dim = plan->dim();
  auto same = [dim](const float* a, const float* b) {
    return std::memcmp(a, b, sizeof(float) * dim) == 0;
  };
  std::uint64_t lowest = ~std::uint64_t{0}, highest = 0, waiting = 0, held = 0;
  for (int i = 0; i < n; ++i) {
    const auto& s = ck->nodes(i);
    const auto& rounds = ledger[static_cast<std::uint32_t>(i)];
    BOOST_REQUIRE(rounds.size() >= s.wakes());  // (the ledger may run on past T_c)
    lowest = std::min(lowest, s.wakes());
    highest = std::max(highest, s.wakes());
    std::uint64_t applied = 0;
    for (std::uint64_t r = 0; r < s.wakes(); ++r) {
      BOOST_REQUIRE(rounds[r].round == r);
      applied += rounds[r].gradient.empty() ? 0 : 1;
    }
    const auto& x = s.wakes() > 0 ? rounds[s.wakes() - 1].after : plan->x0;
    BOOST_TEST(same(x.data(), s.params().data()), "node " << i);
    const auto& k = s.dpsgd();
    BOOST_TEST(s.compute().gradients() == applied + (k.woke() ? 1 : 0), "node " << i);
    waiting += k.woke() ? 1 : 0;
    held += static_cast<std::uint64_t>(k.inbox_size());
    for (const auto& m : k.inbox()) {
      const auto& sender = ck->nodes(static_cast<int>(m.from()));
      const auto& theirs = sender.wakes() == m.round()
                             ? std::vector<float>(sender.params().begin(), sender.params().end())
                             : ledger[m.from()].at(m.round()).before;
      BOOST_TEST(same(theirs.data(), m.params().data()),
                 "node " << i << " holds node " << m.from() << "'s round " << m.round());
    }
  }
  BOOST_TEST(waiting + held > 0u);
  double worst = 0;
  for (std::size_t j = 0; j < dim; ++j) {
    double sum = 0, expect = static_cast<double>(n) * plan->x0[j];
    for (int i = 0; i < n; ++i) {
      const auto& s = ck->nodes(i);
      const auto& rounds = ledger[static_cast<std::uint32_t>(i)];
      sum += s.wakes() == lowest ? s.params(static_cast<int>(j)) : rounds[lowest].before[j];
      for (std::uint64_t r = 0; r < lowest; ++r)
        if (!rounds[r].gradient.empty())
          expect -= rounds[r].gamma * rounds[r].gradient[j];
    }
    worst = std::max(worst, std::abs(sum - expect) / (1.0 + std::abs(expect)));
  }
  BOOST_TEST(worst < 1e-5);
  // A file whose held model names a non-neighbour (the node itself), or
  // whose waiting gradient is short, is refused.
  auto bad = *ck;
  auto* m = bad.mutable_nodes(0)->mutable_dpsgd()->add_inbox();
  m->set_round(bad.nodes(0).wakes());
  m->set_from(0);
  *m->mutable_params() = bad.nodes(0).params();
  const auto refused = scratch("dpsgd_skip_bad.ckpt");
  BOOST_REQUIRE(atrain::write_checkpoint(bad, refused.string()));
  auto why = load_error(refused, *plan);
  BOOST_TEST(why.find("node 0: dpsgd_skip.inbox (round") != std::string::npos, why);
  BOOST_TEST(why.find("from 0): not a neighbour") != std::string::npos, why);
  bad = *ck;
  bad.mutable_nodes(1)->mutable_dpsgd()->set_woke(true);
  bad.mutable_nodes(1)->mutable_dpsgd()->clear_g();
  bad.mutable_nodes(1)->mutable_dpsgd()->add_g(1);
  BOOST_REQUIRE(atrain::write_checkpoint(bad, refused.string()));
  why = load_error(refused, *plan);
  BOOST_TEST(why.find("node 1: dpsgd_skip.g has 1 values") != std::string::npos, why);
  BOOST_TEST_MESSAGE("dpsgd SKIP checkpoint at "
                     << ck->time_seconds() << " s: " << waiting << " gradients waiting, " << held
                     << " neighbour models held, rounds " << lowest << ".." << highest << "; round-"
                     << lowest << " sum residual " << worst);
}
BOOST_AUTO_TEST_SUITE_END()
