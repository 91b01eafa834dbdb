#pragma once
/// Local SGD (ALGORITHMS.md §8): H local SGD steps per node, then the models
/// are averaged by a ring all-reduce over node ids 0..n-1.
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/ring/ring_actor.hpp"
#include "atrain/actors/context.hpp"

namespace atrain {

/// Its worker: a ring worker (ring_actor.hpp: node_actor, the wiring, the
/// wake, the chunks, a restart's freeze and a replacement's join), as
/// Ring-AllReduce SGD's.
using local_sgd_worker_actor = ring_worker_actor;

/// One average of one node as it happened (test hook, recorded with a probe).
struct local_sgd_average {
  std::uint64_t round = 0;         // averages before this one
  std::vector<float> contributed;  // the model it put in
  std::uint32_t local_steps = 0;   // local steps since the previous average
  std::vector<float> average;      // the ring's sum / n
};

/// Test hook (virtual clock with a run_probe only, between two scheduler
/// steps): moves out the averages the Local SGD worker at `worker` finished
/// since the last call. Empty for any other actor or once it is gone.
[[nodiscard]] std::vector<local_sgd_average> local_sgd_take_averages(const caf::actor_addr& worker);

/// Its spec block, parsed once (local_sgd_spec.cpp; run_plan::config<local_sgd_config>()).
struct local_sgd_config : algorithm_config {
  static constexpr const char* name = "local_sgd";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  std::uint32_t local_steps = 1;  // H, SGD steps between two averages
  straggler_policy stragglers = straggler_policy::wait;
};

/// Its spec block's checks (local_sgd_spec.cpp; algorithm_descriptor::check_block).
void local_sgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
/// Its block as a local_sgd_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
local_sgd_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
