#pragma once
/// Centralized minibatch SGD on one node over the whole training set: the
/// single-machine reference every decentralized run is compared against.
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

[[nodiscard]] std::vector<node_actors> spawn_centralized(caf::event_based_actor* sup,
                                                         const context_ptr& ctx);

} // namespace atrain
