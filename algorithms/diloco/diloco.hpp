#pragma once
/// DiLoCo (ALGORITHMS.md §10): H inner SGD steps per node from the outer
/// model, the pseudo-gradient (outer - x) averaged over the nodes by the ring
/// all-reduce, and an outer Nesterov momentum step; with fragments, one
/// fragment per ring round (streaming DiLoCo), optionally overlapped with the
/// inner steps.
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/ring/ring_actor.hpp"
#include "atrain/actors/context.hpp"
#include "atrain/kernels/adamw.hpp"

namespace atrain {

/// Its worker: a ring worker (ring_actor.hpp), as Local SGD's.
using diloco_worker_actor = ring_worker_actor;

/// One outer step of one node as it happened (test hook, recorded with a probe).
struct diloco_sync {
  std::uint64_t round = 0;  // ring rounds finished before this one
  std::size_t begin = 0;    // the fragment [begin, end) it averaged
  std::size_t end = 0;
  std::vector<float> delta;     // this node's pseudo-gradient over the fragment
  std::vector<float> average;   // the ring's sum / n over the fragment
  std::vector<float> outer;     // the outer model after the step (whole vector)
  std::vector<float> momentum;  // the momentum after the step (whole vector)
};

/// Test hook (virtual clock with a run_probe only, between two scheduler
/// steps): moves out the outer steps the DiLoCo worker at `worker` took
/// since the last call. Empty for any other actor or once it is gone.
[[nodiscard]] std::vector<diloco_sync> diloco_take_syncs(const caf::actor_addr& worker);

/// Its spec block, parsed once (diloco_spec.cpp; run_plan::config<diloco_config>()).
struct diloco_config : algorithm_config {
  static constexpr const char* name = "diloco";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  std::uint32_t inner_steps = 1;  // H
  double outer_step = 0.7;        // eta
  double momentum = 0.9;          // mu (Nesterov)
  std::uint32_t fragments = 1;    // F; a fragment is averaged every H/F inner steps
  bool overlap = false;           // inner steps go on while a fragment travels
  double mixing = 0.5;            // overlap: x_f = mixing x_f + (1 - mixing) outer_f
  bool adamw = false;             // inner AdamW (lr = gamma_k) instead of SGD
  adamw_params adam;              // its betas, epsilon and weight decay (lr set per step)
};

void diloco_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
[[nodiscard]] std::shared_ptr<const algorithm_config>
diloco_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
