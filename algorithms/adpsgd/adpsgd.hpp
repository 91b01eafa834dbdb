#pragma once
/// AD-PSGD, asynchronous pairwise gossip (ALGORITHMS.md §6): the spawn
/// function for a whole AD-PSGD network and a test hook on its exchanges.
#include <cstdint>
#include <memory>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/node_actor.hpp"

namespace atrain {

/// Packet streams of AD-PSGD: an active node's exchange request carrying its
/// x_i, and the passive node's reply carrying the x_j it averaged with
/// (seq = the active node's exchange number).
enum adpsgd_stream : std::uint32_t { adpsgd_request = 21, adpsgd_reply = 22 };

/// A worker (also its node's buffer for the evaluator): node_actor's
/// messages and
using adpsgd_worker_actor = node_actor::extend<
  // the supervisor's wiring (gossip::wire_nodes): routes to the neighbours, the start;
  caf::reacts_to<init_atom, std::vector<caf::actor>>, caf::reacts_to<start_atom>,
  // its own gradient's timer (its step count);
  caf::reacts_to<wake_atom, std::uint64_t>,
  // exchange requests and replies (the neighbours' links, or they themselves);
  caf::reacts_to<deliver_atom, packet>,
  // the evaluator, asking the node's buffer: (messages, bytes, rejected);
  caf::replies_to<stats_atom>::with<std::uint64_t, std::uint64_t, std::uint64_t>,
  // the supervisor restarting neighbour k, fence f: (x, exchange count, steps);
  caf::replies_to<restart_atom, std::uint32_t, std::uint64_t>::with<float_blob, std::uint64_t,
                                                                    std::uint64_t>,
  // and a replacement's join: (start, x, steps, served marks, fence, routes).
  caf::reacts_to<start_atom, float_blob, std::uint64_t, std::vector<std::uint64_t>, std::uint64_t,
                 std::vector<caf::actor>>>;

/// One side of one completed exchange: what it did to this node's model at
/// the instant it was applied. Both sides of exchange (active, seq) must add
/// up to zero: the pair average is preserved.
struct adpsgd_exchange {
  std::uint32_t active = 0;
  std::uint32_t passive = 0;
  std::uint64_t seq = 0;
  std::vector<double> delta;  // x after - x before
};

/// Test hook (virtual clock with a run_probe only, between two scheduler
/// steps): moves out the exchanges the AD-PSGD worker at `worker` applied
/// since the last call. Empty for any other actor or once it is gone.
[[nodiscard]] std::vector<adpsgd_exchange> adpsgd_take_exchanges(const caf::actor_addr& worker);

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
/// The plan's g_r must be symmetric and bipartite (prepare_run checks).
[[nodiscard]] node_actors spawn_adpsgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                            std::uint32_t i);

/// Restart (supervision): a replacement for node `k`'s crashed worker, a
/// child of `sup`, keeping every message until join_adpsgd_worker starts it.
[[nodiscard]] caf::actor spawn_adpsgd_replacement(caf::event_based_actor* sup,
                                                  const context_ptr& ctx, std::uint32_t k,
                                                  std::uint64_t incarnation);

/// Fences node r.node's neighbours against the dead incarnation (an active
/// neighbour gives up an exchange outstanding with it; a passive one serves
/// only the replacement's exchanges) and starts the replacement with the
/// first neighbour's model: every exchange completed among live nodes still
/// preserves the pair sum.
void join_adpsgd_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                        const worker_restart& r, restart_started started);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it.
void wire_adpsgd(caf::event_based_actor* sup, const context_ptr& ctx,
                 std::vector<node_actors>& nodes, link_list& links);

/// Its spec block, parsed once (adpsgd_spec.cpp; run_plan::config<adpsgd_config>()).
struct adpsgd_config : algorithm_config {
  static constexpr const char* name = "adpsgd";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  // step_size, decay: all of its block
};

/// Its spec block's checks (adpsgd_spec.cpp; algorithm_descriptor::check_block).
void adpsgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
/// Its block as a adpsgd_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
adpsgd_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
