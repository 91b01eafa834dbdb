/// atrain's Ring-AllReduce over N processes on loopback (issue 7) against
/// gloo's ring over N processes (bench_gloo_procs), measured in the same
/// invocation, trials interleaved so that both see the same load.
///
/// One binary, two roles.
///  - A rank (--rank r) is what an `atrain node` process is for the ring: a
///    CAF actor system with the middleman (configure_networking,
///    configure_real_clock, as apps/src/node.cpp sets them up) hosting one
///    ring member, an actor around atrain::ring_endpoint — the code
///    Ring-AllReduce SGD's workers run — in a run_context that spans
///    processes, so its chunks to the successor leave through the outbox's
///    flow control (requests, `outbox::window` unanswered per route) as in
///    a multi-host run. The rank publishes its member on 127.0.0.1, learns
///    every rank's port from the driver (its stdin) and connects to its
///    successor with remote_actor: the ring 0 -> 1 -> ... -> N-1 -> 0.
///  - The driver (default) runs `trials` trials. A trial starts N ranks,
///    lets rank 0 run `warmup` + `reps` all-reduces, then runs
///    bench_gloo_procs with --rounds 1 --reps `reps` on the same vector.
///
/// One all-reduce: rank 0's controller sends every member "go"; each member
/// starts a round with its input (ring_input.hpp, the same 4 ranks x 16.8 MB
/// as bench_gloo_procs) and, when the round ends, reports its begin-to-end
/// seconds; then it compares its whole sum with the exact sum (closed form,
/// exact in float) and reports the largest relative error. The controller
/// sends the next "go" after every member reported both, so the check is
/// never timed. A repetition's time is the slowest member's begin-to-end,
/// which is what bench_gloo_procs reports for gloo (the slowest rank's
/// run(), one round per repetition after a barrier); "wall" adds the go and
/// done messages (rank 0's clock from the first go to the last done).
///
///   bench_ring_procs [--ranks N] [--floats N] [--reps R] [--warmup W]
///                    [--trials T] [--threads K] [--gloo PATH|none]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "algorithms/ring/ring.hpp"
#include "atrain/actors/deploy.hpp"
#include "atrain/engine.hpp"
#include "procs.hpp"
#include "ring_input.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using go_atom = caf::atom_constant<caf::atom("go")>;
using checked_atom = caf::atom_constant<caf::atom("checked")>;

#ifdef ATRAIN_GLOO_PROCS
const char* const default_gloo = ATRAIN_GLOO_PROCS;
#else
const char* const default_gloo = "none";
#endif

struct options {
  std::uint32_t ranks = 4;
  std::size_t floats = std::size_t{4} << 20;
  int reps = 10;
  int warmup = 1;
  int trials = 3;
  std::size_t threads = 0;  // scheduler threads per rank, 0 = one per core
  std::string gloo = default_gloo;
};

// ---------------------------------------------------------------- a rank

/// The largest |sum - exact| / exact over the vector; NaN when any value is
/// NaN (the comparison is written so that NaN is not skipped).
[[nodiscard]] double max_relative_error(const std::vector<float>& sum, std::uint32_t ranks) {
  double worst = 0;
  for (std::size_t i = 0; i < sum.size(); ++i) {
    const double exact = atrain::bench::expected(ranks, i);
    const double err = std::abs(static_cast<double>(sum[i]) - exact) / std::abs(exact);
    if (!(err <= worst))
      worst = err;
  }
  return worst;
}

struct member_state {
  std::optional<atrain::ring_endpoint> ring;
  std::vector<float> input;
  caf::actor controller;
  clock_type::time_point began;
  double began_cpu = 0;
  static inline const char* name = "bench_ring_member";
};

/// One ring member: (start_atom, successor) wires it, each go_atom starts a
/// round, a finished round is reported to the sender of the go.
caf::behavior ring_member(caf::stateful_actor<member_state>* self, std::uint32_t rank,
                          std::uint32_t n, std::size_t d, atrain::context_ptr ctx) {
  self->state.ring.emplace(rank, n, d, false);
  self->state.input = atrain::bench::input(rank, d);
  return {
    [=](atrain::start_atom, const caf::actor& successor) {
      self->state.ring->connect((rank + 1) % n, successor);
      return true;
    },
    [=](go_atom) {
      auto& st = self->state;
      st.controller = caf::actor_cast<caf::actor>(self->current_sender());
      st.began = clock_type::now();
      st.began_cpu = atrain::bench::process_cpu_seconds();
      st.ring->begin(self, *ctx, st.input.data());
    },
    [=](atrain::deliver_atom, const atrain::packet& p) {
      auto& st = self->state;
      if (!st.ring->deliver(self, *ctx, p))
        return;
      const double seconds = std::chrono::duration<double>(clock_type::now() - st.began).count();
      const double cpu = atrain::bench::process_cpu_seconds() - st.began_cpu;
      self->send(st.controller, atrain::done_atom::value, rank, seconds, cpu);
      self->send(st.controller, checked_atom::value, rank, max_relative_error(st.ring->sum(), n),
                 st.ring->rejected());
    },
  };
}

/// The run context of a member: the allreduce spec's plan with N nodes (the
/// endpoint reads the node count and the algorithm from it), spanning
/// processes.
[[nodiscard]] atrain::context_ptr member_context(std::uint32_t ranks) {
  auto ctx = std::make_shared<atrain::run_context>();
  ctx->plan = atrain::prepare_run(
    atrain::load_spec(std::string{ATRAIN_SOURCE_DIR} + "/config/algorithms/allreduce.textproto",
                      {"nodes=" + std::to_string(ranks), "progress=false"}));
  ctx->spans_processes = true;
  return ctx;
}

/// The member published on 127.0.0.1:`port`. A few attempts: on the loaded
/// 2-core VM remote_actor now and then failed with connection_timeout
/// (presumably the BASP handshake missing configure_networking's 4 s
/// connection timeout); in the runs so far the second attempt connected.
[[nodiscard]] caf::expected<caf::actor> connect_member(caf::actor_system& sys, unsigned port,
                                                       const char* who) {
  constexpr int attempts = 5;
  for (int k = 1;; ++k) {
    auto m = sys.middleman().remote_actor("127.0.0.1", static_cast<std::uint16_t>(port));
    if (m || k == attempts)
      return m;
    std::fprintf(stderr, "%s: remote_actor (port %u), attempt %d of %d: %s\n", who, port, k,
                 attempts, sys.render(m.error()).c_str());
  }
}

/// One all-reduce as rank 0's controller sees it.
struct rep_result {
  double slowest = 0;  // seconds, the slowest member's begin-to-end
  double wall = 0;     // seconds, first go to last done
  double cpu = 0;      // CPU seconds of the members' processes (all threads), summed
  double error = 0;    // largest relative error of any member's sum
  std::uint64_t rejected = 0;
  bool complete = false;
};

[[nodiscard]] rep_result all_reduce_once(caf::scoped_actor& self,
                                         const std::vector<caf::actor>& members) {
  rep_result r;
  const auto timeout = caf::after(std::chrono::seconds(60));
  bool timed_out = false;
  const auto t0 = clock_type::now();
  for (const auto& m : members)
    self->send(m, go_atom::value);
  for (std::size_t k = 0; k < members.size() && !timed_out; ++k)
    self->receive(
      [&](atrain::done_atom, std::uint32_t, double s, double cpu) {
        r.slowest = std::max(r.slowest, s);
        r.cpu += cpu;
      },
      timeout >> [&] { timed_out = true; });
  r.wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  for (std::size_t k = 0; k < members.size() && !timed_out; ++k)
    self->receive(
      [&](checked_atom, std::uint32_t, double err, std::uint64_t rejected) {
        if (!(err <= r.error))
          r.error = err;
        r.rejected += rejected;
      },
      timeout >> [&] { timed_out = true; });
  r.complete = !timed_out;
  return r;
}

/// Rank 0: after the driver's "go" (every member is wired then, so these
/// connections never race the ring's own), connects to every member, runs
/// the all-reduces and prints one "rep SLOWEST WALL CPU ERROR REJECTED COMPLETE"
/// line each (warm-up excluded), then "end".
[[nodiscard]] bool control(caf::actor_system& sys, const options& opt, const caf::actor& local,
                           const std::vector<unsigned>& ports) {
  char word[16] = {};
  if (std::scanf(" %15s", word) != 1 || std::strcmp(word, "go") != 0)
    return false;
  std::vector<caf::actor> members{local};
  for (std::uint32_t r = 1; r < opt.ranks; ++r) {
    auto m = connect_member(sys, ports[r], "rank 0");
    if (!m) {
      std::fprintf(stderr, "rank 0: remote_actor (rank %u): %s\n", r,
                   sys.render(m.error()).c_str());
      std::printf("end\n");
      std::fflush(stdout);
      return false;
    }
    members.push_back(*m);
  }
  caf::scoped_actor self{sys};
  bool ok = true;
  for (int k = 0; k < opt.warmup + opt.reps && ok; ++k) {
    const auto r = all_reduce_once(self, members);
    ok = r.complete;
    if (k >= opt.warmup || !ok)
      std::printf("rep %.9f %.9f %.9f %.9g %llu %d\n", r.slowest, r.wall, r.cpu, r.error,
                  static_cast<unsigned long long>(r.rejected), r.complete ? 1 : 0);
  }
  std::printf("end\n");
  std::fflush(stdout);
  return ok;
}

int run_rank(const options& opt, std::uint32_t rank) {
  caf::actor_system_config cfg;
  atrain::register_message_types(cfg);
  atrain::configure_real_clock(cfg, opt.threads);
  atrain::configure_networking(cfg, {});
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  auto member = sys.spawn(ring_member, rank, opt.ranks, opt.floats, member_context(opt.ranks));
  auto fail = [&](const char* what, const caf::error& err) {
    std::fprintf(stderr, "rank %u: %s: %s\n", rank, what, sys.render(err).c_str());
    caf::anon_send_exit(member, caf::exit_reason::user_shutdown);
    return 1;
  };
  auto port = sys.middleman().publish(member, 0, "127.0.0.1", true);
  if (!port)
    return fail("publish", port.error());
  std::printf("port %u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  // "ports P0 P1 ...": every rank's port, from the driver.
  std::vector<unsigned> ports(opt.ranks);
  char word[16] = {};
  bool got = std::scanf(" %15s", word) == 1 && std::strcmp(word, "ports") == 0;
  for (auto& p : ports)
    got = got && std::scanf("%u", &p) == 1;
  if (!got)
    return fail("reading the ports from the driver", caf::make_error(caf::sec::invalid_argument));
  const auto who = "rank " + std::to_string(rank);
  auto successor = connect_member(sys, ports[(rank + 1) % opt.ranks], who.c_str());
  if (!successor)
    return fail("remote_actor (successor)", successor.error());
  {
    caf::scoped_actor self{sys};
    caf::error err;
    self->request(member, std::chrono::seconds(30), atrain::start_atom::value, *successor)
      .receive([](bool) {}, [&](caf::error& e) { err = std::move(e); });
    if (err)
      return fail("wiring the member", err);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  const bool ok = rank != 0 || control(sys, opt, member, ports);
  // Serve until the driver closes our stdin.
  while (std::fgetc(stdin) != EOF) {
  }
  caf::anon_send_exit(member, caf::exit_reason::user_shutdown);
  return ok ? 0 : 1;
}

// ---------------------------------------------------------------- the driver

/// One trial of atrain's ring: per repetition (warm-up excluded) seconds of
/// the slowest member and wall seconds; the largest relative error.
struct atrain_trial {
  std::vector<double> slowest;
  std::vector<double> wall;
  std::vector<double> cpu;
  double error = 0;
  std::uint64_t rejected = 0;
  bool ok = false;
};

[[nodiscard]] bool expect_word(std::FILE* f, const char* want) {
  char word[16] = {};
  return std::fscanf(f, " %15s", word) == 1 && std::strcmp(word, want) == 0;
}

atrain_trial run_atrain(const options& opt) {
  atrain_trial t;
  std::vector<atrain::bench::child_process> ranks(opt.ranks);
  bool ok = true;
  for (std::uint32_t r = 0; r < opt.ranks && ok; ++r)
    ok = atrain::bench::start_child(
      atrain::bench::self_path(),
      {"--rank", std::to_string(r), "--ranks", std::to_string(opt.ranks), "--floats",
       std::to_string(opt.floats), "--reps", std::to_string(opt.reps), "--warmup",
       std::to_string(opt.warmup), "--threads", std::to_string(opt.threads)},
      ranks[r]);
  std::string ports = "ports";
  for (std::uint32_t r = 0; r < opt.ranks && ok; ++r) {
    unsigned p = 0;
    ok =
      expect_word(ranks[r].from_child, "port") && std::fscanf(ranks[r].from_child, "%u", &p) == 1;
    ports += " " + std::to_string(p);
  }
  ports += "\n";
  for (std::uint32_t r = 0; r < opt.ranks && ok; ++r)
    ok =
      ::write(ranks[r].to_child, ports.data(), ports.size()) == static_cast<ssize_t>(ports.size());
  for (std::uint32_t r = 0; r < opt.ranks && ok; ++r)
    ok = expect_word(ranks[r].from_child, "ready");
  ok = ok && ::write(ranks[0].to_child, "go\n", 3) == 3;
  bool complete = ok;
  while (ok) {
    char word[16] = {};
    if (std::fscanf(ranks[0].from_child, " %15s", word) != 1 || std::strcmp(word, "end") == 0)
      break;
    double slowest = 0;
    double wall = 0;
    double cpu = 0;
    double err = 0;
    unsigned long long rejected = 0;
    int done = 0;
    if (std::strcmp(word, "rep") != 0 ||
        std::fscanf(ranks[0].from_child, "%lf %lf %lf %lf %llu %d", &slowest, &wall, &cpu, &err,
                    &rejected, &done) != 6) {
      complete = false;
      break;
    }
    t.slowest.push_back(slowest);
    t.wall.push_back(wall);
    t.cpu.push_back(cpu);
    if (!(err <= t.error))
      t.error = err;
    t.rejected += rejected;
    complete = complete && done == 1;
  }
  bool exits = true;
  for (auto& c : ranks)
    exits = atrain::bench::finish_child(c) && exits;
  t.ok = ok && complete && exits && t.error == 0 && t.rejected == 0 &&
         t.slowest.size() == static_cast<std::size_t>(opt.reps);
  return t;
}

/// Figures of one trial: ms per all-reduce (median, best, worst) and the
/// median CPU ms of all ranks per all-reduce.
struct row {
  double median = 0;
  double best = 0;
  double worst = 0;
  double cpu = 0;
};

struct gloo_trial {
  row ring;
  row chunked;
  bool ok = false;
};

/// Runs bench_gloo_procs on the same vector and reads its table.
gloo_trial run_gloo(const options& opt) {
  gloo_trial t;
  atrain::bench::child_process child;
  if (!atrain::bench::start_child(opt.gloo,
                                  {"--ranks", std::to_string(opt.ranks), "--floats",
                                   std::to_string(opt.floats), "--rounds", "1", "--reps",
                                   std::to_string(opt.reps)},
                                  child))
    return t;
  ::close(std::exchange(child.to_child, -1));
  bool ring = false;
  bool chunked = false;
  bool exact = false;
  char line[512];
  while (std::fgets(line, sizeof line, child.from_child) != nullptr) {
    char name[64] = {};
    row r;
    // name, ms median/best/worst, algbw median/best, busbw, CPU ms
    if (std::sscanf(line, "%63s %lf %lf %lf %*f %*f %*f %lf", name, &r.median, &r.best, &r.worst,
                    &r.cpu) == 5) {
      if (std::strcmp(name, "AllreduceRing") == 0) {
        t.ring = r;
        ring = true;
      } else if (std::strcmp(name, "AllreduceRingChunked") == 0) {
        t.chunked = r;
        chunked = true;
      }
    }
    exact = exact || std::strstr(line, "exact sum on every rank and round: yes") != nullptr;
  }
  t.ok = atrain::bench::finish_child(child) && ring && chunked && exact;
  return t;
}

[[nodiscard]] double load_average() {
  std::ifstream in{"/proc/loadavg"};
  double l = -1;
  in >> l;
  return l;
}

/// Milliseconds (median, best, worst) of a sample of seconds.
[[nodiscard]] row ms_of(const std::vector<double>& seconds) {
  std::vector<double> rates;
  for (double s : seconds)
    rates.push_back(1 / s);
  const auto sum = atrain::bench::summarize(rates);
  return {1e3 / sum.median, 1e3 / sum.best, 1e3 / sum.worst, 0};
}

/// "median (best-worst)" of a row.
[[nodiscard]] std::string cell(const row& r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f (%.1f-%.1f)", r.median, r.best, r.worst);
  return buf;
}

int drive(const options& opt) {
  const bool with_gloo = opt.gloo != "none";
  const double mb = static_cast<double>(opt.floats) * sizeof(float) / 1e6;
  std::printf("## ring all-reduce over %u processes (127.0.0.1): %zu floats (%.1f MB), "
              "%d trials x %d repetitions (+%d warm-up), %u hardware threads\n",
              opt.ranks, opt.floats, mb, opt.trials, opt.reps, opt.warmup,
              std::thread::hardware_concurrency());
  std::printf("atrain: ring_endpoint actors over CAF's middleman (window %zu); gloo: %s\n",
              atrain::outbox::window, with_gloo ? opt.gloo.c_str() : "not run");
  std::printf("ms per all-reduce, median (best-worst) of the repetitions; CPU = median CPU ms of "
              "all ranks' processes per all-reduce; ratio = atrain median / gloo median\n");
  std::printf("%-5s %5s | %-22s %6s %6s | %-22s %6s | %-22s %6s | %6s %8s\n", "trial", "load",
              "atrain (slowest member)", "wall", "CPU", "gloo AllreduceRing", "CPU",
              "gloo AllreduceRingChunked", "CPU", "/ring", "/chunked");
  bool ok = true;
  double worst_error = 0;
  std::vector<double> ratio_ring;
  std::vector<double> ratio_chunked;
  int gloo_reruns = 0;
  for (int trial = 1; trial <= opt.trials; ++trial) {
    const double load = load_average();
    const auto a = run_atrain(opt);
    ok = ok && a.ok;
    if (!(a.error <= worst_error))
      worst_error = a.error;
    if (a.slowest.empty()) {
      std::printf("%-5d %5.1f | atrain ring FAILED (no repetition finished)\n", trial, load);
      break;
    }
    auto am = ms_of(a.slowest);
    am.cpu = ms_of(a.cpu).median;
    const auto aw = ms_of(a.wall);
    std::printf("%-5d %5.1f | %-22s %6.1f %6.1f", trial, load, cell(am).c_str(), aw.median, am.cpu);
    if (!with_gloo) {
      std::printf("\n");
      continue;
    }
    auto g = run_gloo(opt);
    if (!g.ok) {
      // Under heavy load a gloo rank now and then dies with "Connection
      // closed by peer" (an IoException in gloo's loop thread): run it again,
      // visibly.
      std::printf("(gloo failed; run again) ");
      ++gloo_reruns;
      g = run_gloo(opt);
    }
    ok = ok && g.ok;
    const double rr = g.ok ? am.median / g.ring.median : 0;
    const double rc = g.ok ? am.median / g.chunked.median : 0;
    if (g.ok) {
      ratio_ring.push_back(rr);
      ratio_chunked.push_back(rc);
    }
    std::printf(" | %-22s %6.1f | %-22s %6.1f | %6.2f %8.2f%s\n", cell(g.ring).c_str(), g.ring.cpu,
                cell(g.chunked).c_str(), g.chunked.cpu, rr, rc, g.ok ? "" : "  gloo FAILED");
    std::fflush(stdout);
  }
  if (!ratio_ring.empty()) {
    std::sort(ratio_ring.begin(), ratio_ring.end());
    std::sort(ratio_chunked.begin(), ratio_chunked.end());
    std::printf("atrain / gloo AllreduceRing: %.2f-%.2f; atrain / gloo AllreduceRingChunked: "
                "%.2f-%.2f (range over trials)\n",
                ratio_ring.front(), ratio_ring.back(), ratio_chunked.front(), ratio_chunked.back());
  }
  if (gloo_reruns > 0)
    std::printf("gloo runs that failed and were run again: %d\n", gloo_reruns);
  std::printf("atrain sums against the exact sum: max relative error %.3g over every member and "
              "repetition: %s\n",
              worst_error, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  long rank = -1;
  const bool parsed =
    atrain::bench::parse_pairs(argc, argv, [&](const std::string& a, const std::string& v) {
      char* end = nullptr;
      const auto n = std::strtoull(v.c_str(), &end, 10);
      if (a == "--gloo")
        opt.gloo = v;
      else if (v.empty() || *end != '\0')
        return false;
      else if (a == "--ranks")
        opt.ranks = static_cast<std::uint32_t>(n);
      else if (a == "--floats")
        opt.floats = n;
      else if (a == "--reps")
        opt.reps = static_cast<int>(n);
      else if (a == "--warmup")
        opt.warmup = static_cast<int>(n);
      else if (a == "--trials")
        opt.trials = static_cast<int>(n);
      else if (a == "--threads")
        opt.threads = n;
      else if (a == "--rank")
        rank = static_cast<long>(n);
      else
        return false;
      return true;
    });
  if (!parsed || opt.ranks < 2 || opt.ranks > 64 || opt.floats < opt.ranks ||
      opt.floats > atrain::max_blob_elements || opt.reps < 1 || opt.reps > 100000 ||
      opt.warmup > 1000 || opt.trials < 1 || opt.trials > 1000 || opt.threads > 256 ||
      rank >= static_cast<long>(opt.ranks)) {
    std::fprintf(stderr, "usage: bench_ring_procs [--ranks N (2..64)] [--floats N >= ranks] "
                         "[--reps R >= 1] [--warmup W] [--trials T >= 1] [--threads K (0 = one "
                         "per core)] [--gloo PATH|none]\n");
    return 2;
  }
  return rank < 0 ? drive(opt) : run_rank(opt, static_cast<std::uint32_t>(rank));
}
