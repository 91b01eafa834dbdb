#pragma once
/// Ring-AllReduce SGD (ALGORITHMS.md §4): synchronous data-parallel SGD whose
/// gradients are summed by a ring all-reduce over node ids 0..n-1.
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

/// Spawns the ring workers (and their links, appended to `links`) as children of `sup`.
[[nodiscard]] std::vector<node_actors> spawn_allreduce(caf::event_based_actor* sup,
                                                       const context_ptr& ctx,
                                                       std::vector<caf::actor>& links);

} // namespace atrain
