// bench_kernels: single-thread training-step throughput of the kernels/ models,
// next to the same models in PyTorch (bench/torch_peer.py) when torch is
// importable.
//
//   MLP 784-256-10, batch 64, random data: loss_and_gradient + SGD update.
//   LeNet-5 and VGG_SMALL (cnn.hpp) on 1x28x28 images, batch 64, the MLP's
//   random data; with the FLOPs of a step and the fraction of this core's FP32
//   peak (bench/flops.hpp: a loop of independent AVX-512 FMAs). Where oneDNN
//   has native bf16 (cnn_bf16_supported()), the same two in bf16 compute
//   (cnn_config::bf16), counting the same FLOPs, against the FP32 peak and
//   against the bf16 one (a loop of independent vdpbf16ps: 2 bf16
//   multiply-adds per FP32 lane, so nominally 2x FP32's).
//   Logistic regression on a9a (123 features): batch 32 and the full 32561
//   rows, loss_and_gradient + SGD update. Real a9a (data/a9a.gz, or --a9a FILE),
//   else (--a9a none, or a file that cannot be read) synthetic data of the same shape.
//
// Single thread: oneDNN runs on OpenMP, and libgomp reads OMP_NUM_THREADS when
// it is loaded, before main() runs. So main() sets OMP_NUM_THREADS=1 with
// setenv and re-executes itself once (before any oneDNN call) unless it is
// already 1. The torch peer inherits it and calls torch.set_num_threads(1).
//
// Rates are steps per CPU second of the (single-threaded) process, median and
// best of the rounds, plus the median per wall second: on a shared machine the
// wall-clock rate mostly measures how much CPU the scheduler grants.
//
// Options:
//   --seconds S     CPU time of one timing round (default 1)
//   --rounds R      timing rounds (default 5)
//   --no-peer       skip the torch peer
//   --a9a PATH      load only this file ("none": synthetic a9a-shaped data)
//   --python PATH   interpreter for the peer (default $ATRAIN_PYTHON, else the
//                   first of python3, /usr/bin/python3 that can import torch).
// If no interpreter can import torch: "torch not installed: peer skipped".
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "atrain/kernels/cnn.hpp"
#include "atrain/kernels/dataset.hpp"
#include "atrain/kernels/model.hpp"
#include "atrain/kernels/rng.hpp"
#include "atrain/kernels/vector_ops.hpp"

#include "flops.hpp"

#ifndef ATRAIN_SOURCE_DIR
#define ATRAIN_SOURCE_DIR "."
#endif

namespace {

using clk = std::chrono::steady_clock;

struct rate {
  double cpu = 0, cpu_best = 0,
         wall = 0;  // steps per CPU second (median, best), per wall second (median)
};

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Steps per second of `step` (called with the step number): `rounds` rounds
/// of about `seconds` of CPU time each after a warm-up. The rate per CPU
/// second of this (single-threaded) process is the headline: on a shared
/// machine the wall-clock rate mostly measures the scheduler.
template <class Step>
rate measure(Step&& step, double seconds, int rounds) {
  std::size_t n = 0;
  const double warm_end = cpu_seconds() + std::min(0.3, seconds);
  while (cpu_seconds() < warm_end)
    step(n++);
  std::vector<double> cpu, wall;
  for (int r = 0; r < rounds; ++r) {
    std::size_t steps = 0;
    const auto w0 = clk::now();
    const double c0 = cpu_seconds();
    double elapsed = 0;
    do {
      for (int k = 0; k < 4; ++k)
        step(n++), ++steps;
      elapsed = cpu_seconds() - c0;
    } while (elapsed < seconds);
    cpu.push_back(static_cast<double>(steps) / elapsed);
    wall.push_back(static_cast<double>(steps) /
                   std::chrono::duration<double>(clk::now() - w0).count());
  }
  return {median(cpu), *std::max_element(cpu.begin(), cpu.end()), median(wall)};
}

bool file_exists(const std::string& p) {
  return std::ifstream(p).good();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// The number after "key": in a one-line JSON object, or -1.
double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\"");
  if (at == std::string::npos)
    return -1;
  const auto colon = json.find(':', at);
  if (colon == std::string::npos)
    return -1;
  return std::strtod(json.c_str() + colon + 1, nullptr);
}

std::string json_string(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\"");
  if (at == std::string::npos)
    return "";
  const auto q1 = json.find('"', json.find(':', at));
  const auto q2 = json.find('"', q1 + 1);
  return q1 == std::string::npos || q2 == std::string::npos ? "" : json.substr(q1 + 1, q2 - q1 - 1);
}

std::string find_torch_python(const std::string& requested) {
  std::vector<std::string> candidates;
  if (!requested.empty()) {
    candidates.push_back(requested);  // an explicit choice is the only candidate
  } else if (const char* env = std::getenv("ATRAIN_PYTHON")) {
    candidates.emplace_back(env);
  } else {
    candidates = {"python3", "/usr/bin/python3"};
  }
  for (const auto& py : candidates) {
    const std::string cmd = shell_quote(py) + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0)
      return py;
  }
  return "";
}

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr)
    return out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr)
    out += buf;
  if (pclose(p) != 0)
    return "";
  return out;
}

void print_row(const char* what, rate a, rate t) {
  std::printf("%-32s %9.0f %9.0f %9.0f", what, a.cpu, a.cpu_best, a.wall);
  if (t.cpu > 0)
    std::printf(" %9.0f %9.0f %9.0f %7.2fx\n", t.cpu, t.cpu_best, t.wall, a.cpu / t.cpu);
  else
    std::printf(" %9s %9s %9s %8s\n", "-", "-", "-", "-");
}

}  // namespace

int main(int argc, char** argv) {
  // Must happen before libgomp initialises: see the comment at the top.
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (omp == nullptr || std::strcmp(omp, "1") != 0) {
    setenv("OMP_NUM_THREADS", "1", 1);
    if (std::getenv("ATRAIN_BENCH_REEXEC") == nullptr) {
      setenv("ATRAIN_BENCH_REEXEC", "1", 1);
      execv("/proc/self/exe", argv);
      std::perror(
        "bench_kernels: re-exec with OMP_NUM_THREADS=1 failed; oneDNN may use several threads");
    }
  }

  double seconds = 1.0;
  int rounds = 5;
  bool peer = true;
  std::string python, a9a_arg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--no-peer")
      peer = false;
    else if (a == "--python" && i + 1 < argc)
      python = argv[++i];
    else if (a == "--a9a" && i + 1 < argc)
      a9a_arg = argv[++i];
    else {
      std::fprintf(
        stderr,
        "usage: %s [--seconds S] [--rounds R] [--no-peer] [--python PATH] [--a9a PATH|none]\n",
        argv[0]);
      return 2;
    }
  }
  const double lr = 0.01, l2 = 1e-4;

  // ---- data -----------------------------------------------------------------
  const std::size_t a9a_dim = 123;
  atrain::dataset a9a;
  std::string a9a_source = "synthetic";
  std::string a9a_path;
  std::vector<std::string> a9a_candidates{std::string(ATRAIN_SOURCE_DIR) + "/data/a9a.gz"};
  if (!a9a_arg.empty())
    a9a_candidates = {a9a_arg};  // "none": synthetic
  for (const std::string& p : a9a_candidates) {
    if (!file_exists(p))
      continue;
    try {
      a9a = atrain::load_libsvm(p, a9a_dim);
      a9a_source = "a9a";
      a9a_path = p;
      break;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_kernels: cannot load %s (%s)\n", p.c_str(), e.what());
    }
  }
  if (a9a_source == "synthetic") {  // same shape: 32561 x 123, ~11% ones, binary labels
    atrain::rng g(7);
    a9a.dim = a9a_dim;
    a9a.classes = 2;
    a9a.features.resize(32561 * a9a_dim);
    for (auto& v : a9a.features)
      v = g.chance(0.113) ? 1.0f : 0.0f;
    a9a.labels.resize(32561);
    for (auto& y : a9a.labels)
      y = g.chance(0.24) ? 1 : 0;
  }

  const std::size_t mlp_batch = 64, mlp_dim = 784, mlp_classes = 10, pool = 16;
  std::vector<float> mx(pool * mlp_batch * mlp_dim);
  std::vector<std::int32_t> my(pool * mlp_batch);
  {
    atrain::rng g(11);
    for (auto& v : mx)
      v = static_cast<float>(g.uniform());
    for (auto& y : my)
      y = static_cast<std::int32_t>(g.below(mlp_classes));
  }

  std::printf(
    "bench_kernels: single thread (OMP_NUM_THREADS=%s), step = loss_and_gradient + SGD update,\n",
    std::getenv("OMP_NUM_THREADS"));
  std::printf("  %d rounds of %.1f CPU s each; l2 = %g, lr = %g\n", rounds, seconds, l2, lr);
  std::printf("  MLP data: random U[0,1) features, random labels, %zu batches cycled\n", pool);
  if (a9a_source == "a9a")
    std::printf("  logistic regression data: real a9a from %s (%zu x %zu)\n", a9a_path.c_str(),
                a9a.size(), a9a.dim);
  else
    std::printf(
      "  logistic regression data: synthetic, a9a-shaped (%zu x %zu): a9a.gz not found/loadable\n",
      a9a.size(), a9a.dim);

  // ---- atrain -----------------------------------------------------------------
  auto mlp = atrain::make_mlp(mlp_dim, {256}, mlp_classes, l2);
  std::vector<float> mp(mlp->num_params()), mg(mlp->num_params());
  mlp->init_params(mp.data(), 1);
  const rate mlp_rate = measure(
    [&](std::size_t n) {
      const std::size_t b = n % pool;
      const atrain::batch_view v{mx.data() + b * mlp_batch * mlp_dim, my.data() + b * mlp_batch,
                                 mlp_batch, mlp_dim};
      (void)mlp->loss_and_gradient(v, mp.data(), mg.data());
      atrain::vec::axpy(static_cast<float>(-lr), mg.data(), mp.data(), mp.size());
    },
    seconds, rounds);

  // The CNNs read the MLP's 784-value rows as 1x28x28 images.
  const auto cnn_rate = [&](const atrain::cnn_config& cfg) {
    auto net = atrain::make_cnn(cfg);
    std::vector<float> p(net->num_params()), g(net->num_params());
    net->init_params(p.data(), 1);
    return measure(
      [&](std::size_t n) {
        const std::size_t b = n % pool;
        const atrain::batch_view v{mx.data() + b * mlp_batch * mlp_dim, my.data() + b * mlp_batch,
                                   mlp_batch, mlp_dim};
        (void)net->loss_and_gradient(v, p.data(), g.data());
        atrain::vec::axpy(static_cast<float>(-lr), g.data(), p.data(), p.size());
      },
      seconds, rounds);
  };
  auto lenet = atrain::lenet5({1, 28, 28}, mlp_classes),
       vgg = atrain::vgg_small({1, 28, 28}, mlp_classes);
  lenet.l2 = vgg.l2 = l2;
  const rate lenet_rate = cnn_rate(lenet);
  const rate vgg_rate = cnn_rate(vgg);
  const bool bf16 = atrain::cnn_bf16_supported();
  rate lenet_bf16_rate, vgg_bf16_rate;
  auto lenet_bf16 = lenet, vgg_bf16 = vgg;
  lenet_bf16.bf16 = vgg_bf16.bf16 = true;
  if (bf16) {
    lenet_bf16_rate = cnn_rate(lenet_bf16);
    vgg_bf16_rate = cnn_rate(vgg_bf16);
  }

  auto logreg = atrain::make_logistic_regression(a9a_dim, l2);
  std::vector<float> wp(logreg->num_params()), wg(logreg->num_params());
  logreg->init_params(wp.data(), 1);
  const std::size_t lr_batch = 32, nbatches = a9a.size() / lr_batch;
  const rate lr32_rate = measure(
    [&](std::size_t n) {
      const std::size_t b = n % nbatches;
      const atrain::batch_view v{a9a.row(b * lr_batch), a9a.labels.data() + b * lr_batch, lr_batch,
                                 a9a.dim};
      (void)logreg->loss_and_gradient(v, wp.data(), wg.data());
      atrain::vec::axpy(static_cast<float>(-lr), wg.data(), wp.data(), wp.size());
    },
    seconds, rounds);
  logreg->init_params(wp.data(), 1);
  double full_loss = 0;
  const rate lrfull_rate = measure(
    [&](std::size_t) {
      full_loss = logreg->loss_and_gradient(atrain::whole(a9a), wp.data(), wg.data());
      atrain::vec::axpy(static_cast<float>(-lr), wg.data(), wp.data(), wp.size());
    },
    seconds, rounds);

  // ---- torch peer -------------------------------------------------------------
  rate t_mlp, t_lr32, t_lrfull, t_lenet, t_vgg;
  std::string peer_note;
  if (!peer) {
    peer_note = "peer skipped (--no-peer)";
  } else {
    const std::string py = find_torch_python(python);
    if (py.empty()) {
      peer_note = "torch not installed: peer skipped";
    } else {
      const std::string script = std::string(ATRAIN_SOURCE_DIR) + "/bench/torch_peer.py";
      const std::string cmd =
        shell_quote(py) + " " + shell_quote(script) + " --seconds " + std::to_string(seconds) +
        " --rounds " + std::to_string(rounds) +
        (a9a_path.empty() ? std::string() : " --a9a " + shell_quote(a9a_path));
      const std::string out = run_capture(cmd);
      const auto last = out.rfind('{');
      if (last == std::string::npos) {
        peer_note = "torch peer failed: " + cmd;
      } else {
        const std::string json = out.substr(last);
        auto get = [&](const std::string& k) {
          return rate{json_number(json, k + "_steps_per_s"), json_number(json, k + "_best"),
                      json_number(json, k + "_wall_steps_per_s")};
        };
        t_mlp = get("mlp");
        t_lr32 = get("lr32");
        t_lrfull = get("lr_full");
        t_lenet = get("lenet5");
        t_vgg = get("vgg_small");
        peer_note = "torch " + json_string(json, "torch") + " (" + py + ", " +
                    std::to_string(static_cast<int>(json_number(json, "threads"))) +
                    " thread, data " + json_string(json, "data") +
                    "): " + json.substr(0, json.find_last_not_of("\n") + 1);
      }
    }
  }

  std::printf("\nsteps/s            per CPU second: median, best; per wall second: median\n");
  std::printf("%-32s %9s %9s %9s %9s %9s %9s %8s\n", "", "atrain", "best", "wall", "torch", "best",
              "wall", "ratio");
  print_row("mlp 784-256-10, batch 64", mlp_rate, t_mlp);
  print_row(("logreg " + a9a_source + ", batch 32").c_str(), lr32_rate, t_lr32);
  print_row(("logreg " + a9a_source + ", full " + std::to_string(a9a.size()) + " rows").c_str(),
            lrfull_rate, t_lrfull);
  print_row("lenet5 1x28x28, batch 64", lenet_rate, t_lenet);
  print_row("vgg_small 1x28x28, batch 64", vgg_rate, t_vgg);
  if (bf16) {  // torch's column: its f32 rate
    print_row("lenet5 bf16 1x28x28, batch 64", lenet_bf16_rate, t_lenet);
    print_row("vgg_small bf16 1x28x28, batch 64", vgg_bf16_rate, t_vgg);
  }
  std::printf("(ratio = atrain/torch, medians per CPU second; > 1 means atrain is faster)\n");
  const double peak = bench::avx512_fma_peak(seconds);
  const double bf16_peak = bf16 ? bench::avx512_bf16_peak(seconds) : 0.0;
  std::vector<std::tuple<const char*, const atrain::cnn_config*, rate>> rows{
    {"lenet5", &lenet, lenet_rate}, {"vgg_small", &vgg, vgg_rate}};
  if (bf16) {
    rows.emplace_back("lenet5 bf16", &lenet_bf16, lenet_bf16_rate);
    rows.emplace_back("vgg_small bf16", &vgg_bf16, vgg_bf16_rate);
  }
  for (const auto& [name, cfg, r] : rows) {
    const double flops = bench::cnn_step_flops(*cfg, mlp_batch);
    std::printf("%-15s %.1f MFLOP per step: %.1f GFLOP/s (atrain, median)", name, flops / 1e6,
                flops * r.cpu / 1e9);
    if (peak > 0)
      std::printf(", %.2f of the FP32 FMA peak", flops * r.cpu / peak);
    if (bf16_peak > 0 && cfg->bf16)
      std::printf(", %.2f of the bf16 peak", flops * r.cpu / bf16_peak);
    std::printf("\n");
  }
  if (peak > 0)
    std::printf("FP32 FMA peak of this core: %.1f GFLOP/s (16 chains of AVX-512 FMAs, best of 5)\n",
                peak / 1e9);
  if (bf16_peak > 0)
    std::printf("bf16 peak of this core: %.1f GFLOP/s (16 chains of AVX-512 vdpbf16ps, best of 5); "
                "bf16 rows count the same FLOPs as f32 (conversions and f32 layers not added)\n",
                bf16_peak / 1e9);
  std::printf("%s\n", peer_note.c_str());
  std::printf("logreg full-batch loss after the timed steps: %.6f\n", full_loss);
  return 0;
}
