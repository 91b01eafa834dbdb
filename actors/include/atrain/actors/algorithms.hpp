#pragma once
/// One entry per algorithm: the supervisor spawns a run's node actors through
/// spawn_algorithm, which picks the algorithm's own file by the spec's oneof.
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

/// Whether this engine has actors for the algorithm (the spec may name more).
[[nodiscard]] bool algorithm_implemented(proto::AlgorithmSpec::KindCase kind);

/// Spawns the node actors (and their links, appended to `links`) of the
/// algorithm the plan's spec names, as children of `sup`. `server` receives
/// the parameter server (the root aggregator whose model is evaluated) when
/// the algorithm has one (async_ps) and stays invalid otherwise.
[[nodiscard]] caf::expected<std::vector<node_actors>>
spawn_algorithm(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<caf::actor>& links, caf::actor& server);

} // namespace atrain
