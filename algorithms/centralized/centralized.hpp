#pragma once
/// Centralized minibatch SGD on one node over the whole training set: the
/// single-machine reference every decentralized run is compared against.
#include <memory>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/node_actor.hpp"

namespace atrain {

/// The worker: node_actor's messages, its start and its gradient's wake,
/// and a replacement's join (start_atom, model, step count, sampler state).
using centralized_worker_actor =
  node_actor::extend<caf::reacts_to<start_atom>, caf::reacts_to<wake_atom>,
                     caf::reacts_to<start_atom, float_blob, std::uint64_t, std::string>>;

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
[[nodiscard]] node_actors spawn_centralized_node(caf::event_based_actor* parent,
                                                 const context_ptr& ctx, std::uint32_t i);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it.
void wire_centralized(caf::event_based_actor* sup, const context_ptr& ctx,
                      std::vector<node_actors>& nodes, link_list& links);

/// Restart (supervisor.cpp): a replacement worker that waits for its state,
/// and its join — the run's last checkpoint (r.checkpoint) or, before the
/// first, x^0.
[[nodiscard]] caf::actor spawn_centralized_replacement(caf::event_based_actor* sup,
                                                       const context_ptr& ctx);
void join_centralized_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                             const worker_restart& r, restart_started started);

/// Its spec block, parsed once (centralized_spec.cpp; run_plan::config<centralized_config>()).
struct centralized_config : algorithm_config {
  static constexpr const char* name = "centralized";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  // step_size, decay: all of its block
};

/// Its spec block's checks (centralized_spec.cpp; algorithm_descriptor::check_block).
void centralized_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
/// Its block as a centralized_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
centralized_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
