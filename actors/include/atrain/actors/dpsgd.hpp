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

/// Spawns the D-PSGD network (one worker per node, links) as children of `sup`.
[[nodiscard]] std::vector<node_actors> spawn_dpsgd(caf::event_based_actor* sup,
                                                   const context_ptr& ctx,
                                                   std::vector<caf::actor>& links);

} // namespace atrain
