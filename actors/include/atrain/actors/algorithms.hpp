#pragma once
/// One entry per algorithm: a run's node actors are made in two steps, each
/// in the algorithm's own file. spawn_node makes node i's actors wherever
/// the node lives (the supervisor's process, or its host in a multi-host
/// run); wire_nodes then links them all from the supervisor and starts them.
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

/// Whether this engine has actors for the algorithm (the spec may name more).
[[nodiscard]] bool algorithm_implemented(proto::AlgorithmSpec::KindCase kind);

/// Spawns node `i`'s actors (worker; gradient buffer and hub where the
/// algorithm has them) as children of `parent`. Throws topology_error when
/// the plan cannot run the algorithm, std::invalid_argument when it names no
/// implemented algorithm.
[[nodiscard]] node_actors spawn_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                     std::uint32_t i);

/// Wires the spawned `nodes` (index = node) from `sup`: link actors
/// (appended to `links`), routes, hubs, then starts every node. `server`
/// receives the hub whose model is evaluated when the algorithm has one
/// (evaluation_policy::evaluated_hub) and stays invalid otherwise.
void wire_nodes(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, link_list& links, caf::actor& server);

/// Restart (supervision, issue 5): a replacement for node `k`'s crashed
/// worker, a child of `sup`, that keeps every message until
/// join_replacement hands it its state; `incarnation` counts the node's
/// restarts (1 for the first). Invalid when the algorithm restarts no
/// workers this way (an algorithm with its own `recovery` restarts them
/// itself; spec validation refuses the others).
[[nodiscard]] caf::actor spawn_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                           std::uint32_t k, std::uint64_t incarnation);

/// Once every link that ended at the dead worker points at the replacement:
/// gives it its durable state and a donor's model the algorithm's way, then
/// calls `started`.
void join_replacement(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                      restart_started started);

/// Both steps in this process, every node a child of `sup`.
[[nodiscard]] caf::expected<std::vector<node_actors>> spawn_algorithm(caf::event_based_actor* sup,
                                                                      const context_ptr& ctx,
                                                                      link_list& links,
                                                                      caf::actor& server);

}  // namespace atrain
