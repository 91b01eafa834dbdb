#pragma once
/// Local SGD (ALGORITHMS.md §8): H local SGD steps per node, then the models
/// are averaged by a ring all-reduce over node ids 0..n-1.
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code). The ring is wired by
/// wire_ring (ring.hpp).
[[nodiscard]] node_actors spawn_local_sgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                     std::uint32_t i);

} // namespace atrain
