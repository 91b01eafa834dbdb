/// Checkpoints (README "Checkpoint and resume"): a run with a checkpoint
/// barrier, uninterrupted, against the same spec stopped right after the
/// barrier and resumed from its file — same models, trackers, generators,
/// metrics and trace hash to the end (virtual clock); bad checkpoint files
/// refused before anything starts; the barrier keeps R-FAST's tracker mass.
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
#include "atrain/actors/dasgd.hpp"
#include "atrain/actors/rfast.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

namespace {

fs::path scratch_dir() {
  return fs::temp_directory_path() / ("atrain_ckpt_test_" + std::to_string(::getpid()));
}

fs::path scratch(const std::string& name) {
  fs::create_directories(scratch_dir());
  return scratch_dir() / name;
}

/// Each test's checkpoint files go when it ends.
struct remove_scratch {
  remove_scratch() = default;
  remove_scratch(const remove_scratch&) = delete;
  remove_scratch& operator=(const remove_scratch&) = delete;
  ~remove_scratch() {
    std::error_code ec;
    fs::remove_all(scratch_dir(), ec);
  }
};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

RunReport run(std::shared_ptr<const atrain::run_plan> plan,
              std::shared_ptr<const Checkpoint> resume = nullptr, const std::string& file = {}) {
  atrain::run_options opts;
  opts.progress = false;
  opts.resume = std::move(resume);
  opts.resume_file = file;
  auto report = atrain::run_experiment(std::move(plan), opts);
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  return *report;
}

std::shared_ptr<const Checkpoint> load(const fs::path& file, const atrain::run_plan& plan) {
  auto ck = atrain::load_checkpoint(file.string(), plan);
  if (!ck)
    BOOST_FAIL("cannot load " << file << ": " << atrain::error_text(ck.error()));
  return *ck;
}

/// The report without what legitimately differs between an uninterrupted
/// run and a resumed one (wall time, checkpoint file names, resume note).
std::string comparable(RunReport r) {
  r.clear_wall_seconds();
  r.clear_checkpoints();
  r.clear_resumed_from();
  r.clear_resumed_at_seconds();
  return r.SerializeAsString();
}

/// Every node's saved state (models, trackers, samplers, generators,
/// counters), every link's and the evaluator's must be identical bit for bit.
void expect_same_state(const Checkpoint& a, const Checkpoint& b) {
  BOOST_TEST(a.time_ns() == b.time_ns());
  BOOST_TEST(a.trace_hash() == b.trace_hash());
  BOOST_TEST(a.trace_events() == b.trace_events());
  BOOST_REQUIRE(a.nodes_size() == b.nodes_size());
  for (int i = 0; i < a.nodes_size(); ++i) {
    const auto& x = a.nodes(i).params();
    const auto& y = b.nodes(i).params();
    BOOST_REQUIRE(x.size() == y.size());
    BOOST_TEST(std::memcmp(x.data(), y.data(), sizeof(float) * static_cast<std::size_t>(x.size())) == 0,
               "node " << i << "'s model differs");
    BOOST_TEST(a.nodes(i).SerializeAsString() == b.nodes(i).SerializeAsString(),
               "node " << i << "'s state differs");
  }
  BOOST_REQUIRE(a.links_size() == b.links_size());
  for (int k = 0; k < a.links_size(); ++k)
    BOOST_TEST(a.links(k).SerializeAsString() == b.links(k).SerializeAsString());
  BOOST_TEST(a.evaluator().SerializeAsString() == b.evaluator().SerializeAsString());
}

/// Runs `base` with checkpoints at T1 < T2 uninterrupted (A), the same spec
/// stopped right after T1 (B, checkpoint at T1 only), and A's spec resumed
/// from B's file (C): B's checkpoint equals A's first, C's second equals
/// A's second, and C's report equals A's.
void expect_resume_equals_uninterrupted(const std::string& config,
                                        const std::vector<std::string>& base, double t1,
                                        double t2, double end, const std::string& tag) {
  const auto a_file = scratch(tag + "_A_{k}.ckpt").string();
  const auto b_file = scratch(tag + "_B_{k}.ckpt").string();
  const auto c_file = scratch(tag + "_C_{k}.ckpt").string();
  auto times = "checkpoint.at_seconds=[" + std::to_string(t1) + "," + std::to_string(t2) + "]";
  auto common = with(base, {"progress=false", "stop.stop_at_target=false",
                            "stop.time_seconds=" + std::to_string(end), times});
  auto plan_a = t::config(config, with(common, {"checkpoint.file=" + a_file}));
  const auto a = run(plan_a);
  BOOST_REQUIRE(a.checkpoints_size() == 2);
  auto plan_b = t::config(config, with(base, {"progress=false", "stop.stop_at_target=false",
                                               "stop.time_seconds=" + std::to_string(t1 + 1e-4),
                                               "checkpoint.at_seconds=[" + std::to_string(t1) + "]",
                                               "checkpoint.file=" + b_file}));
  const auto b = run(plan_b);
  BOOST_REQUIRE(b.checkpoints_size() == 1);
  BOOST_TEST(b.duration_seconds() < end);
  const auto a1 = load(scratch(tag + "_A_1.ckpt"), *plan_a);
  const auto b1 = load(scratch(tag + "_B_1.ckpt"), *plan_a);  // only stop/checkpoint differ
  expect_same_state(*a1, *b1);
  auto plan_c = t::config(config, with(common, {"checkpoint.file=" + c_file}));
  const auto resumed = scratch(tag + "_B_1.ckpt").string();
  const auto c = run(plan_c, load(resumed, *plan_c), resumed);
  BOOST_TEST(c.resumed_from() == resumed);
  BOOST_TEST(c.resumed_at_seconds() == b1->time_seconds());
  BOOST_REQUIRE(c.checkpoints_size() == 2);  // B's, then C's own second
  BOOST_TEST(c.checkpoints(1).number() == 2u);
  expect_same_state(*load(scratch(tag + "_A_2.ckpt"), *plan_a),
                    *load(scratch(tag + "_C_2.ckpt"), *plan_a));
  BOOST_TEST(c.trace_hash() == a.trace_hash());
  BOOST_TEST(c.trace_events() == a.trace_events());
  BOOST_TEST(c.final().train_loss() == a.final().train_loss());
  BOOST_TEST(c.final().test_accuracy() == a.final().test_accuracy());
  BOOST_TEST(c.metrics_size() == a.metrics_size());
  BOOST_TEST(comparable(c) == comparable(a));
  const auto& ck = a.checkpoints(0);
  BOOST_TEST(ck.taken_seconds() >= ck.requested_seconds());
  BOOST_TEST_MESSAGE(tag << ": checkpoint at " << ck.requested_seconds() << " s drained in "
                         << ck.drain_seconds() << " s virtual (" << ck.bytes()
                         << " bytes); resumed run = uninterrupted: trace " << a.trace_hash()
                         << " (" << a.trace_events() << " events), final loss "
                         << a.final().train_loss() << ", " << a.metrics_size() << " rows");
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

void write_bytes(const fs::path& p, const std::string& b) {
  std::ofstream out{p, std::ios::binary};
  out << b;
}

std::string load_error(const fs::path& file, const atrain::run_plan& plan) {
  auto ck = atrain::load_checkpoint(file.string(), plan);
  BOOST_REQUIRE(!ck);
  return atrain::error_text(ck.error());
}

std::string spec_error_of(const std::string& config, const std::vector<std::string>& overrides) {
  try {
    (void)t::config(config, overrides);
  } catch (const atrain::spec_error& e) {
    return e.what();
  }
  return {};
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(checkpoint, remove_scratch)

// R-FAST over lossy, duplicating, reordering links, with a loss burst
// active across the first barrier: every generator and sequence counter is
// in the checkpoint.
BOOST_AUTO_TEST_CASE(rfast_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted(
    "quickstart.textproto",
    {"dataset.max_train_samples=8000", "link.loss=0.1", "link.duplicate=0.05",
     "link.reorder=0.1", "link.reorder_delay_seconds=0.003",
     "faults.loss_burst=[{loss: 0.3 from_seconds: 0.5 to_seconds: 1.5}]"},
    1.0, 2.0, 2.6, "rfast");
}

// Ring-AllReduce over acknowledged links that lose packets: the barrier
// waits for every retransmission; the ring is idle at the checkpoint.
BOOST_AUTO_TEST_CASE(allreduce_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/allreduce.textproto",
                                     {"dataset.max_train_samples=8000", "link.loss=0.1"}, 1.0,
                                     2.0, 2.6, "allreduce");
}

// D-PSGD (synchronous gossip rounds) over lossy acknowledged links: every
// node holds at the same round boundary with no neighbour model waiting.
BOOST_AUTO_TEST_CASE(dpsgd_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/dpsgd.textproto",
                                     {"dataset.max_train_samples=8000", "link.loss=0.1"}, 1.0,
                                     2.0, 2.6, "dpsgd");
}

// DASGD with batching (broadcast_every 2: unsent batches and their creation
// times are in the file) over lossy, duplicating, reordering acknowledged
// links.
BOOST_AUTO_TEST_CASE(dasgd_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted(
    "algorithms/dasgd.textproto",
    {"dataset.max_train_samples=8000", "nodes=4", "algorithm.dasgd.broadcast_every=2",
     "link.loss=0.1", "link.duplicate=0.05", "link.reorder=0.1",
     "link.reorder_delay_seconds=0.003"},
    1.0, 2.0, 2.6, "dasgd");
}

// LOSCAR-SGD over lossy, duplicating, reordering links, a slow node and the
// aggregator away from node 0: the barrier finds workers in every phase and
// the aggregator inside a round.
BOOST_AUTO_TEST_CASE(loscar_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted(
    "algorithms/loscar.textproto",
    {"dataset.max_train_samples=8000", "nodes=4", "algorithm.loscar.aggregator=2",
     "link.loss=0.1", "link.duplicate=0.05", "link.reorder=0.1",
     "link.reorder_delay_seconds=0.003", "cost.slowdown=[{node: 1 factor: 2}]"},
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
                         "stop.stop_at_target=false", "stop.time_seconds=0.56",
                         "link.loss=0.1", "link.reorder=0.1", "link.reorder_delay_seconds=0.003",
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
                     << " gradients, each applied once by each of " << n
                     << " nodes; replica vs x0 - sum gamma g: " << worst
                     << " (relative); replica spread " << spread);
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
                         "algorithm.loscar.overlap_steps=2", "link.loss=0.1",
                         "link.reorder=0.1", "link.reorder_delay_seconds=0.003",
                         "cost.slowdown=[{node: 1 factor: 2}]",
                         "checkpoint.at_seconds=[0.3,0.52,0.71,0.9]", "checkpoint.file=" + file});
  const auto report = run(plan);
  BOOST_REQUIRE(report.checkpoints_size() == 4);
  using W = atrain::proto::LoscarWorkerState;
  std::map<int, int> phases;
  int behind = 0;
  for (int c = 1; c <= 4; ++c) {
    const auto ck = load(scratch("loscar_inv_" + std::to_string(c) + ".ckpt"), *plan);
    const auto& agg = ck->nodes(2).loscar_aggregator();
    const auto r_agg = agg.round();
    const auto k = static_cast<std::size_t>(agg.got_size()) /
                   std::max<std::size_t>(1, static_cast<std::size_t>(agg.got_from_size()));
    std::set<std::uint32_t> sent;
    for (int i = 0; i < ck->nodes_size(); ++i) {
      const auto& s = ck->nodes(i);
      const auto& l = s.loscar();
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
      const auto& y = ck->nodes(static_cast<int>(agg.got_from(j))).loscar().y_s();
      BOOST_REQUIRE(static_cast<std::size_t>(y.size()) == k);
      BOOST_TEST(std::memcmp(y.data(), agg.got().data() + static_cast<std::size_t>(j) * k,
                             sizeof(float) * k) == 0);
    }
  }
  // A file whose aggregator state does not fit the spec is refused, naming it.
  auto bad = *load(scratch("loscar_inv_1.ckpt"), *plan);
  bad.mutable_nodes(2)->mutable_loscar_aggregator()->clear_average();
  BOOST_REQUIRE(atrain::write_checkpoint(bad, scratch("loscar_bad.ckpt").string()));
  const auto why = load_error(scratch("loscar_bad.ckpt"), *plan);
  BOOST_TEST(why.find("node 2: loscar_aggregator.average has 0 values") != std::string::npos, why);
  BOOST_TEST_MESSAGE("LOSCAR at 4 checkpoints: worker phases local/overlap/waiting = "
                     << phases[W::LOCAL] << "/" << phases[W::OVERLAP] << "/" << phases[W::WAITING]
                     << ", " << behind << " workers one round behind the aggregator");
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
  auto steps = t::quickstart({"dataset.max_train_samples=4000", "stop.time_seconds=5",
                              "algorithm.rfast.step_size=0.5"});
  BOOST_TEST(load_error(good, *steps).find("step_size") != std::string::npos);

  // Another node count.
  auto fewer = t::quickstart({"dataset.max_train_samples=4000", "nodes=4"});
  const auto nodes = load_error(good, *fewer);
  BOOST_TEST(nodes.find("holds 8 nodes; the spec runs 4") != std::string::npos, nodes);

}

BOOST_AUTO_TEST_CASE(the_barrier_conserves_rfast_tracker_mass) {
  const auto file = scratch("mass_{k}.ckpt").string();
  auto plan = t::quickstart({"dataset.max_train_samples=4000", "progress=false",
                             "stop.stop_at_target=false", "stop.time_seconds=0.7",
                             "link.latency_seconds=0.004", "checkpoint.at_seconds=[0.3,0.5]",
                             "checkpoint.file=" + file});
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
    for (std::size_t k = 0; k < dim; ++k) {
      lhs[k] += s.tracker(static_cast<int>(k));
      rhs[k] += s.g_prev(static_cast<int>(k));
    }
    for (const auto& m : s.mass_in()) {
      const auto& sender = ck->nodes(static_cast<int>(m.node()));
      BOOST_TEST(m.seq() == sender.pushes(), "node " << s.node() << " misses a push of " << m.node());
      BOOST_TEST(std::equal(m.rho_hat().begin(), m.rho_hat().end(), sender.rho().begin()));
      const double c = topo.c(s.node(), m.node());
      for (std::size_t k = 0; k < dim; ++k) {
        const double used = m.consumed_all() ? m.rho_hat(static_cast<int>(k))
                                             : m.rho_tilde(static_cast<int>(k));
        lhs[k] += c * (sender.rho(static_cast<int>(k)) - used);
      }
    }
    // The worker held with nothing in flight: every gradient it computed is
    // in the tracker (init + one per wake).
    BOOST_TEST(s.compute().gradients() == s.wakes() + 1);
    BOOST_TEST(s.tracks() == s.wakes());
  }
  double err = 0, scale = 1;
  for (std::size_t k = 0; k < dim; ++k) {
    err = std::max(err, std::abs(lhs[k] - rhs[k]));
    scale = std::max(scale, std::abs(rhs[k]));
  }
  BOOST_TEST(err / scale < 1e-12);
  BOOST_TEST_MESSAGE("mass residual at the checkpoint (from the file): " << err / scale
                     << "; after every event: worst " << worst << " over " << checks
                     << " checks; drain " << report.checkpoints(0).drain_seconds() << " s");
}

BOOST_AUTO_TEST_CASE(checkpoint_blocks_are_validated_field_by_field) {
  auto e = spec_error_of("quickstart.textproto", {"checkpoint.at_seconds=[2,1]", "checkpoint.file=x"});
  BOOST_TEST(e.find("checkpoint.at_seconds[1]: must be after checkpoint.at_seconds[0]") !=
               std::string::npos, e);
  e = spec_error_of("quickstart.textproto", {"checkpoint.at_seconds=[1]"});
  BOOST_TEST(e.find("checkpoint.file: must name the file") != std::string::npos, e);
  e = spec_error_of("quickstart.textproto", {"checkpoint.file=x"});
  BOOST_TEST(e.find("checkpoint: needs at_seconds or every_seconds") != std::string::npos, e);
  e = spec_error_of("quickstart.textproto", {"checkpoint.at_seconds=[40]", "checkpoint.file=x"});
  BOOST_TEST(e.find("must be before stop.time_seconds") != std::string::npos, e);
  e = spec_error_of("quickstart.textproto",
                    {"checkpoint.every_seconds=1", "checkpoint.file=x",
                     "faults.crash=[{node: 1 at_seconds: 2}]"});
  BOOST_TEST(e.find("checkpoint: cannot be combined with faults.crash") != std::string::npos, e);
  e = spec_error_of("algorithms/allreduce.textproto",
                    {"checkpoint.every_seconds=1", "checkpoint.file=x",
                     "algorithm.allreduce.straggler_policy=SKIP"});
  BOOST_TEST(e.find("not implemented for allreduce with straggler_policy SKIP") !=
               std::string::npos, e);
}

// REAL clock (gradients padded to 10 ms like the virtual quickstart, so the
// target lies well after the checkpoint): no equality claim (the interleaving is real), only that the
// checkpoint is written and a resumed run continues from it to the target.
BOOST_AUTO_TEST_CASE(real_clock_run_writes_a_checkpoint_and_resumes_to_the_target) {
  const auto file = scratch("real_{k}.ckpt").string();
  auto first = t::config("quickstart_real.textproto",
                         {"progress=false", "cost.real_min_seconds=0.01",
                          "stop.stop_at_target=false", "stop.time_seconds=0.6",
                          "checkpoint.at_seconds=[0.5]", "checkpoint.file=" + file});
  const auto a = run(first);
  BOOST_REQUIRE(a.checkpoints_size() == 1);
  const auto saved = scratch("real_1.ckpt").string();
  auto rest = t::config("quickstart_real.textproto", {"progress=false", "cost.real_min_seconds=0.01"});
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
  BOOST_TEST_MESSAGE("REAL: checkpoint at " << ck->time_seconds() << " s (drain "
                     << a.checkpoints(0).drain_seconds() << " s), resumed run reached the target at "
                     << b.time_to_target() << " s");
}

BOOST_AUTO_TEST_SUITE_END()
