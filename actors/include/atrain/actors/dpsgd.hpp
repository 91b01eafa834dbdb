#pragma once
/// D-PSGD, synchronous gossip (ALGORITHMS.md §5): the mixing matrix and the
/// spawn function for a whole D-PSGD network.
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/topology/weights.hpp"

namespace atrain {

/// Packet stream of D-PSGD: a node's round-k model (seq = k).
enum dpsgd_stream : std::uint32_t { dpsgd_model = 11 };

/// The matrix every D-PSGD node mixes with: Metropolis-Hastings over g_r,
/// W_ij = 1/(1 + max(deg_i, deg_j)) on edges, W_ii = 1 - sum_j W_ij;
/// symmetric and doubly stochastic. Throws topology_error when g_r is not
/// symmetric (prepare_run refuses such a spec first).
[[nodiscard]] weight_matrix dpsgd_weights(const topology& topo);

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
[[nodiscard]] node_actors spawn_dpsgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                     std::uint32_t i);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it.
void wire_dpsgd(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, std::vector<caf::actor>& links);

} // namespace atrain
