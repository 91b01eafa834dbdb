#pragma once
/// DASGD, decentralized asynchronous SGD (ALGORITHMS.md §2): the spawn
/// function for a whole DASGD network and a test hook on what each node
/// created and applied.
#include <cstdint>
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

/// The one packet stream of DASGD: seq = the sender's local number (1, 2,
/// ...) of the newest gradient inside, scalars = {gradient count c}; the
/// packet holds the sender's gradients seq-c+1 .. seq, already weighted by
/// the sender's step sizes (f = sum gamma_k g_k).
enum dasgd_stream : std::uint32_t { dasgd_gradients = 31 };

/// What a DASGD node did, recorded only when the run has a run_probe.
struct dasgd_ledger {
  /// A gradient this node computed.
  struct created {
    std::uint64_t index = 0;      // local number, 1, 2, ...
    std::int64_t read_ns = 0;     // when x_i was read (the gradient started)
    std::int64_t done_ns = 0;     // when it completed (its creation time)
    double gamma = 0;             // the step size it was applied with
    std::size_t applied_before = 0;  // this node's applied entries at the read
    std::vector<float> g;         // the raw gradient
  };
  /// One gradient applied to x_i (own or remote), in application order.
  struct applied {
    std::uint32_t origin = 0;
    std::uint64_t index = 0;
  };
  std::vector<created> made;
  std::vector<applied> used;
  std::uint64_t packets_applied = 0;  // remote packets applied (a packet may hold several)
};

/// Test hook (virtual clock with a run_probe only, between two scheduler
/// steps): moves out what the DASGD worker at `worker` recorded since the
/// last call. Empty for any other actor or once it is gone.
[[nodiscard]] dasgd_ledger dasgd_take_ledger(const caf::actor_addr& worker);

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
/// The workers of one process share a creation record for the staleness
/// measurement; a run spanning processes measures none.
[[nodiscard]] node_actors spawn_dasgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                     std::uint32_t i);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it.
void wire_dasgd(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, std::vector<caf::actor>& links);

} // namespace atrain
