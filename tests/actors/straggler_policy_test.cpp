/// straggler_policy (issue 5, backup-worker style) of the synchronous
/// baselines: with SKIP the ring all-reduce and D-PSGD go on without a late
/// gradient and use it one step later. Checked against independent ledgers:
///   - the ring's counts: every rank ends a round with the same sum and the
///     same count, the sum (in double) and count of what was put in;
///   - Ring-AllReduce SKIP with a 4x straggler: per step, identical sums,
///     counts and models on all nodes, x_{k+1} = x_k - gamma_k / C S, no
///     gradient lost;
///   - D-PSGD SKIP: mixing-only rounds keep the node average, which moves by
///     -gamma_k / n times the gradients applied in the round (WAIT too);
///   - Local SGD SKIP: every average is the mean of all n current models
///     (some with fewer local steps), identical on every node;
///   - with a 4x straggler SKIP reaches the target sooner (virtual clock,
///     deterministic: a comparison of two runs, not a timing) and reports
///     the late gradients per node; WAIT is the default and replay holds.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "algorithms/allreduce/allreduce.hpp"
#include "algorithms/dpsgd/dpsgd.hpp"
#include "algorithms/local_sgd/local_sgd.hpp"
#include "algorithms/ring/ring.hpp"
#include "atrain/messages/spec.hpp"
#include "fixtures.hpp"
#include "gossip_fixtures.hpp"
#include "ring_fixtures.hpp"

namespace t = atrain::test;
using atrain::ring_allreduce;

namespace {

const std::string straggler = "cost.slowdown=[{node: 3 factor: 4}]";

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// config/algorithms/<name>.textproto with `policy`, progress off, and `extra`.
std::shared_ptr<const atrain::run_plan> spec(const std::string& name, const std::string& policy,
                                             const std::vector<std::string>& extra) {
  return t::config(
    "algorithms/" + name + ".textproto",
    with({"algorithm." + name + ".straggler_policy=" + policy, "progress=false"}, extra));
}

atrain::proto::RunReport run(std::shared_ptr<const atrain::run_plan> plan) {
  auto r = atrain::run_experiment(std::move(plan));
  BOOST_REQUIRE(r);
  BOOST_TEST(r->error().empty(), r->error());
  BOOST_TEST(r->packets_rejected() == 0u);
  return *r;
}

/// A virtual run to its end and the test-hook ledger of every node:
/// entries[key][node], at most one per node and key (checked).
template <class Entry>
struct ledger_run {
  atrain::proto::RunReport report;
  std::map<std::uint64_t, std::map<std::uint32_t, Entry>> entries;
};

/// Runs `plan` with a probe, moving out `take(worker)` of every node after
/// every scheduler step and filing each entry under its `key` field.
template <class Entry, class Take>
ledger_run<Entry> run_with_ledger(std::shared_ptr<const atrain::run_plan> plan, Take take,
                                  std::uint64_t Entry::*key) {
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  atrain::virtual_run vr{std::move(plan), opts};
  ledger_run<Entry> out;
  while (vr.step())
    for (std::uint32_t i = 0; i < probe->workers.size(); ++i)
      for (auto& e : take(probe->workers[i])) {
        const auto k = e.*key;
        BOOST_REQUIRE(out.entries[k].emplace(i, std::move(e)).second);  // once per node and key
      }
  auto report = vr.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  out.report = *report;
  return out;
}

/// mean over the nodes of v[i], in double.
std::vector<double> mean(const std::vector<const std::vector<float>*>& v) {
  std::vector<double> m(v.front()->size(), 0.0);
  for (const auto* x : v)
    for (std::size_t c = 0; c < m.size(); ++c)
      m[c] += (*x)[c];
  for (auto& e : m)
    e /= static_cast<double>(v.size());
  return m;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(straggler_policy)

BOOST_AUTO_TEST_CASE(ring_counts_travel_with_the_chunks_and_every_rank_agrees) {
  // Ranks put in zero vectors (count 0), one gradient or the sum of two, in
  // random delivery order with duplicates; each rank starts its next round
  // as soon as it finishes one. Every rank must end every round with the
  // same sum bit for bit and the same count: sum_j count_j, and the values
  // within (n-1) 2^-24 sum_j |v_j| of the double sum (as allreduce_test).
  std::mt19937 gen{5};
  std::normal_distribution<float> normal{0.0F, 2.0F};
  for (std::uint32_t n : {2U, 3U, 5U, 8U})
    for (std::size_t d : {1, 7, 124}) {
      const std::size_t rounds = 4;
      std::vector<std::vector<std::vector<float>>> v(rounds, std::vector<std::vector<float>>(n));
      std::vector<std::vector<double>> count(rounds, std::vector<double>(n));
      for (std::size_t k = 0; k < rounds; ++k)
        for (std::uint32_t r = 0; r < n; ++r) {
          count[k][r] = static_cast<double>(std::uniform_int_distribution<int>{0, 2}(gen));
          v[k][r].assign(d, 0.0F);
          if (count[k][r] > 0)
            for (auto& e : v[k][r])
              e = normal(gen);
        }
      const auto res = t::simulate_ring(v, count, n, d, 100 * n + static_cast<std::uint32_t>(d));
      for (std::size_t k = 0; k < rounds; ++k) {
        double want = 0;
        for (std::uint32_t r = 0; r < n; ++r)
          want += count[k][r];
        for (std::uint32_t r = 0; r < n; ++r) {
          BOOST_TEST(res.counts[k][r] == want, "n=" << n << " d=" << d << " round " << k);
          BOOST_TEST(res.sums[k][r] == res.sums[k][0]);
        }
        for (std::size_t c = 0; c < d; ++c) {
          double exact = 0, magnitude = 0;
          for (std::uint32_t r = 0; r < n; ++r) {
            exact += v[k][r][c];
            magnitude += std::abs(v[k][r][c]);
          }
          BOOST_TEST(std::abs(res.sums[k][0][c] - exact) <=
                     (n - 1) * std::ldexp(1.0, -23) * magnitude);
        }
      }
    }
}

BOOST_AUTO_TEST_CASE(a_bad_count_is_invalid) {
  // Rank 1 of 3, d = 7: at step 0 it receives chunk 0 (3 floats).
  ring_allreduce ring{1, 3, 7};
  std::vector<ring_allreduce::send> out;
  const atrain::float_blob chunk{std::vector<float>{1, 2, 3}};
  for (double bad : {-1.0, 0.5, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()})
    BOOST_TEST((ring.offer(0, 0, chunk, out, bad) == ring_allreduce::verdict::invalid));
  BOOST_TEST((ring.offer(0, 0, chunk, out, 0.0) == ring_allreduce::verdict::accepted));
  BOOST_TEST(ring.called());  // the predecessor began round 0, this rank has not
  BOOST_TEST(!ring.active());
}

BOOST_AUTO_TEST_CASE(allreduce_skip_every_step_sums_exactly_what_was_put_in) {
  auto plan = spec("allreduce", "SKIP",
                   {straggler, "stop.time_seconds=3", "stop.stop_at_target=false",
                    "link.duplicate=0.2", "link.reorder=0.3", "link.reorder_delay_seconds=0.005"});
  const auto n = plan->nodes();
  const std::size_t d = plan->dim();
  const auto& algo = plan->spec.algorithm().allreduce();
  const auto run =
    run_with_ledger(plan, atrain::allreduce_take_steps, &atrain::allreduce_step::step);
  const auto* report = &run.report;
  std::vector<double> contributed(n, 0.0);  // gradients put in, per node
  for (const auto& [k, at] : run.entries)
    for (const auto& [i, s] : at)
      contributed[i] += s.count;
  std::size_t checked = 0, short_steps = 0;
  double worst = 0;
  const std::vector<float>* previous = &plan->x0;
  for (const auto& [k, at] : run.entries) {
    if (at.size() < n)
      break;  // the run stopped during this step
    double count = 0;
    for (const auto& [i, s] : at)
      count += s.count;
    BOOST_TEST(count >= 1.0);
    if (count < static_cast<double>(n))
      ++short_steps;
    const double gamma = algo.step_size() / (1.0 + algo.decay() * static_cast<double>(k));
    for (std::uint32_t i = 0; i < n; ++i) {
      BOOST_TEST(at.at(i).total == count, "step " << k << " node " << i);
      BOOST_TEST(at.at(i).sum == at.at(0).sum, "step " << k << " node " << i << ": another sum");
      BOOST_TEST(at.at(i).x == at.at(0).x, "step " << k << " node " << i << ": another model");
    }
    for (std::size_t c = 0; c < d; ++c) {
      double exact = 0, magnitude = 0;
      for (const auto& [i, s] : at) {
        exact += s.contributed[c];
        magnitude += std::abs(s.contributed[c]);
      }
      const double err = std::abs(at.at(0).sum[c] - exact);
      worst = std::max(worst, err / std::max(magnitude, 1e-30));
      BOOST_TEST(err <= (n - 1) * std::ldexp(1.0, -23) * magnitude, "step " << k << " coord " << c);
      // The descent divides by the count actually summed, not by n.
      const double step = at.at(0).x[c] - static_cast<double>((*previous)[c]);
      const double want = -gamma / count * at.at(0).sum[c];
      BOOST_TEST(std::abs(step - want) <= 1e-6 * (1.0 + std::abs((*previous)[c])),
                 "step " << k << " coord " << c << ": moved " << step << ", want " << want);
    }
    previous = &at.at(0).x;
    ++checked;
  }
  BOOST_TEST(checked > 40u);     // a step: tau + 14 hops of 2 ms, reordered
  BOOST_TEST(short_steps > 0u);  // node 3 joined with zero at times
  // Nothing lost: every gradient was put in, but those in flight or waiting
  // at the end (at most one in flight and one waiting per node).
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto grads = static_cast<double>(report->per_node(static_cast<int>(i)).gradients());
    BOOST_TEST(contributed[i] <= grads);
    BOOST_TEST(contributed[i] >= grads - 2.0, "node " << i);
  }
  const auto& slow = report->per_node(3);
  BOOST_TEST(slow.late_contributions() > 0u);
  BOOST_TEST(slow.staleness_max() >= 1.0);
  BOOST_TEST(report->late_contributions() >= slow.late_contributions());
  BOOST_TEST_MESSAGE("allreduce SKIP: " << checked << " steps checked, " << short_steps
                                        << " without every node; worst relative sum error " << worst
                                        << "; node 3 late " << slow.late_contributions() << " of "
                                        << slow.gradients() << " gradients, staleness max "
                                        << slow.staleness_max());
}

BOOST_AUTO_TEST_CASE(dpsgd_rounds_move_the_average_by_the_gradients_applied_only) {
  // avg_i x_i^{k+1} = avg_i x_i^k - gamma_k / n sum (gradients applied in
  // round k), W doubly stochastic: mixing-only rounds (SKIP) move nothing.
  for (const std::string policy : {"WAIT", "SKIP"}) {
    auto plan =
      spec("dpsgd", policy,
           {straggler, "stop.time_seconds=1", "stop.stop_at_target=false", "link.duplicate=0.2",
            "link.reorder=0.3", "link.reorder_delay_seconds=0.005"});
    const auto n = plan->nodes();
    const std::size_t d = plan->dim();
    const auto run = run_with_ledger(plan, atrain::dpsgd_take_rounds, &atrain::dpsgd_round::round);
    const auto* report = &run.report;
    const auto& rounds = run.entries;
    std::vector<std::uint64_t> applied(n, 0);
    for (const auto& [k, at] : rounds)
      for (const auto& [i, r] : at)
        applied[i] += r.gradient.empty() ? 0 : 1;
    std::size_t checked = 0, mixing_only = 0;
    double worst = 0;
    for (const auto& [k, at] : rounds) {
      if (at.size() < n)
        break;
      std::vector<const std::vector<float>*> before, after;
      std::vector<double> moved(d, 0.0);  // sum_i gamma_k g_i / n
      for (std::uint32_t i = 0; i < n; ++i) {
        const auto& r = at.at(i);
        before.push_back(&r.before);
        after.push_back(&r.after);
        if (k > 0)  // x^k is what round k-1 left
          BOOST_TEST(r.before == rounds.at(k - 1).at(i).after, "node " << i << " round " << k);
        if (r.gradient.empty()) {
          ++mixing_only;
          continue;
        }
        for (std::size_t c = 0; c < d; ++c)
          moved[c] += r.gamma * r.gradient[c] / static_cast<double>(n);
      }
      const auto m0 = mean(before), m1 = mean(after);
      for (std::size_t c = 0; c < d; ++c) {
        const double err = std::abs(m1[c] - (m0[c] - moved[c]));
        worst = std::max(worst, err);
        BOOST_TEST(err <= 1e-5 * (1.0 + std::abs(m0[c])),
                   policy << " round " << k << " coord " << c << ": average off by " << err);
      }
      ++checked;
    }
    BOOST_TEST(checked > 20u);
    for (std::uint32_t i = 0; i < n; ++i) {  // every gradient applied once, but one in flight
      const auto grads = report->per_node(static_cast<int>(i)).gradients();
      BOOST_TEST(applied[i] <= grads);
      BOOST_TEST(applied[i] + 1 >= grads, policy << " node " << i);
    }
    if (policy == "WAIT") {
      BOOST_TEST(mixing_only == 0u);
      BOOST_TEST(report->late_contributions() == 0u);
    } else {
      BOOST_TEST(mixing_only > 0u);
      BOOST_TEST(report->per_node(3).late_contributions() > 0u);
    }
    BOOST_TEST_MESSAGE("dpsgd " << policy << ": " << checked << " rounds checked, " << mixing_only
                                << " mixing-only node rounds, worst average error " << worst
                                << ", node 3 late " << report->per_node(3).late_contributions());
  }
}

BOOST_AUTO_TEST_CASE(skip_reaches_the_target_sooner_with_a_4x_straggler) {
  // Two virtual-clock runs each (deterministic): the time to the target is
  // a property of the run, not a measurement of this machine.
  for (const std::string name : {"allreduce", "dpsgd"}) {
    const auto wait = run(spec(name, "WAIT", {straggler}));
    const auto skip = run(spec(name, "SKIP", {straggler}));
    BOOST_REQUIRE(wait.has_time_to_target());
    BOOST_REQUIRE(skip.has_time_to_target());
    BOOST_TEST(skip.time_to_target() < wait.time_to_target(), name);
    // The late gradients are node 3's above all; WAIT has none.
    BOOST_TEST(wait.late_contributions() == 0u);
    std::uint64_t most = 0;
    for (const auto& nd : skip.per_node())
      if (nd.node() != 3)
        most = std::max(most, nd.late_contributions());
    BOOST_TEST(skip.per_node(3).late_contributions() > most, name);
    BOOST_REQUIRE(skip.stragglers_size() >= 1);
    BOOST_TEST(skip.stragglers(0).node() == 3u);
    BOOST_TEST_MESSAGE(name << " with node 3 x4: time to " << wait.target_accuracy() << " WAIT "
                            << wait.time_to_target() << " s, SKIP " << skip.time_to_target()
                            << " s virtual; node 3's gradient joined late "
                            << skip.per_node(3).late_contributions() << " of "
                            << skip.per_node(3).gradients() << " times");
  }
}

BOOST_AUTO_TEST_CASE(local_sgd_skip_averages_all_n_current_models) {
  // Every average holds all n models (the straggler's with fewer local
  // steps): identical on every node, the double mean of what was put in.
  auto plan = spec("local_sgd", "SKIP",
                   {straggler, "stop.time_seconds=2", "stop.stop_at_target=false",
                    "link.duplicate=0.2", "link.reorder=0.3", "link.reorder_delay_seconds=0.005"});
  const auto n = plan->nodes();
  const auto h = plan->spec.algorithm().local_sgd().local_steps();
  const auto run =
    run_with_ledger(plan, atrain::local_sgd_take_averages, &atrain::local_sgd_average::round);
  std::size_t checked = 0, short_rounds = 0;
  double worst = 0;
  for (const auto& [k, at] : run.entries) {
    if (at.size() < n)
      break;
    std::vector<const std::vector<float>*> in;
    for (const auto& [i, a] : at) {
      in.push_back(&a.contributed);
      BOOST_TEST(a.average == at.at(0).average, "average " << k << " node " << i);
      BOOST_TEST(a.local_steps <= h);  // H, or fewer when called early (the late one counts)
      if (a.local_steps < h)
        ++short_rounds;
    }
    const auto m = mean(in);
    for (std::size_t c = 0; c < m.size(); ++c) {
      const double err = std::abs(at.at(0).average[c] - m[c]);
      worst = std::max(worst, err);
      BOOST_TEST(err <= 1e-6 * (1.0 + std::abs(m[c])), "average " << k << " coord " << c);
    }
    ++checked;
  }
  BOOST_TEST(checked > 20u);
  BOOST_TEST(short_rounds > 0u);  // node 3 joined with fewer local steps
  BOOST_TEST(run.report.per_node(3).late_contributions() > 0u);
  BOOST_TEST_MESSAGE("local_sgd SKIP: " << checked << " averages checked, " << short_rounds
                                        << " node models with fewer than H steps, worst error "
                                        << worst);
}

BOOST_AUTO_TEST_CASE(local_sgd_skip_joins_the_average_with_the_current_model) {
  const auto wait = run(spec("local_sgd", "WAIT", {straggler}));
  const auto skip = run(spec("local_sgd", "SKIP", {straggler}));
  BOOST_REQUIRE(skip.has_time_to_target());
  BOOST_REQUIRE(wait.has_time_to_target());
  BOOST_TEST(skip.time_to_target() < wait.time_to_target());
  BOOST_TEST(wait.late_contributions() == 0u);
  BOOST_TEST(skip.per_node(3).late_contributions() > 0u);
  // The straggler no longer paces the others: they compute more gradients.
  BOOST_TEST(skip.per_node(0).gradients() > 2 * skip.per_node(3).gradients());
  BOOST_TEST_MESSAGE("local_sgd with node 3 x4: WAIT " << wait.time_to_target() << " s, SKIP "
                                                       << skip.time_to_target() << " s virtual");
}

BOOST_AUTO_TEST_CASE(wait_is_the_default_and_leaves_the_run_unchanged) {
  for (const std::string name : {"allreduce", "local_sgd", "dpsgd"}) {
    const auto plan = t::config("algorithms/" + name + ".textproto", {"progress=false"});
    const auto& a = plan->spec.algorithm();
    const auto policy = name == "allreduce" ? a.allreduce().straggler_policy()
                        : name == "dpsgd"   ? a.dpsgd().straggler_policy()
                                            : a.local_sgd().straggler_policy();
    BOOST_TEST(policy == atrain::proto::WAIT, name);
  }
  // No straggler, no jitter: no gradient is ever late, so SKIP runs exactly
  // the WAIT steps (same gradients, same final model). D-PSGD's SKIP sends
  // after the gradient: compared with WAIT in that order.
  for (const std::string name : {"allreduce", "dpsgd"}) {
    std::vector<std::string> calm{"cost.jitter=0", "stop.time_seconds=0.5",
                                  "stop.stop_at_target=false"};
    auto wait_calm = calm;
    if (name == "dpsgd")
      wait_calm.push_back("algorithm.dpsgd.order=SEND_AFTER_GRADIENT");
    const auto wait = run(spec(name, "WAIT", wait_calm));
    const auto skip = run(spec(name, "SKIP", calm));
    BOOST_TEST(skip.late_contributions() == 0u, name);
    BOOST_TEST(skip.gradients_total() == wait.gradients_total(), name);
    BOOST_TEST(skip.final().train_loss() == wait.final().train_loss(), name);
  }
}

BOOST_AUTO_TEST_CASE(skip_replays_deterministically) {
  for (const std::string name : {"allreduce", "local_sgd", "dpsgd"})
    t::expect_replay([&](std::uint64_t seed) {
      return spec(name, "SKIP",
                  {straggler, "stop.time_seconds=1", "stop.stop_at_target=false",
                   "link.duplicate=0.2", "link.reorder=0.3", "link.reorder_delay_seconds=0.01",
                   "seed=" + std::to_string(seed)});
    });
}

BOOST_AUTO_TEST_CASE(an_unknown_policy_is_refused_naming_the_field) {
  // In text the parser refuses it; a spec built in code reaches check_spec.
  t::gossip::expect_refused({"algorithm.dpsgd.step_size=1", "algorithm.dpsgd.straggler_policy=7"},
                            {"algorithm.dpsgd.straggler_policy", "WAIT, SKIP"});
  for (const std::string name : {"allreduce", "local_sgd", "dpsgd"}) {
    auto s = atrain::load_spec("config/algorithms/" + name + ".textproto");
    const auto bad = static_cast<atrain::proto::StragglerPolicy>(7);
    auto* a = s.spec.mutable_algorithm();
    if (name == "allreduce")
      a->mutable_allreduce()->set_straggler_policy(bad);
    else if (name == "dpsgd")
      a->mutable_dpsgd()->set_straggler_policy(bad);
    else
      a->mutable_local_sgd()->set_straggler_policy(bad);
    try {
      atrain::check_spec(s);
      BOOST_ERROR(name << ": straggler_policy 7 accepted");
    } catch (const atrain::spec_error& e) {
      const std::string what = e.what();
      const std::string want =
        "algorithm." + name + ".straggler_policy: must be WAIT or SKIP (got 7)";
      BOOST_TEST(what.find(want) != std::string::npos, what);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
