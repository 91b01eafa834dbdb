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
/// While a route is busy (its packet due back, route_timer) gradients fold
/// without limit but this sanity bound (also a checkpoint's); once every
/// unanswered route is late (a silent peer, answered only at the reply
/// timeout) at most late_folded fold into a step, so the node goes on at a
/// bounded fraction of its compute rate. A late_folded cap on busy routes
/// too fired in healthy runs, stepping on no news and, at larger steps,
/// blowing the models apart (docs/PERFORMANCE.md).
inline constexpr std::uint32_t max_folded = 1u << 16;
inline constexpr std::uint32_t late_folded = 32;

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
