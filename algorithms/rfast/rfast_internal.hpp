#pragma once
/// R-FAST's private header: what rfast.cpp (the worker, spawning, wiring)
/// and rfast_buffer.cpp (the gradient buffer) share.
#include <cstdint>

#include "algorithms/rfast/rfast.hpp"
#include "atrain/actors/network.hpp"

namespace atrain::rfast_detail {

/// Folding (across processes only; ALGORITHMS.md §1 "Folding"): while a
/// route of the worker or the buffer has this many packets unanswered, a
/// wake's gradient is added to the next step's instead of taking a step.
inline constexpr std::size_t fold_in_flight = 1;
/// At most this many gradients fold into one step, so a silent peer (whose
/// answers only come at the reply timeout) slows a node by a bounded factor.
inline constexpr std::uint32_t max_folded = 32;

/// A new epoch's routes. Packets still queued for a remote receiver belong to
/// the old epoch: dropped here. The queues' slots stay (answers to packets in
/// flight still arrive and free them).
void set_routes(outbox& out, const rfast_epoch& e);

/// Spawns node `id`'s gradient buffer as a child of `parent`; `fresh`: a
/// whole node restarted (respawn_rfast_node), never from a checkpoint.
[[nodiscard]] rfast_buffer_actor spawn_rfast_buffer(caf::event_based_actor* parent,
                                                    const context_ptr& ctx, std::uint32_t id,
                                                    bool fresh);

}  // namespace atrain::rfast_detail
