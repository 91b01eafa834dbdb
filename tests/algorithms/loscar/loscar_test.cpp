/// LOSCAR-SGD (ALGORITHMS.md §3) on the actor runtime: the sample, the merge
/// and the step counts as pure functions; the merges real workers applied
/// (ledger via run_probe) checked against sums recomputed here; malformed
/// packets; the configs' targets, over lossy links, on the real clock; replay.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <set>

#include "algorithms/loscar/loscar.hpp"
#include "atrain/kernels/rng.hpp"
#include "fixtures.hpp"
#include "gossip_fixtures.hpp"

namespace t = atrain::test;
namespace g = atrain::test::gossip;
using atrain::loscar_merge_record;

namespace {

/// A small task: 2000 training rows, 4 nodes, 0.8 s of virtual time, rounds of
/// 3 local steps, duplicating and reordering links with latency.
std::vector<std::string> small(std::vector<std::string> extra) {
  return g::with({"dataset.max_train_samples=2000", "dataset.max_test_samples=500", "nodes=4",
                  "stop.time_seconds=0.8", "stop.stop_at_target=false", "eval.period_seconds=0.2",
                  "progress=false", "algorithm.loscar.step_size=0.3",
                  "algorithm.loscar.sparsity=0.1", "algorithm.loscar.local_steps=3",
                  "algorithm.loscar.aggregator=2", "link.latency_seconds=0.002",
                  "link.duplicate=0.3", "link.reorder=0.3", "link.reorder_delay_seconds=0.005",
                  "cost.jitter=0.3", "cost.slowdown=[{node: 1 factor: 2}]"},
                 extra);
}

/// The merges every worker applied, per worker in round order, taken at 0.75 s
/// of a probed virtual run; `report` gets the run's report.
std::vector<std::vector<loscar_merge_record>>
merges_of(const std::vector<std::string>& overrides, atrain::proto::RunReport* report = nullptr) {
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  atrain::virtual_run run{t::quickstart(small(overrides)), opts};
  while (run.step() && run.now_seconds() < 0.75) {
  }
  std::vector<std::vector<loscar_merge_record>> out;
  for (const auto& w : probe->workers)
    out.push_back(atrain::loscar_take_merges(w));
  auto r = run.run();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->error().empty(), r->error());
  if (report != nullptr)
    *report = *r;
  return out;
}

/// Rounds every worker has merged.
std::size_t common_rounds(const std::vector<std::vector<loscar_merge_record>>& m) {
  std::size_t rounds = ~std::size_t{0};
  for (const auto& w : m)
    rounds = std::min(rounds, w.size());
  return rounds;
}

/// max over rounds and coordinates of |mean_i x_i - mean_i z_i| (double sums).
double mean_drift(const std::vector<std::vector<loscar_merge_record>>& m, std::size_t rounds) {
  double worst = 0;
  const std::size_t dim = m.front().front().x.size();
  for (std::size_t r = 0; r < rounds; ++r)
    for (std::size_t c = 0; c < dim; ++c) {
      double dx = 0;
      for (const auto& w : m)
        dx += static_cast<double>(w[r].x[c]) - static_cast<double>(w[r].z[c]);
      worst = std::max(worst, std::abs(dx) / static_cast<double>(m.size()));
    }
  return worst;
}

std::vector<std::string> real_clock(const char* merge) {
  return {"algorithm.loscar.step_size=0.3",
          "algorithm.loscar.sparsity=0.1",
          "algorithm.loscar.round_seconds=0.05",
          "algorithm.loscar.overlap_steps=2",
          std::string{"algorithm.loscar.merge="} + merge,
          "progress=false"};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(loscar)

BOOST_AUTO_TEST_CASE(k_is_at_least_one_and_at_most_d) {
  BOOST_TEST(atrain::loscar_k(0.001, 123) == 1u);
  BOOST_TEST(atrain::loscar_k(0.1, 124) == 12u);
  BOOST_TEST(atrain::loscar_k(1.0, 124) == 124u);
  BOOST_TEST(atrain::loscar_k(0.5, 3) == 2u);  // round(1.5) = 2
}

BOOST_AUTO_TEST_CASE(sample_is_distinct_uniform_and_changes_per_round) {
  const std::size_t d = 124, k = 12, rounds = 4000;
  std::vector<std::size_t> hits(d, 0);
  std::set<std::vector<std::uint32_t>> distinct;
  for (std::uint64_t r = 0; r < rounds; ++r) {
    const auto s = atrain::loscar_sample(7, r, d, k);
    BOOST_REQUIRE(s.size() == k);
    BOOST_TEST(std::set<std::uint32_t>(s.begin(), s.end()).size() == k);
    BOOST_TEST(s.back() < d);
    BOOST_TEST(s == atrain::loscar_sample(7, r, d, k));  // recomputed: the same
    distinct.insert(s);
    for (auto c : s)
      ++hits[c];
  }
  BOOST_TEST(distinct.size() == rounds);  // C(124, 12) ~ 1e17: no repeats expected
  BOOST_TEST(atrain::loscar_sample(7, 0, d, k) != atrain::loscar_sample(8, 0, d, k));
  // Each coordinate is drawn with probability k/d per round: 387 expected
  // hits, sd ~ 19; 6 sd either side.
  const double expect = static_cast<double>(rounds * k) / d;
  for (auto h : hits)
    BOOST_TEST(std::abs(static_cast<double>(h) - expect) < 6 * std::sqrt(expect));
}

BOOST_AUTO_TEST_CASE(merge_math_corrected_keeps_the_mean_naive_does_not_equal_at_q0) {
  const std::size_t n = 5, d = 40;
  const auto sample = atrain::loscar_sample(3, 0, d, 9);
  atrain::rng gen{11};
  std::vector<std::vector<float>> y(n, std::vector<float>(d)), z = y;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c) {
      y[i][c] = static_cast<float>(gen.normal());
      z[i][c] = y[i][c] + 0.1f * static_cast<float>(gen.normal());  // Q > 0 steps moved it
    }
  std::vector<float> mean(sample.size()), mean_q0(sample.size());
  std::vector<std::vector<float>> y_s(n, std::vector<float>(sample.size()));
  for (std::size_t j = 0; j < sample.size(); ++j) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i)
      s += y_s[i][j] = y[i][sample[j]];
    mean[j] = static_cast<float>(s / n);
  }
  auto merged = [&](const std::vector<std::vector<float>>& from, bool naive) {
    auto x = from;
    for (std::size_t i = 0; i < n; ++i)
      atrain::loscar_merge(x[i], sample, y_s[i].data(), mean.data(), naive);
    return x;
  };
  auto drift = [&](const std::vector<std::vector<float>>& x,
                   const std::vector<std::vector<float>>& before) {
    double worst = 0;
    for (std::size_t c = 0; c < d; ++c) {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i)
        s += static_cast<double>(x[i][c]) - before[i][c];
      worst = std::max(worst, std::abs(s) / n);
    }
    return worst;
  };
  const double corrected = drift(merged(z, false), z);
  const double naive = drift(merged(z, true), z);
  BOOST_TEST_MESSAGE("mean drift: corrected " << corrected << ", naive " << naive);
  BOOST_TEST(corrected < 1e-6);
  BOOST_TEST(naive > 1e-3);
  // Q = 0: z = y, both merges give x[S] = mean (up to float rounding).
  const auto a = merged(y, false), b = merged(y, true);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < d; ++c)
      BOOST_TEST(std::abs(a[i][c] - b[i][c]) < 1e-6);
}

BOOST_AUTO_TEST_CASE(schedule_from_tau_slowdown_and_link_model) {
  // tau 10 ms, node 3 twice as slow, rounds of 50 ms, 2 ms latency, no
  // bandwidth limit, aggregator on node 0. By hand: N = 5 (node 3:
  // round(2.5) = 3); busy 50 ms (node 3: 60 ms); the mean leaves at
  // max(50, 50 + 2, 60 + 2) = 62 ms and reaches i != 0 at 64 ms, node 0 at
  // 62 ms. Q = floor((64 - 50) / 10) = 1, node 0 floor(12 / 10) = 1,
  // node 3 floor((64 - 60) / 20) = 0.
  auto schedule = [](std::vector<std::string> extra) {
    return atrain::loscar_schedule(
      *t::quickstart(g::with({"nodes=4", "dataset.max_train_samples=500",
                              "algorithm.loscar.step_size=0.3", "algorithm.loscar.sparsity=0.1",
                              "algorithm.loscar.round_seconds=0.05", "cost.tau_seconds=0.01",
                              "cost.slowdown=[{node: 3 factor: 2}]", "link.latency_seconds=0.002"},
                             extra)));
  };
  const auto s = schedule({});
  const std::vector<std::uint32_t> n_want{5, 5, 5, 3}, q_want{1, 1, 1, 0};
  for (std::size_t i = 0; i < 4; ++i) {
    BOOST_TEST(s[i].local == n_want[i]);
    BOOST_TEST(s[i].overlap == q_want[i]);
  }
  // A slow link (1 kB/s: 72 bytes take 72 ms per hop) widens the window:
  // mean at 60 + 74 + 74 = 208 ms: Q = floor(158 / 10) = 15, node 3 7.
  const auto w = schedule({"link.bandwidth_bytes_per_second=1000"});
  BOOST_TEST(w[1].overlap == 15u);
  BOOST_TEST(w[3].overlap == 7u);
  BOOST_TEST(w[0].overlap == 8u);  // floor((134 - 50) / 10)
  for (const auto& c : schedule({"algorithm.loscar.blocking=true", "algorithm.loscar.local_steps=4",
                                 "link.bandwidth_bytes_per_second=1000"})) {
    BOOST_TEST(c.local == 4u);
    BOOST_TEST(c.overlap == 0u);
  }
}

BOOST_AUTO_TEST_CASE(workers_corrected_merge_keeps_the_worker_mean_naive_drifts) {
  atrain::proto::RunReport report;
  const auto corrected = merges_of({"algorithm.loscar.overlap_steps=2"}, &report);
  const auto naive =
    merges_of({"algorithm.loscar.overlap_steps=2", "algorithm.loscar.merge=NAIVE"});
  const std::size_t rounds = common_rounds(corrected);
  BOOST_REQUIRE(rounds >= 5u);
  BOOST_REQUIRE(common_rounds(naive) >= 5u);
  for (std::size_t r = 0; r < rounds; ++r) {
    const auto& r0 = corrected.front()[r];
    BOOST_TEST(r0.round == r);
    // The aggregator's mean is the average of what the workers sent.
    for (std::size_t j = 0; j < r0.sample.size(); ++j) {
      double s = 0;
      for (const auto& w : corrected)
        s += w[r].y_s[j];
      BOOST_TEST(std::abs(r0.mean[j] - s / corrected.size()) < 1e-6);
    }
    for (const auto& w : corrected) {
      BOOST_TEST(w[r].overlap == 2u);
      BOOST_TEST(w[r].mean == r0.mean);
      // Only S_r moves.
      std::set<std::uint32_t> in(w[r].sample.begin(), w[r].sample.end());
      for (std::size_t c = 0; c < w[r].x.size(); ++c)
        if (in.count(static_cast<std::uint32_t>(c)) == 0)
          BOOST_TEST(w[r].x[c] == w[r].z[c]);
    }
  }
  const double drift = mean_drift(corrected, rounds);
  const double drift_naive = mean_drift(naive, common_rounds(naive));
  BOOST_TEST_MESSAGE(rounds << " rounds; worker-mean drift per merge: corrected " << drift
                            << ", naive " << drift_naive);
  BOOST_TEST(drift < 1e-6);
  BOOST_TEST(drift_naive > 1e-4);
  BOOST_TEST(report.staleness_mean() == 2.0);
  BOOST_TEST(report.staleness_max() == 2.0);
}

BOOST_AUTO_TEST_CASE(workers_draw_the_same_sample_per_round_and_another_next_round) {
  const auto m = merges_of({"algorithm.loscar.overlap_steps=1"});
  const std::size_t rounds = common_rounds(m);
  BOOST_REQUIRE(rounds >= 5u);
  std::set<std::vector<std::uint32_t>> seen;
  for (std::size_t r = 0; r < rounds; ++r) {
    for (const auto& w : m)
      BOOST_TEST(w[r].sample == m.front()[r].sample);
    BOOST_TEST(m.front()[r].sample.size() == 12u);  // round(0.1 x 124)
    seen.insert(m.front()[r].sample);
  }
  BOOST_TEST(seen.size() == rounds);
}

BOOST_AUTO_TEST_CASE(without_overlap_corrected_equals_naive_and_full_sample_equalizes) {
  for (const char* merge : {"DELAY_CORRECTED", "NAIVE"}) {
    // Q = 0: z = y, so x[S] = z[S] + m - y[S] = m, the naive result.
    const auto m = merges_of(
      {"algorithm.loscar.overlap_steps=0", std::string{"algorithm.loscar.merge="} + merge});
    const std::size_t rounds = common_rounds(m);
    BOOST_REQUIRE(rounds >= 5u);
    double worst = 0;
    for (const auto& w : m)
      for (std::size_t r = 0; r < rounds; ++r)
        for (std::size_t j = 0; j < w[r].sample.size(); ++j) {
          BOOST_TEST(w[r].z[w[r].sample[j]] == w[r].y_s[j]);
          worst =
            std::max(worst, static_cast<double>(std::abs(w[r].x[w[r].sample[j]] - w[r].mean[j])));
        }
    BOOST_TEST_MESSAGE(merge << ", Q = 0: max |x[S] - m| = " << worst);
    BOOST_TEST(worst < 1e-6);
  }
  // K = d, Q = 0: plain local SGD, every worker holds the same model after a merge.
  const auto full = merges_of({"algorithm.loscar.overlap_steps=0", "algorithm.loscar.sparsity=1"});
  const std::size_t rounds = common_rounds(full);
  BOOST_REQUIRE(rounds >= 5u);
  double spread = 0;
  for (std::size_t r = 0; r < rounds; ++r)
    for (const auto& w : full) {
      BOOST_TEST(w[r].sample.size() == w[r].x.size());
      for (std::size_t c = 0; c < w[r].x.size(); ++c)
        spread = std::max(spread, static_cast<double>(std::abs(w[r].x[c] - full[0][r].x[c])));
    }
  BOOST_TEST_MESSAGE("K = d, Q = 0: max spread between workers after a merge " << spread);
  BOOST_TEST(spread < 1e-6);
  // And with overlap the workers do not agree: the check above can fail.
  const auto overlapped =
    merges_of({"algorithm.loscar.overlap_steps=2", "algorithm.loscar.sparsity=1"});
  double spread_q = 0;
  for (const auto& w : overlapped)
    for (std::size_t c = 0; c < w[0].x.size(); ++c)
      spread_q =
        std::max(spread_q, static_cast<double>(std::abs(w[0].x[c] - overlapped[0][0].x[c])));
  BOOST_TEST(spread_q > 1e-4);
}

BOOST_AUTO_TEST_CASE(malformed_packets_are_rejected_and_counted_never_applied) {
  auto plan = t::quickstart(small({"algorithm.loscar.overlap_steps=1"}));
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  const std::size_t k = atrain::loscar_k(0.1, plan->dim());
  atrain::virtual_run run{plan, opts};
  while (run.step() && run.now_seconds() < 0.2) {
  }
  BOOST_REQUIRE(probe->workers.size() == 4u);
  BOOST_REQUIRE(probe->buffers.size() == 1u);  // the aggregator, node 2's buffer
  auto bad = [&](std::uint32_t from, std::uint32_t to, std::uint32_t kind) {
    std::vector<atrain::packet> out(5);
    for (auto& p : out) {
      p.from = from;
      p.to = to;
      p.kind = kind;
      p.seq = 1;
      p.f = atrain::float_blob{std::vector<float>(k, 0.f)};
    }
    out[0].from = 99;                                                     // unknown sender
    out[1].f = atrain::float_blob{std::vector<float>(k + 1, 0.f)};        // wrong size
    out[2].f = atrain::float_blob{std::vector<float>(k, std::nanf(""))};  // NaN
    out[3].kind = 77;                                                     // unknown stream
    out[4].seq = 1000000;                                                 // a round far ahead
    return out;
  };
  auto worker = caf::actor_cast<caf::actor>(probe->workers[1]);
  auto aggregator = caf::actor_cast<caf::actor>(probe->buffers[0]);
  for (auto& p : bad(2, 1, atrain::loscar_down))
    caf::anon_send(worker, atrain::deliver_atom::value, p);
  for (auto& p : bad(1, 2, atrain::loscar_up))
    caf::anon_send(aggregator, atrain::deliver_atom::value, p);
  worker = nullptr;
  aggregator = nullptr;
  auto report = run.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->packets_rejected() == 10u);
  BOOST_TEST(std::isfinite(report->final().train_loss()));
  BOOST_TEST(report->staleness_mean() == 1.0);  // every merge as scheduled: Q = 1
}

BOOST_AUTO_TEST_CASE(reaches_the_quickstart_target_with_its_configs) {
  g::expect_target("loscar", t::config("algorithms/loscar.textproto", {"progress=false"}));
  g::expect_target("loscar_naive",
                   t::config("algorithms/loscar_naive.textproto", {"progress=false"}));
}

BOOST_AUTO_TEST_CASE(blocking_variant_reaches_the_target_without_staleness) {
  auto plan =
    t::config("algorithms/loscar.textproto", {"progress=false", "algorithm.loscar.blocking=true",
                                              "algorithm.loscar.overlap_steps=0"});
  auto report = atrain::run_experiment(plan);
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->stop_reason() == "target accuracy reached");
  BOOST_TEST(report->staleness_max() == 0.0);
  BOOST_TEST_MESSAGE("blocking: target at " << report->time_to_target() << " s virtual, "
                                            << report->gradients_total() << " gradients");
}

BOOST_AUTO_TEST_CASE(reaches_the_target_over_lossy_acknowledged_links) {
  t::expect_target_over_lossy_links("loscar.textproto");
  t::expect_target_over_lossy_links("loscar_naive.textproto");
}

BOOST_AUTO_TEST_CASE(reaches_the_target_on_the_real_clock) {
  g::expect_target_real(t::config("quickstart_real.textproto", real_clock("DELAY_CORRECTED")));
  g::expect_target_real(t::config("quickstart_real.textproto", real_clock("NAIVE")));
}

BOOST_AUTO_TEST_CASE(same_seed_same_trace_other_seed_differs) {
  for (const char* merge : {"DELAY_CORRECTED", "NAIVE"})
    g::expect_replay({"algorithm.loscar.step_size=0.3", "algorithm.loscar.sparsity=0.1",
                      "algorithm.loscar.round_seconds=0.05", "algorithm.loscar.overlap_steps=2",
                      std::string{"algorithm.loscar.merge="} + merge, "progress=false",
                      "stop.time_seconds=1", "stop.stop_at_target=false", "link.duplicate=0.2",
                      "dataset.max_train_samples=4000", "dataset.max_test_samples=1000",
                      "link.reorder=0.3", "link.reorder_delay_seconds=0.01"});
}

BOOST_AUTO_TEST_SUITE_END()
