/// gloo's ring all-reduce over N separate processes on loopback (issue 7):
/// the cross-process peer of atrain's Ring-AllReduce deployed on N hosts.
///
/// The launcher (default) starts N copies of this binary as ranks; they meet
/// through a gloo::rendezvous::FileStore in a fresh temporary directory, open
/// gloo's TCP device on 127.0.0.1 and all-reduce `floats` floats `rounds`
/// times per repetition with gloo::AllreduceRing (each rank passes the whole
/// vector around the ring: (n-1) x bytes sent per rank) and with
/// gloo::AllreduceRingChunked (reduce-scatter then all-gather, 2(n-1)/n x
/// bytes per rank: the schedule of atrain's ring_endpoint). Every result is
/// compared with the exact sum (small integers, exact in float).
///
/// A repetition's time per all-reduce is the slowest rank's; the launcher
/// reports median, best and worst over repetitions and the median CPU time
/// of all ranks per all-reduce (bench_ring_procs reads these lines: keep the
/// columns), as
///   algbw = bytes / time              (bench_allreduce's "MB/s")
///   busbw = 2(n-1)/n x bytes / time   (what each rank's links carry in a
///                                      reduce-scatter + all-gather ring)
///
///   bench_gloo_procs [--ranks N] [--floats N] [--rounds R] [--reps P]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "procs.hpp"
#include "ring_input.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  std::uint32_t ranks = 4;
  std::size_t floats = std::size_t{4} << 20;
  int rounds = 10;
  int reps = 3;
};

/// The exact sum over n ranks, every coordinate.
std::vector<float> exact_sum(std::uint32_t n, std::size_t d) {
  std::vector<float> v(d);
  for (std::size_t i = 0; i < d; ++i)
    v[i] = atrain::bench::expected(n, i);
  return v;
}

const char* const algorithm_names[] = {"AllreduceRing", "AllreduceRingChunked"};

/// One rank: writes "ALGORITHM REP SECONDS_PER_ALLREDUCE CORRECT CPU_SECONDS"
/// lines to `out` (CPU: this process, all threads, during run(), per all-reduce).
int run_rank(const options& opt, std::uint32_t rank, const std::string& dir,
             const std::string& out) {
  gloo::rendezvous::FileStore store{dir};
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(static_cast<int>(rank),
                                                             static_cast<int>(opt.ranks));
  context->connectFullMesh(store, dev);

  const auto pristine = atrain::bench::input(rank, opt.floats);
  const auto expected = exact_sum(opt.ranks, opt.floats);
  std::vector<float> v(opt.floats);
  const int count = static_cast<int>(opt.floats);
  std::vector<std::unique_ptr<gloo::Algorithm>> algos;
  algos.push_back(
    std::make_unique<gloo::AllreduceRing<float>>(context, std::vector<float*>{v.data()}, count));
  algos.push_back(std::make_unique<gloo::AllreduceRingChunked<float>>(
    context, std::vector<float*>{v.data()}, count));
  gloo::BarrierAllToAll barrier{context};

  std::FILE* f = std::fopen(out.c_str(), "w");
  if (f == nullptr)
    return 1;
  bool all_ok = true;
  // Repetition 0 warms up (buffers, page faults) and is not reported.
  for (int rep = 0; rep <= opt.reps; ++rep)
    for (std::size_t a = 0; a < algos.size(); ++a) {
      barrier.run();
      double seconds = 0;
      double cpu = 0;
      bool ok = true;
      // Only run() is timed: the copy-in and the check (about one memcpy
      // each) happen on every rank between all-reduces.
      for (int k = 0; k < opt.rounds; ++k) {
        std::copy(pristine.begin(), pristine.end(), v.begin());
        const auto t0 = clock_type::now();
        const double c0 = atrain::bench::process_cpu_seconds();
        algos[a]->run();
        seconds += std::chrono::duration<double>(clock_type::now() - t0).count();
        cpu += atrain::bench::process_cpu_seconds() - c0;
        ok = ok && v == expected;
      }
      all_ok = all_ok && ok;
      if (rep > 0)
        std::fprintf(f, "%s %d %.9f %d %.9f\n", algorithm_names[a], rep, seconds / opt.rounds,
                     ok ? 1 : 0, cpu / opt.rounds);
    }
  std::fclose(f);
  return all_ok ? 0 : 1;
}

int launch(const options& opt) {
  char tmpl[] = "/tmp/bench_gloo_procs_XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    std::perror("bench_gloo_procs: mkdtemp");
    return 1;
  }
  const std::filesystem::path dir{tmpl};
  std::filesystem::create_directory(dir / "store");
  auto out_file = [&](std::uint32_t r) { return (dir / ("rank" + std::to_string(r))).string(); };
  std::vector<pid_t> pids;
  for (std::uint32_t r = 0; r < opt.ranks; ++r)
    pids.push_back(atrain::bench::spawn_self(
      {"--rank", std::to_string(r), "--ranks", std::to_string(opt.ranks), "--floats",
       std::to_string(opt.floats), "--rounds", std::to_string(opt.rounds), "--reps",
       std::to_string(opt.reps), "--dir", (dir / "store").string(), "--out", out_file(r)}));
  bool ok = true;
  for (auto pid : pids)
    ok = (pid > 0 && atrain::bench::wait_ok(pid)) && ok;

  // seconds[algorithm][rep] = the slowest rank's seconds per all-reduce;
  // cpu[algorithm][rep] = the CPU seconds of all ranks per all-reduce.
  std::map<std::string, std::map<int, double>> seconds;
  std::map<std::string, std::map<int, double>> cpu;
  for (std::uint32_t r = 0; r < opt.ranks; ++r) {
    std::ifstream in{out_file(r)};
    std::string algo;
    int rep = 0;
    double s = 0;
    int good = 0;
    double c = 0;
    int lines = 0;
    while (in >> algo >> rep >> s >> good >> c) {
      auto& slot = seconds[algo][rep];
      slot = std::max(slot, s);
      cpu[algo][rep] += c;
      ok = ok && good == 1;
      ++lines;
    }
    ok = ok && lines == 2 * opt.reps;
  }
  std::filesystem::remove_all(dir);

  const double mb = static_cast<double>(opt.floats) * sizeof(float) / 1e6;
  const double bus = 2.0 * (opt.ranks - 1) / opt.ranks;
  std::printf("## gloo all-reduce over %u processes (TCP, 127.0.0.1): %zu floats (%.1f MB), "
              "%d repetitions x %d rounds, %u hardware threads\n",
              opt.ranks, opt.floats, mb, opt.reps, opt.rounds, std::thread::hardware_concurrency());
  std::printf("%-22s %32s %21s %12s %12s\n", "", "ms per all-reduce", "algbw MB/s", "busbw MB/s",
              "CPU ms");
  std::printf("%-22s %10s %10s %10s %10s %10s %12s %12s\n", "algorithm", "median", "best", "worst",
              "median", "best", "median", "median");
  for (const auto* name : algorithm_names) {
    std::vector<double> rates;
    for (const auto& [rep, s] : seconds[name])
      rates.push_back(1.0 / s);  // all-reduces per second
    std::vector<double> cpu_rates;
    for (const auto& [rep, c] : cpu[name])
      cpu_rates.push_back(1.0 / c);
    const auto sum = atrain::bench::summarize(rates);
    const auto cpu_sum = atrain::bench::summarize(cpu_rates);
    if (sum.best <= 0)
      continue;
    std::printf("%-22s %10.2f %10.2f %10.2f %10.0f %10.0f %12.0f %12.1f\n", name, 1e3 / sum.median,
                1e3 / sum.best, 1e3 / sum.worst, mb * sum.median, mb * sum.best,
                bus * mb * sum.median, 1e3 / cpu_sum.median);
  }
  std::printf("results equal the exact sum on every rank and round: %s\n", ok ? "yes" : "NO");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  long rank = -1;
  std::string dir;
  std::string out;
  const bool parsed =
    atrain::bench::parse_pairs(argc, argv, [&](const std::string& a, const std::string& v) {
      const auto n = std::strtoull(v.c_str(), nullptr, 10);
      if (a == "--ranks")
        opt.ranks = static_cast<std::uint32_t>(n);
      else if (a == "--floats")
        opt.floats = n;
      else if (a == "--rounds")
        opt.rounds = static_cast<int>(n);
      else if (a == "--reps")
        opt.reps = static_cast<int>(n);
      else if (a == "--rank")
        rank = static_cast<long>(n);
      else if (a == "--dir")
        dir = v;
      else if (a == "--out")
        out = v;
      else
        return false;
      return true;
    });
  if (!parsed || opt.ranks < 2 || opt.ranks > 64 || opt.floats < opt.ranks ||
      opt.floats > (1u << 30) || opt.rounds < 1 || opt.reps < 1) {
    std::fprintf(stderr, "usage: bench_gloo_procs [--ranks N (2..64)] [--floats N >= ranks] "
                         "[--rounds R >= 1] [--reps P >= 1]\n");
    return 2;
  }
  if (rank < 0)
    return launch(opt);
  if (rank >= static_cast<long>(opt.ranks) || dir.empty() || out.empty()) {
    std::fprintf(stderr, "bench_gloo_procs: a rank needs --rank < --ranks, --dir and --out\n");
    return 2;
  }
  return run_rank(opt, static_cast<std::uint32_t>(rank), dir, out);
}
