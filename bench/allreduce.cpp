/// Ring all-reduce bandwidth (issue: every baseline on the same actors):
/// atrain's ring over CAF actors in one process (ring_endpoint, the code
/// Ring-AllReduce SGD and Local SGD run) against gloo's AllreduceRing
/// (Debian's libgloo-dev, 4 ranks as threads of this process over TCP
/// loopback), same vector, same ranks, measured in the same run.
///
/// Bandwidth = vector bytes / seconds per all-reduce (the "algorithm
/// bandwidth" of NCCL/gloo benchmarks; each rank moves 2(n-1)/n of it).
///
///   bench_allreduce [--quick] [--floats N] [--ranks N] [--rounds N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>

#include "algorithms/ring/ring.hpp"
#include "atrain/engine.hpp"
#include "ring_input.hpp"

#ifdef ATRAIN_HAVE_GLOO
#include <gloo/allreduce_ring.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>
#endif

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  std::size_t floats = 4u << 20;
  std::uint32_t ranks = 4;
  int rounds = 10;
};

using atrain::bench::expected;
using atrain::bench::input;

[[nodiscard]] bool check(const float* sum, std::uint32_t ranks, std::size_t d) {
  for (std::size_t i = 0; i < d; i += 4099)
    if (sum[i] != expected(ranks, i))
      return false;
  return sum[d - 1] == expected(ranks, d - 1);
}

// ---------------------------------------------------------------- atrain

struct ring_bench_state {
  std::optional<atrain::ring_endpoint> ring;
  std::vector<float> v;
  int rounds_left = 0;
  static inline const char* name = "bench_ring_worker";
};

caf::behavior ring_bench_worker(caf::stateful_actor<ring_bench_state>* self, std::uint32_t rank,
                                std::uint32_t n, std::size_t d, int rounds, atrain::context_ptr ctx,
                                caf::actor done_to) {
  self->state.ring.emplace(rank, n, d, false);
  self->state.v = input(rank, d);
  self->state.rounds_left = rounds;
  return {
    [=](atrain::start_atom, const caf::actor& successor) {
      auto& st = self->state;
      st.ring->connect((rank + 1) % n, successor);
      st.ring->begin(self, *ctx, st.v.data());
    },
    [=](atrain::deliver_atom, const atrain::packet& p) {
      auto& st = self->state;
      if (!st.ring->deliver(self, *ctx, p))
        return;
      if (--st.rounds_left > 0) {
        st.ring->begin(self, *ctx, st.v.data());
        return;
      }
      self->send(done_to, atrain::done_atom::value, rank, check(st.ring->sum().data(), n, d));
    },
  };
}

/// Seconds per all-reduce of `opt.floats` over `opt.ranks` ring actors.
double atrain_ring(const options& opt, bool& correct) {
  caf::actor_system_config cfg;
  atrain::register_message_types(cfg);
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-threads", std::max(1u, std::thread::hardware_concurrency()));
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  // The ring endpoint reads the node count from a run plan and records a
  // trace: give it the allreduce config with the bench's rank count.
  auto ctx = std::make_shared<atrain::run_context>();
  ctx->plan = atrain::prepare_run(
    atrain::load_spec(std::string{ATRAIN_SOURCE_DIR} + "/config/algorithms/allreduce.textproto",
                      {"nodes=" + std::to_string(opt.ranks), "progress=false"}));
  double best = 1e300;
  correct = true;
  for (int rep = 0; rep < 2; ++rep) {  // the first repetition warms up allocators and caches
    caf::scoped_actor self{sys};
    std::vector<caf::actor> workers;
    for (std::uint32_t r = 0; r < opt.ranks; ++r)
      workers.push_back(
        sys.spawn(ring_bench_worker, r, opt.ranks, opt.floats, opt.rounds, ctx, caf::actor{self}));
    const auto t0 = clock_type::now();
    for (std::uint32_t r = 0; r < opt.ranks; ++r)
      self->send(workers[r], atrain::start_atom::value, workers[(r + 1) % opt.ranks]);
    for (std::uint32_t k = 0; k < opt.ranks; ++k)
      self->receive([&](atrain::done_atom, std::uint32_t, bool ok) { correct = correct && ok; });
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    best = std::min(best, s / opt.rounds);
    for (auto& w : workers)
      self->send_exit(w, caf::exit_reason::user_shutdown);
  }
  return best;
}

// ---------------------------------------------------------------- gloo

#ifdef ATRAIN_HAVE_GLOO
double gloo_ring(const options& opt, bool& correct) {
  gloo::rendezvous::HashStore store;
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  std::vector<double> seconds(opt.ranks);
  std::vector<char> ok(opt.ranks, 0);
  std::vector<std::thread> threads;
  for (std::uint32_t r = 0; r < opt.ranks; ++r)
    threads.emplace_back([&, r] {
      auto dev = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(static_cast<int>(r),
                                                                 static_cast<int>(opt.ranks));
      context->connectFullMesh(store, dev);
      auto v = input(r, opt.floats);
      double best = 1e300;
      bool good = true;
      for (int rep = 0; rep < 2; ++rep) {
        const auto t0 = clock_type::now();
        for (int k = 0; k < opt.rounds; ++k) {
          std::copy_n(input(r, opt.floats).data(), opt.floats, v.data());
          gloo::AllreduceRing<float> algo(context, {v.data()}, static_cast<int>(opt.floats));
          algo.run();
          good = good && check(v.data(), opt.ranks, opt.floats);
        }
        best = std::min(best,
                        std::chrono::duration<double>(clock_type::now() - t0).count() / opt.rounds);
      }
      seconds[r] = best;
      ok[r] = good;
    });
  for (auto& t : threads)
    t.join();
  correct = std::all_of(ok.begin(), ok.end(), [](char c) { return c != 0; });
  return *std::max_element(seconds.begin(), seconds.end());
}
#endif

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::strtoull(argv[++i], nullptr, 10) : 0ull; };
    if (a == "--quick") {
      opt.floats = 1u << 18;
      opt.rounds = 3;
    } else if (a == "--floats") {
      opt.floats = next();
    } else if (a == "--ranks") {
      opt.ranks = static_cast<std::uint32_t>(next());
    } else if (a == "--rounds") {
      opt.rounds = static_cast<int>(next());
    } else {
      std::fprintf(stderr,
                   "usage: bench_allreduce [--quick] [--floats N] [--ranks N] [--rounds N]\n");
      return 2;
    }
  }
  if (opt.floats < opt.ranks || opt.ranks < 2 || opt.rounds < 1) {
    std::fprintf(stderr, "bench_allreduce: need ranks >= 2, floats >= ranks, rounds >= 1\n");
    return 2;
  }
  const double mb = static_cast<double>(opt.floats) * sizeof(float) / 1e6;
  std::printf("## ring all-reduce: %zu floats (%.1f MB) over %u ranks, best of 2 x %d rounds, "
              "%u hardware threads\n",
              opt.floats, mb, opt.ranks, opt.rounds, std::thread::hardware_concurrency());
  std::printf("%-28s %12s %12s %8s\n", "implementation", "ms/allreduce", "MB/s", "correct");
  bool ok_a = false;
  const double a = atrain_ring(opt, ok_a);
  std::printf("%-28s %12.2f %12.0f %8s\n", "atrain ring (CAF actors)", a * 1e3, mb / a,
              ok_a ? "yes" : "NO");
#ifdef ATRAIN_HAVE_GLOO
  bool ok_g = false;
  const double g = gloo_ring(opt, ok_g);
  std::printf("%-28s %12.2f %12.0f %8s\n", "gloo AllreduceRing (tcp)", g * 1e3, mb / g,
              ok_g ? "yes" : "NO");
  std::printf("atrain / gloo bandwidth: %.2f\n", g / a);
  return ok_a && ok_g ? 0 : 1;
#else
  std::printf("gloo: not built (install libgloo-dev and reconfigure to compare)\n");
  return ok_a ? 0 : 1;
#endif
}
