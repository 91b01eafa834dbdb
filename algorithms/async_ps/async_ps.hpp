#pragma once
/// Asynchronous parameter server (ALGORITHMS.md §9): the packet streams, a
/// test hook on the server, and the spawn function for a whole run (n
/// workers and the server).
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/node_actor.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// Packet streams of the parameter server. A worker's gradient carries
/// seq = its request number (1, 2, 3, ...) and scalars = {version of the
/// model it was computed on}; the server's reply carries the same seq and
/// scalars = {server version after applying it}.
enum async_ps_stream : std::uint32_t { async_ps_gradient = 91, async_ps_model = 92 };

/// The parameter server (its node's hub): its routes to every worker (index
/// = node), gradients, a restarted worker k's fence (k, dead worker, its
/// replacement) -> (model, version, seq to go on from), its state and its
/// model (the evaluated one). It is no worker: the barrier asks it only for
/// its state.
using async_ps_server_actor =
  caf::typed_actor<caf::reacts_to<init_atom, std::vector<caf::actor>>,
                   caf::reacts_to<deliver_atom, packet>,
                   caf::replies_to<restart_atom, std::uint32_t, caf::actor_addr,
                                   caf::actor>::with<float_blob, std::uint64_t, std::uint64_t>,
                   caf::replies_to<ckpt_state_atom>::with<std::string>,
                   caf::replies_to<model_atom>::with<model_snapshot>>;

/// A worker: node_actor's messages, its route to the server, its start,
/// its gradient's wake, the server's replies, and a replacement's join
/// (start_atom, model, version, seq, route to the server).
using async_ps_worker_actor = node_actor::extend<
  caf::reacts_to<init_atom, caf::actor>, caf::reacts_to<start_atom>, caf::reacts_to<wake_atom>,
  caf::reacts_to<deliver_atom, packet>,
  caf::reacts_to<start_atom, float_blob, std::uint64_t, std::uint64_t, caf::actor>>;

/// One gradient as the server applied it.
struct async_ps_applied {
  std::uint32_t worker = 0;
  std::uint64_t seq = 0;           // the worker's request number
  std::uint64_t read_version = 0;  // version of the model the gradient was computed on
  std::uint64_t version = 0;       // server updates before this one (k of gamma_k)
  float_blob g;
};

/// What the test hook sees of the server.
struct async_ps_view {
  std::vector<async_ps_applied> applied;  // applied since the last call, in order
  std::vector<double> x;                  // the server's model now (float64 master copy)
  std::uint64_t version = 0;              // updates applied so far
  std::uint64_t duplicates = 0;           // gradient packets ignored as already applied
};

/// Test hook (virtual clock with a run_probe only, between two scheduler
/// steps): moves out the ledger of gradients the server at `server` applied
/// since the last call, with a copy of its model. nullopt for any other actor
/// or once it is gone.
[[nodiscard]] std::optional<async_ps_view> async_ps_take(const caf::actor_addr& server);

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
/// The server lives on node spec.algorithm.async_ps.server (its hub),
/// spawned before that node's worker.
[[nodiscard]] node_actors spawn_async_ps_node(caf::event_based_actor* parent,
                                              const context_ptr& ctx, std::uint32_t i);

/// Restart (supervision): a replacement for node `k`'s crashed worker, a
/// child of `sup`, keeping every message until join_async_ps_worker starts it.
[[nodiscard]] caf::actor spawn_async_ps_replacement(caf::event_based_actor* sup,
                                                    const context_ptr& ctx, std::uint32_t k);

/// Asks the server to take worker r.node back (it fences off the dead
/// incarnation's outstanding gradient) and starts the replacement with the
/// server's model at that instant, its version and the seq to go on from.
void join_async_ps_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                          const worker_restart& r, restart_started started);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it.
void wire_async_ps(caf::event_based_actor* sup, const context_ptr& ctx,
                   std::vector<node_actors>& nodes, link_list& links);

/// Its spec block, parsed once (async_ps_spec.cpp; run_plan::config<async_ps_config>()).
struct async_ps_config : algorithm_config {
  static constexpr const char* name = "async_ps";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  std::uint32_t server = 0;  // the node whose links the server uses
};

/// Its spec block's checks (async_ps_spec.cpp; algorithm_descriptor::check_block).
void async_ps_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
/// Its block as a async_ps_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
async_ps_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
