/// Engine benchmarks (issue: R-FAST end to end):
///  1. virtual clock: messages (scheduler jobs) per wall second, wall time
///     per virtual second and memory per node for R-FAST on 8, 64, 512 and
///     4,096 nodes (exponential graph);
///  2. real clock: gradients per second of 8 R-FAST nodes against a bare loop
///     (same model, batch, sampler and SGD update, no actors) in the same run,
///     between a run and one three times as long, in rounds that each measure
///     the bare loop again right before the engine.
///
///   bench_engine [--quick]        (run from the repository root)
///   bench_engine --bare [SECONDS] only the MLP's bare loops (SGD, R-FAST), 4 s each
///   bench_engine --real           only part 2
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include "atrain/engine.hpp"
#include <malloc.h>

#include "algorithms/rfast/rfast.hpp"
#include "atrain/kernels/fused_ops.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

std::shared_ptr<const atrain::run_plan> plan(const std::string& spec,
                                             std::vector<std::string> overrides) {
  overrides.push_back("progress=false");
  return atrain::prepare_run(
    atrain::load_spec(std::string{ATRAIN_SOURCE_DIR} + "/config/" + spec, overrides));
}

/// Resident set size of this process now (/proc/self/statm), bytes.
double rss_bytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

/// Virtual time simulated at n nodes: jobs per virtual second grow as
/// nodes x degree, so larger runs simulate less of it.
double horizon_for(int n, bool quick) {
  if (quick)
    return n <= 512 ? 0.2 : 0.05;
  return n <= 64 ? 2.0 : (n <= 512 ? 0.5 : 0.2);
}

/// "engine kB/node": the RSS the run adds once its actors have run (after
/// its last step, before they are gone) over the RSS with the plan alone
/// (data, graphs), per node.
void virtual_scaling(bool quick) {
  std::printf("\n## virtual clock: R-FAST, exponential graph, a9a logistic regression\n");
  std::printf("%6s %8s %10s %12s %10s %12s %13s %10s %15s\n", "nodes", "edges", "virtual_s", "jobs",
              "wall_s", "jobs/s", "wall/virtual", "rss_MB", "engine_kB/node");
  for (int n : {8, 64, 512, 4096}) {
    const double horizon = horizon_for(n, quick);
    auto p =
      plan("quickstart.textproto", {"nodes=" + std::to_string(n), "stop.stop_at_target=false",
                                    "stop.time_seconds=" + std::to_string(horizon),
                                    "eval.period_seconds=" + std::to_string(horizon)});
    const auto edges = p->topo->g_r.num_edges() + p->topo->g_c.num_edges();
    malloc_trim(0);  // the previous run's freed heap would hide this one's growth
    const double before = rss_bytes();
    atrain::virtual_run run{p};
    const auto t0 = clock_type::now();
    while (run.step()) {
    }
    const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
    const double rss = rss_bytes();
    std::printf("%6d %8zu %10.2f %12llu %10.3f %12.0f %13.3f %10.1f %15.1f\n", n, edges, horizon,
                static_cast<unsigned long long>(run.jobs()), wall,
                static_cast<double>(run.jobs()) / wall, wall / horizon, rss / 1e6,
                (rss - before) / 1e3 / n);
    std::fflush(stdout);
  }
}

/// Gradients per second of a bare loop: sample, gradient, SGD step.
double bare_sgd(const atrain::run_plan& p, double seconds) {
  auto m = p.prototype->clone();
  atrain::minibatch_sampler s{*p.train, p.shard.at(0), p.spec.model().batch_size(), 1};
  std::vector<float> x = p.x0, g(p.dim());
  std::uint64_t n = 0;
  const auto t0 = clock_type::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int k = 0; k < 16; ++k, ++n) {
      (void)m->loss_and_gradient(s.next(), x.data(), g.data());
      atrain::vec::axpy(-0.01f, g.data(), x.data(), x.size());
    }
    elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  }
  return static_cast<double>(n) / elapsed;
}

/// Gradients per second of the same R-FAST arithmetic with no actors: nodes
/// wake round-robin in one thread, packets are handed over directly.
double bare_rfast(const atrain::run_plan& p, double seconds) {
  const auto& topo = *p.topo;
  const auto n = static_cast<std::uint32_t>(p.nodes());
  const std::size_t d = p.dim();
  const double gamma = p.spec.algorithm().rfast().step_size();
  struct node {
    std::unique_ptr<atrain::model> m;
    std::unique_ptr<atrain::minibatch_sampler> s;
    std::unique_ptr<atrain::rfast_tracker> t;
    std::vector<float> x, g, dir;
    std::vector<atrain::float_blob> v_hat;  // by in_R position
    atrain::blob_pool<float> v_pool;        // as the worker's
  };
  std::vector<node> nodes(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    auto& nd = nodes[i];
    nd.m = p.prototype->clone();
    nd.s = std::make_unique<atrain::minibatch_sampler>(*p.train, p.shard[i],
                                                       p.spec.model().batch_size(), i + 1);
    std::vector<atrain::rfast_tracker::in_neighbour> in;
    for (auto j : topo.g_c.in(i))
      in.push_back({j, topo.c(i, j), 0, {}, 0, {}, 0});
    nd.t = std::make_unique<atrain::rfast_tracker>(i, d, topo.c(i, i), std::move(in), true, 0.05);
    nd.x = p.x0;
    nd.g.resize(d);
    nd.dir.resize(d);
    (void)nd.m->loss_and_gradient(nd.s->next(), nd.x.data(), nd.g.data());
    nd.t->init(nd.g.data());
    nd.v_hat.assign(topo.g_r.in(i).size(), atrain::float_blob{p.x0});
  }
  std::uint64_t grads = 0, seq = 0;
  std::vector<const float*> parts;  // the pull's, kept as the worker's
  std::vector<double> w;
  const auto t0 = clock_type::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    ++seq;
    for (std::uint32_t i = 0; i < n; ++i, ++grads) {
      auto& nd = nodes[i];
      (void)nd.m->loss_and_gradient(nd.s->next(), nd.x.data(), nd.g.data());
      // The gradient buffer's wake (rfast_buffer.cpp): steps 4, 5, the
      // direction and step 3 in one pass.
      auto rho = nd.t->wake(nd.g.data(), nd.dir.data());
      for (auto j : topo.g_c.out(i))
        nodes[j].t->receive(i, seq, rho, nd.t->sigma_sent());
      // The worker's (rfast.cpp): descent and pull in one pass, then the send.
      const auto& in = topo.g_r.in(i);
      parts.clear();
      w.assign(1, topo.r(i, i));
      for (std::size_t k = 0; k < in.size(); ++k) {
        parts.push_back(nd.v_hat[k].ptr());
        w.push_back(topo.r(i, in[k]));
      }
      auto v = nd.v_pool.take(d);
      (void)atrain::vec::descend_weighted_sum(nd.x.data(), nd.dir.data(), static_cast<float>(gamma),
                                              v->data(), parts, w, d);
      const auto vb = nd.v_pool.publish(std::move(v));
      for (auto j : topo.g_r.out(i)) {
        const auto& in_j = topo.g_r.in(j);
        const auto k = std::find(in_j.begin(), in_j.end(), i) - in_j.begin();
        nodes[j].v_hat[static_cast<std::size_t>(k)] = vb;
      }
    }
    elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
  }
  return static_cast<double>(grads) / elapsed;
}

/// The two bare loops on the MLP: R-FAST's per-wake work against the gradient.
void bare_only(double seconds) {
  auto p = plan("mnist_mlp.textproto", {"model.mlp.hidden=[256]", "clock=REAL"});
  const double sgd = bare_sgd(*p, seconds);
  const double bare = bare_rfast(*p, seconds);
  std::printf("MLP 784-256-10: bare SGD loop %.0f grad/s, bare R-FAST loop %.0f grad/s, "
              "R-FAST extra %.1f us per wake = %.2f x the gradient's %.1f us\n",
              sgd, bare, 1e6 / bare - 1e6 / sgd, (1e6 / bare - 1e6 / sgd) * sgd / 1e6, 1e6 / sgd);
}

/// Gradients and seconds of one real-clock run `seconds` long, evaluated at the end only.
std::pair<double, double> real_run(const std::string& spec, std::vector<std::string> overrides,
                                   double seconds, std::size_t threads) {
  overrides.insert(overrides.end(), {"clock=REAL", "stop.stop_at_target=false",
                                     "stop.time_seconds=" + std::to_string(seconds),
                                     "eval.period_seconds=" + std::to_string(seconds)});
  atrain::run_options opts;
  opts.threads = threads;
  auto report = atrain::run_experiment(plan(spec, overrides), opts);
  if (!report)
    return {0, 0};
  return {static_cast<double>(report->gradients_total()), report->duration_seconds()};
}

/// Rate between a run `seconds` long and one three times as long: a run's
/// duration also holds its start and the evaluation of every node's model at
/// the stop (on the same threads: ~1.6 s for the MLP's 8 nodes), which cancel.
double engine_rate(const std::string& spec, const std::vector<std::string>& overrides,
                   double seconds, std::size_t threads, double* whole) {
  const auto [g1, t1] = real_run(spec, overrides, seconds, threads);
  const auto [g3, t3] = real_run(spec, overrides, 3 * seconds, threads);
  if (t1 <= 0 || t3 <= t1)
    return 0;
  *whole = g3 / t3;
  return (g3 - g1) / (t3 - t1);
}

void real_overhead(const std::string& spec, const std::vector<std::string>& overrides,
                   double seconds, const char* label, int rounds) {
  auto real = overrides;
  real.push_back("clock=REAL");
  auto p = plan(spec, real);
  const double sgd = bare_sgd(*p, seconds);
  std::printf("%-34s bare SGD loop %10.0f grad/s\n", label, sgd);
  // The bare loop is memory-bound and a shared machine's bandwidth drifts
  // between minutes: each round measures it again right before the engine,
  // and the ratio is taken within the round.
  for (int round = 1; round <= rounds; ++round) {
    const double bare = bare_rfast(*p, seconds);
    // R-FAST's own arithmetic per wake (tracker, descent, pull) against the
    // gradient's time, from the two bare loops (same data).
    const double gradient_us = 1e6 / sgd, rfast_extra_us = 1e6 / bare - 1e6 / sgd;
    std::printf("%-34s round %d: bare R-FAST loop (no actors) %10.0f grad/s, its arithmetic per "
                "wake %.1f us = %.2f x the gradient\n",
                label, round, bare, rfast_extra_us, rfast_extra_us / gradient_us);
    for (std::size_t threads : {1, 2}) {
      double whole = 0;
      const double marginal = engine_rate(spec, overrides, seconds, threads, &whole);
      if (marginal <= 0) {
        std::printf("%s: run failed\n", label);
        return;
      }
      const auto per_thread = bare * static_cast<double>(threads);
      std::printf("%-34s round %d: threads=%zu engine %10.0f grad/s (whole %.0f s run %10.0f) = "
                  "%.3f x bare R-FAST per thread\n",
                  label, round, threads, marginal, 3 * seconds, whole, marginal / per_thread);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // OpenMP reads OMP_NUM_THREADS when it loads: re-exec once with it set so
  // the bare loop is single-threaded like the engine's actors.
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    setenv("OMP_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);
  }
  // Parameter blobs are large and short-lived: keep them on the heap instead of
  // a fresh mmap (and its page faults) per message.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (argc > 1 && std::strcmp(argv[1], "--bare") == 0) {
    bare_only(argc > 2 ? std::atof(argv[2]) : 4.0);
    return 0;
  }
  if (!(argc > 1 && std::strcmp(argv[1], "--real") == 0))
    virtual_scaling(quick);
  std::printf("\n## real clock: 8 R-FAST nodes vs a bare loop\n");
  const double secs = quick ? 1.0 : 4.0;
  const int rounds = quick ? 1 : 3;
  real_overhead("quickstart_real.textproto", {}, secs, "logreg a9a, batch 32", rounds);
  real_overhead("mnist_mlp.textproto", {"model.mlp.hidden=[256]", "link.latency_seconds=0"}, secs,
                "MLP 784-256-10 MNIST, batch 64", rounds);
  return 0;
}
