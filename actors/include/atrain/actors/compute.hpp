#pragma once
/// The local computation of one node: its model copy (own oneDNN primitives),
/// its shard's minibatch sampler, and the cost model that says how long a
/// gradient takes on the run's clock.
#include <cstdint>
#include <memory>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/kernels.hpp"

namespace atrain {

class compute_unit {
public:
  /// Node `node`'s unit; the run context gives the plan and the run clock
  /// (fault windows are looked up at the run time of each gradient).
  compute_unit(const run_context& ctx, std::uint32_t node);

  /// g = minibatch gradient at x. Returns how long to wait (run-clock
  /// seconds) before the gradient counts as done: virtual clock, tau_i x
  /// slowdown x straggle x jitter (plus what is left of cost.start_seconds);
  /// real clock, the compute already took real
  /// time, so only the injected slowdown (factor - 1) x measured time
  /// remains. A bad-gradients fault corrupts g
  /// here.
  ///
  /// Quarantine at the source: a gradient with a NaN or Inf is refused —
  /// replaced by zeros (the step is skipped, as mixed-precision trainers do)
  /// and counted — so the node's model and everything it sends stay finite.
  double gradient(caf::local_actor* self, const float* x, std::vector<float>& g);

  [[nodiscard]] std::uint64_t gradients() const noexcept { return gradients_; }
  [[nodiscard]] double last_loss() const noexcept { return last_loss_; }
  [[nodiscard]] std::size_t dim() const noexcept { return dim_; }
  /// How often each injected fault touched this unit (faults.hpp hits).
  [[nodiscard]] const fault_schedule::hits& fault_hits() const noexcept { return fault_hits_; }
  /// Non-finite gradients refused so far, and the run time of the first (< 0: none).
  [[nodiscard]] std::uint64_t refused() const noexcept { return refused_; }
  [[nodiscard]] double refused_since() const noexcept { return refused_since_; }
  /// Run-clock seconds spent computing gradients (the heartbeat the
  /// evaluator uses to spot stragglers: seconds per gradient).
  [[nodiscard]] double busy_seconds() const noexcept { return busy_seconds_; }
  /// REAL clock: CPU seconds of this process since the unit was made, and
  /// of the computing thread inside gradients (the report: where a node's
  /// CPU went); 0 on the virtual clock.
  [[nodiscard]] double process_cpu_seconds() const;
  [[nodiscard]] double gradient_cpu_seconds() const noexcept {
    return gradient_cpu_ + cpu_per_wall_ * untimed_wall_;
  }
  /// REAL clock: the gradients' wall seconds as measured (no real_min, no slowdown).
  [[nodiscard]] double gradient_wall_seconds() const noexcept { return gradient_wall_; }

  /// Checkpoints (checkpoint.cpp): counters, sampler and generators.
  void save(proto::ComputeState& out) const;
  void restore(const proto::ComputeState& in);
  /// Only the sampler and the jitter generator (a restart from a
  /// checkpoint: the new incarnation counts its own work from zero).
  void restore_sampling(const proto::ComputeState& in);

private:
  compute_unit(const run_context& ctx, const run_plan& plan, std::uint32_t node);
  /// A REAL-clock gradient's CPU seconds (when `timed`) and wall seconds.
  void count_cpu(bool timed, double cpu, double wall);

  const run_context* ctx_;
  std::uint32_t node_;
  fault_schedule::hits fault_hits_;
  std::uint64_t refused_ = 0;
  double refused_since_ = -1;
  double busy_seconds_ = 0;
  std::unique_ptr<model> model_;
  minibatch_sampler sampler_;
  rng gen_;
  std::size_t dim_;
  double tau_;
  double slowdown_;
  double jitter_;
  bool virtual_clock_;
  double real_min_;
  double start_;
  double process_cpu_at_start_ = 0;
  double gradient_cpu_ = 0;
  double gradient_wall_ = 0;
  // A thread's CPU clock is a system call (~1 us for the pair, 7 % of a
  // 3.6 us logistic gradient): gradients shorter than cpu_sample_seconds are
  // timed one in cpu_every_; the others count their wall seconds at the CPU
  // share of the last timed one.
  static constexpr double cpu_sample_seconds = 2e-4;
  std::uint32_t cpu_every_ = 1;
  std::uint32_t cpu_countdown_ = 0;
  double cpu_per_wall_ = 1;
  double untimed_wall_ = 0;
  std::uint64_t gradients_ = 0;
  double last_loss_ = 0;
};

/// A snapshot of node `node` with the model x and everything the compute
/// unit counts (gradients, fault hits, refused gradients, busy seconds);
/// traffic and staleness are the algorithm's to add.
[[nodiscard]] model_snapshot compute_snapshot(std::uint32_t node, const compute_unit& cu,
                                              const std::vector<float>& x);

/// Makes oneDNN calls on this thread single-threaded (call before computing
/// inside an actor: actors move between scheduler threads).
void single_threaded_kernels();

/// Running staleness statistics (mean and max) of one node.
struct staleness_stats {
  double sum = 0;
  double max = 0;
  std::uint64_t count = 0;
  void add(double s) {
    sum += s;
    if (s > max)
      max = s;
    ++count;
  }
};

}  // namespace atrain
