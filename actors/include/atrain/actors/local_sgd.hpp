#pragma once
/// Local SGD (ALGORITHMS.md §8): H local SGD steps per node, then the models
/// are averaged by a ring all-reduce over node ids 0..n-1.
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

/// Spawns the ring workers (and their links, appended to `links`) as children of `sup`.
[[nodiscard]] std::vector<node_actors> spawn_local_sgd(caf::event_based_actor* sup,
                                                       const context_ptr& ctx,
                                                       std::vector<caf::actor>& links);

} // namespace atrain
