#pragma once
/// Ring-AllReduce SGD (ALGORITHMS.md §4): synchronous data-parallel SGD whose
/// gradients are summed by a ring all-reduce over node ids 0..n-1.
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/ring/ring_actor.hpp"
#include "atrain/actors/context.hpp"

namespace atrain {

/// Its worker: a ring worker (ring_actor.hpp: node_actor, the wiring, the
/// wake, the chunks, a restart's freeze and a replacement's join), as Local SGD's.
using allreduce_worker_actor = ring_worker_actor;

/// One step of one node as it happened (test hook, recorded with a probe):
/// what it put into the ring and what came out.
struct allreduce_step {
  std::uint64_t step = 0;
  std::vector<float> contributed;  // its gradient(s) summed, or zeros
  double count = 0;                // gradients in `contributed`
  std::vector<float> sum;          // the ring's sum of the step
  double total = 0;                // the ring's contribution count
  std::vector<float> x;            // the model after the descent
};

/// Test hook (virtual clock with a run_probe only, between two scheduler
/// steps): moves out the steps the all-reduce worker at `worker` finished
/// since the last call. Empty for any other actor or once it is gone.
[[nodiscard]] std::vector<allreduce_step> allreduce_take_steps(const caf::actor_addr& worker);

/// Its spec block, parsed once (allreduce_spec.cpp; run_plan::config<allreduce_config>()).
struct allreduce_config : algorithm_config {
  static constexpr const char* name = "allreduce";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  straggler_policy stragglers = straggler_policy::wait;
};

/// Its spec block's checks (allreduce_spec.cpp; algorithm_descriptor::check_block).
void allreduce_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
/// Its block as a allreduce_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
allreduce_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
