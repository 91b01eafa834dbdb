#include "atrain/actors/compute.hpp"

#include <algorithm>
#include <cmath>

#include <omp.h>
#include <time.h>

#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

namespace {

/// CPU seconds on `clock` (a measurement for calibration, not a wait).
[[nodiscard]] double cpu_seconds(clockid_t clock) {
  timespec t{};
  if (clock_gettime(clock, &t) != 0)
    return 0;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

compute_unit::compute_unit(const run_context& ctx, std::uint32_t node)
  : compute_unit(ctx, *ctx.plan, node) {}

compute_unit::compute_unit(const run_context& ctx, const run_plan& plan, std::uint32_t node)
  : ctx_(&ctx), node_(node), model_(plan.prototype->clone()),
    sampler_(*plan.train, plan.sampler_rows(node), plan.batch_size,
             derive_seed(plan.seed, 0x53414d50ULL + node)),
    gen_(derive_seed(plan.seed, 0x4a495454ULL + node)), dim_(plan.dim()), tau_(plan.tau.at(node)),
    slowdown_(plan.slowdown.at(node)), jitter_(plan.cost.jitter),
    virtual_clock_(plan.virtual_clock()), real_min_(plan.cost.real_min_seconds),
    start_(plan.cost.start_seconds) {
  if (!virtual_clock_)
    process_cpu_at_start_ = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

double compute_unit::process_cpu_seconds() const {
  return virtual_clock_ ? 0.0 : cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - process_cpu_at_start_;
}

model_snapshot compute_snapshot(std::uint32_t node, const compute_unit& cu,
                                const std::vector<float>& x) {
  model_snapshot s;
  s.node = node;
  s.gradients = cu.gradients();
  s.params = float_blob{x};
  s.fault_hits = cu.fault_hits();
  s.refused = cu.refused();
  s.refused_since = cu.refused_since();
  s.busy_seconds = cu.busy_seconds();
  s.process_cpu_seconds = cu.process_cpu_seconds();
  s.gradient_cpu_seconds = cu.gradient_cpu_seconds();
  s.gradient_wall_seconds = cu.gradient_wall_seconds();
  return s;
}

void single_threaded_kernels() {
  // oneDNN runs on OpenMP here. OMP_NUM_THREADS is read when libgomp loads, so
  // setting it from main() is too late; the thread-local ICV is not. Nodes
  // run side by side on the scheduler's threads: an OpenMP team per node
  // would oversubscribe the cores (and spin-wait) instead.
  if (omp_get_max_threads() != 1)
    omp_set_num_threads(1);
}

void compute_unit::count_cpu(bool timed, double cpu, double wall) {
  if (!timed) {
    untimed_wall_ += wall;
    return;
  }
  gradient_cpu_ += cpu + cpu_per_wall_ * untimed_wall_;
  untimed_wall_ = 0;
  cpu_per_wall_ = wall > 0 ? cpu / wall : 1.0;
  const double every = std::ceil(cpu_sample_seconds / std::max(wall, 1e-9));
  cpu_every_ = static_cast<std::uint32_t>(std::clamp(every, 1.0, 1024.0));
  cpu_countdown_ = cpu_every_ - 1;
}

double compute_unit::gradient(caf::local_actor* self, const float* x, std::vector<float>& g) {
  single_threaded_kernels();
  g.resize(dim_);
  const auto before = self->clock().now();
  const bool time_cpu = !virtual_clock_ && cpu_countdown_-- == 0;
  const double cpu_before = time_cpu ? cpu_seconds(CLOCK_THREAD_CPUTIME_ID) : 0.0;
  const double t = ctx_->seconds(self);
  const auto& faults = ctx_->plan->faults;
  last_loss_ = model_->loss_and_gradient(sampler_.next(), x, g.data());
  ++gradients_;
  faults.corrupt(node_, t, g.data(), dim_, &fault_hits_);
  if (!vec::all_finite(g.data(), dim_)) {
    std::fill(g.begin(), g.end(), 0.0f);
    if (refused_++ == 0)
      refused_since_ = t;
  }
  const auto slow = faults.compute_slowdown(node_, t, &fault_hits_);
  // Draw the jitter on both clocks so the generator stream is the same.
  const double factor = jitter_ > 0 ? gen_.uniform(1.0 - jitter_, 1.0 + jitter_) : 1.0;
  if (virtual_clock_) {
    // Grouped as before the bases existed, so the trace hashes stay.
    const double scale = slowdown_ * (slow.measured * slow.nominal);
    const double wait = tau_ * scale * factor + slow.add_seconds;
    busy_seconds_ += wait;
    // cost.start_seconds: a gradient begun during the start-up counts from its end.
    return t < start_ ? wait + (start_ - t) : wait;
  }
  const double cpu_after = time_cpu ? cpu_seconds(CLOCK_THREAD_CPUTIME_ID) : 0.0;
  const double measured = std::chrono::duration<double>(self->clock().now() - before).count();
  count_cpu(time_cpu, cpu_after - cpu_before, measured);
  gradient_wall_ += measured;
  // cost.real_min_seconds, scaled by the MEASURED straggles; a NOMINAL_TAU
  // straggle is a floor of its own that does not depend on this machine.
  double took = (slowdown_ * slow.measured) * std::max(measured, real_min_);
  if (slow.nominal_active)
    took = std::max(took, tau_ * slow.nominal * factor);
  took += slow.add_seconds;
  busy_seconds_ += took;
  return took - measured;
}

}  // namespace atrain
