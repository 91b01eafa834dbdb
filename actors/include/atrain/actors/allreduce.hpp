#pragma once
/// Ring-AllReduce SGD (ALGORITHMS.md §4): synchronous data-parallel SGD whose
/// gradients are summed by a ring all-reduce over node ids 0..n-1.
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code). The ring is wired by
/// wire_ring (ring.hpp).
[[nodiscard]] node_actors spawn_allreduce_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                     std::uint32_t i);

} // namespace atrain
