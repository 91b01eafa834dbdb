/// Checkpoints (README "Checkpoint and resume"): a run with a checkpoint
/// barrier, uninterrupted, against the same spec stopped right after the
/// barrier and resumed from its file — same models, trackers, generators,
/// metrics and trace hash to the end (virtual clock); bad checkpoint files
/// refused before anything starts; the barrier keeps R-FAST's tracker mass
/// and SGP/OSGP's push-sum mass.
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
// DASGD with batching (broadcast_every 2: unsent batches and their creation
// times are in the file) over lossy, duplicating, reordering acknowledged
// links.
BOOST_AUTO_TEST_CASE(dasgd_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/dasgd.textproto",
                                     {"dataset.max_train_samples=8000", "nodes=4",
                                      "algorithm.dasgd.broadcast_every=2", "link.loss=0.1",
                                      "link.duplicate=0.05", "link.reorder=0.1",
                                      "link.reorder_delay_seconds=0.003"},
                                     1.0, 2.0, 2.6, "dasgd");
}

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

// DASGD at rest, from the file and the run's ledger (run_probe): every node
// applied, per origin, exactly the gradients 1..k its record names, each
// once; with broadcast_every 1 that is every gradient made anywhere, so every
// replica equals x0 - sum gamma_k g_k over ALL gradients made (recomputed
// here in double from the ledger) and the replicas are equal up to float
// rounding.
BOOST_AUTO_TEST_CASE(dasgd_checkpoint_replicas_hold_every_gradient_made) {
  const auto file = scratch("dasgd_inv_{k}.ckpt").string();
  auto plan = t::config("algorithms/dasgd.textproto",
                        {"dataset.max_train_samples=4000", "nodes=4", "progress=false",
                         "stop.stop_at_target=false", "stop.time_seconds=0.56", "link.loss=0.1",
                         "link.reorder=0.1", "link.reorder_delay_seconds=0.003",
                         "checkpoint.at_seconds=[0.5]", "checkpoint.file=" + file});
  const std::size_t n = plan->nodes();
  const std::size_t dim = plan->dim();
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  opts.progress = false;
  std::vector<atrain::dasgd_ledger> led(n);
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<double>> step;  // gamma g
  {
    atrain::virtual_run vr{plan, opts};
    while (vr.step())
      for (std::uint32_t i = 0; i < probe->workers.size(); ++i) {
        auto f = atrain::dasgd_take_ledger(probe->workers[i]);
        for (const auto& c : f.made) {
          auto& s = step[{i, c.index}];
          for (float v : c.g)
            s.push_back(c.gamma * static_cast<double>(v));
        }
        led[i].used.insert(led[i].used.end(), f.used.begin(), f.used.end());
      }
    const auto report = vr.run();
    BOOST_REQUIRE(report);
    BOOST_TEST(report->error().empty(), report->error());
    BOOST_REQUIRE(report->checkpoints_size() == 1);
  }
  const auto ck = load(scratch("dasgd_inv_1.ckpt"), *plan);
  double worst = 0, spread = 0;
  std::uint64_t total = 0;
  for (std::size_t j = 0; j < n; ++j)
    total += ck->nodes(static_cast<int>(j)).wakes();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& s = ck->nodes(static_cast<int>(i));
    const auto& d = s.dasgd();
    BOOST_REQUIRE(led[i].used.size() >= d.applied());
    BOOST_TEST(d.applied() == total, "node " << i << " applied " << d.applied() << " of " << total);
    std::vector<std::set<std::uint64_t>> per(n);
    std::vector<double> expect(plan->x0.begin(), plan->x0.end());
    for (std::size_t u = 0; u < d.applied(); ++u) {
      const auto& e = led[i].used[u];
      BOOST_TEST(per.at(e.origin).insert(e.index).second, "applied twice");
      const auto& gs = step.at({e.origin, e.index});
      for (std::size_t k = 0; k < dim; ++k)
        expect[k] -= gs[k];
    }
    for (std::size_t j = 0; j < n; ++j) {
      const auto k = d.applied_from(static_cast<int>(j));
      BOOST_TEST(k == ck->nodes(static_cast<int>(j)).wakes());  // every gradient node j made
      BOOST_TEST(per[j].size() == k);
      BOOST_TEST((per[j].empty() || *per[j].rbegin() == k), "the record is not 1.." << k);
    }
    for (std::size_t k = 0; k < dim; ++k) {
      const double x = s.params(static_cast<int>(k));
      worst = std::max(worst, std::abs(x - expect[k]) / (1 + std::abs(expect[k])));
      const double x0 = ck->nodes(0).params(static_cast<int>(k));
      spread = std::max(spread, std::abs(x - x0) / (1 + std::abs(x0)));
    }
  }
  // A record claiming a gradient its origin never made is refused, naming it.
  auto bad = *ck;
  bad.mutable_nodes(1)->mutable_dasgd()->set_applied_from(3, ck->nodes(3).wakes() + 1);
  BOOST_REQUIRE(atrain::write_checkpoint(bad, scratch("dasgd_bad.ckpt").string()));
  const auto why = load_error(scratch("dasgd_bad.ckpt"), *plan);
  BOOST_TEST(why.find("node 1: dasgd.applied_from[3]") != std::string::npos, why);
  BOOST_TEST(total > 100u);
  BOOST_TEST(worst < 1e-5);
  BOOST_TEST(spread < 1e-5);
  BOOST_TEST_MESSAGE("DASGD at the checkpoint (t=" << ck->time_seconds() << " s): " << total
                                                   << " gradients, each applied once by each of "
                                                   << n << " nodes; replica vs x0 - sum gamma g: "
                                                   << worst << " (relative); replica spread "
                                                   << spread);
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

// SGP and OSGP (push-sum) over lossy acknowledged links that also duplicate
// and reorder: SGP may hold messages of steps it has not completed at the
// barrier (saved with the node), OSGP has added all it received.
BOOST_AUTO_TEST_CASE(sgp_and_osgp_resumed_runs_end_exactly_like_the_uninterrupted_ones) {
  for (const char* algo : {"sgp", "osgp"})
    expect_resume_equals_uninterrupted(std::string{"algorithms/"} + algo + ".textproto",
                                       {"dataset.max_train_samples=4000", "link.loss=0.1",
                                        "link.duplicate=0.1", "link.reorder=0.2",
                                        "link.reorder_delay_seconds=0.004", "cost.jitter=0.5"},
                                       0.4, 0.8, 1.0, algo);
}

// Push-sum mass from the checkpoint file alone: sum_i w_i + the weight of
// the messages SGP holds = n, and sum_i x_i + held x equals the test's own
// n x^0 - sum over every step taken of gamma_k g (from the nodes' ledgers,
// up to each node's saved step count).
BOOST_AUTO_TEST_CASE(the_barrier_conserves_push_sum_mass) {
  for (const char* algo : {"sgp", "osgp"}) {
    const auto file = scratch(std::string{algo} + "_mass_{k}.ckpt").string();
    auto plan = t::config(std::string{"algorithms/"} + algo + ".textproto",
                          {"dataset.max_train_samples=4000", "progress=false",
                           "stop.stop_at_target=false", "stop.time_seconds=0.5", "link.loss=0.1",
                           "link.reorder=0.3", "link.reorder_delay_seconds=0.01", "cost.jitter=0.5",
                           "checkpoint.at_seconds=[0.3]", "checkpoint.file=" + file});
    const auto n = plan->nodes();
    const std::size_t dim = plan->dim();
    // steps[i][k] = gamma_k g of node i's step k, in double.
    std::vector<std::vector<std::vector<double>>> steps(n);
    auto probe = std::make_shared<atrain::run_probe>();
    atrain::run_options opts;
    opts.probe = probe;
    opts.progress = false;
    atrain::virtual_run vr{plan, opts};
    while (vr.step())
      for (std::uint32_t i = 0; i < n; ++i) {
        const auto* node = probe->states<atrain::pushsum_node>().at(i);
        if (node == nullptr)
          continue;
        for (auto k = steps[i].size(); k < node->descents.size(); ++k) {
          const auto& d = node->descents[k];
          std::vector<double> v(dim);
          for (std::size_t j = 0; j < dim; ++j)
            v[j] = d.gamma * static_cast<double>(d.g[j]);
          steps[i].push_back(std::move(v));
        }
      }
    const auto report = vr.run();
    BOOST_REQUIRE(report);
    BOOST_TEST(report->error().empty(), report->error());
    BOOST_REQUIRE(report->checkpoints_size() == 1);
    const auto ck = load(scratch(std::string{algo} + "_mass_1.ckpt"), *plan);
    double w = 0;
    std::size_t held = 0;
    std::vector<double> x(dim, 0.0), want(dim, 0.0);
    for (std::size_t j = 0; j < dim; ++j)
      want[j] = static_cast<double>(n) * plan->x0[j];
    for (const auto& s : ck->nodes()) {
      w += s.pushsum().w();
      for (std::size_t j = 0; j < dim; ++j)
        x[j] += s.pushsum().x(static_cast<int>(j));
      for (const auto& h : s.pushsum().held()) {
        ++held;
        w += h.w();
        for (std::size_t j = 0; j < dim; ++j)
          x[j] += h.x(static_cast<int>(j));
      }
      BOOST_REQUIRE(s.wakes() <= steps[s.node()].size());
      for (std::uint64_t k = 0; k < s.wakes(); ++k)
        for (std::size_t j = 0; j < dim; ++j)
          want[j] -= steps[s.node()][k][j];
      // No gradient in flight at the barrier: one per step taken.
      BOOST_TEST(s.compute().gradients() == s.wakes());
      // The saved model is the push-sum ratio.
      BOOST_TEST(s.params(0) == static_cast<float>(s.pushsum().x(0) / s.pushsum().w()));
    }
    double err = 0, scale = 1;
    for (std::size_t j = 0; j < dim; ++j) {
      err = std::max(err, std::abs(x[j] - want[j]));
      scale = std::max(scale, std::abs(want[j]));
    }
    BOOST_TEST(std::abs(w - static_cast<double>(n)) < 1e-12);
    BOOST_TEST(err / scale < 1e-12);
    if (std::string{algo} == "osgp")
      BOOST_TEST(held == 0u);
    BOOST_TEST_MESSAGE(algo << ": at the checkpoint (t=" << ck->time_seconds() << " s, drain "
                            << report->checkpoints(0).drain_seconds() << " s) sum w + held = " << w
                            << " (n = " << n << "), " << held << " messages held, x residual "
                            << err / scale);
  }
}

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
  BOOST_TEST_MESSAGE("mass residual at the checkpoint (from the file): "
                     << err / scale << "; after every event: worst " << worst << " over " << checks
                     << " checks; drain " << report.checkpoints(0).drain_seconds() << " s");
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

// ---- async_ps, AD-PSGD, Local SGD, centralized

// The parameter server over lossy, duplicating acknowledged links: the
// server joins the barrier (its float64 model, version and ledger marks).
BOOST_AUTO_TEST_CASE(async_ps_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted(
    "algorithms/async_ps.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1", "link.duplicate=0.05"}, 0.5, 1.0, 1.3,
    "async_ps");
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

// One worker, no links: it holds after a step.
BOOST_AUTO_TEST_CASE(centralized_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  const std::vector<std::string> base{"dataset.max_train_samples=8000"};
  expect_resume_equals_uninterrupted("algorithms/centralized.textproto", base, 0.5, 1.0, 1.3,
                                     "centralized");
  const auto plan = t::config("algorithms/centralized.textproto", base);
  const auto ck = load(scratch("centralized_B_1.ckpt"), *plan);
  BOOST_REQUIRE(ck->nodes_size() == 1);
  BOOST_TEST(ck->nodes(0).compute().gradients() == ck->nodes(0).wakes());
  BOOST_TEST(ck->nodes(0).wakes() > 0u);
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
