#pragma once
/// D-PSGD, synchronous gossip (ALGORITHMS.md §5): the mixing matrix and the
/// spawn function for a whole D-PSGD network.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/node_actor.hpp"
#include "atrain/topology/weights.hpp"

namespace atrain {

/// Packet stream of D-PSGD: a node's round-k model (seq = k).
enum dpsgd_stream : std::uint32_t { dpsgd_model = 11 };

/// A worker (also its node's buffer for the evaluator): node_actor's
/// messages and
using dpsgd_worker_actor = node_actor::extend<
  // the supervisor's wiring (gossip::wire_nodes): routes to the neighbours, the start;
  caf::reacts_to<init_atom, std::vector<caf::actor>>, caf::reacts_to<start_atom>,
  // its own gradient's timer (the round whose x it read);
  caf::reacts_to<wake_atom, std::uint64_t>,
  // the neighbours' models (their links, or they themselves over a perfect link);
  caf::reacts_to<deliver_atom, packet>,
  // the evaluator, asking the node's buffer: (messages, bytes, rejected);
  caf::replies_to<stats_atom>::with<std::uint64_t, std::uint64_t, std::uint64_t>,
  // the supervisor restarting neighbour k: (round, x^round sent, x);
  caf::replies_to<restart_atom, std::uint32_t>::with<std::uint64_t, bool, float_blob>,
  // node k joining the run (join_dpsgd_worker): begin no round until the
  // resume -> (round, x); then (resume, R, k): k is in from round R on;
  caf::replies_to<join_atom, std::uint32_t>::with<std::uint64_t, float_blob>,
  caf::reacts_to<resume_atom, std::uint64_t, std::uint32_t>,
  // and a replacement's join: (start, round, x, the neighbours' models of
  // that round sent to the dead worker, routes, the nodes in the run from
  // that round on: empty = every node).
  caf::reacts_to<start_atom, std::uint64_t, float_blob, std::vector<float_blob>,
                 std::vector<caf::actor>, std::vector<std::uint32_t>>>;

/// The matrix every D-PSGD node mixes with: Metropolis-Hastings over g_r,
/// W_ij = 1/(1 + max(deg_i, deg_j)) on edges, W_ii = 1 - sum_j W_ij;
/// symmetric and doubly stochastic. Throws topology_error when g_r is not
/// symmetric (prepare_run refuses such a spec first).
[[nodiscard]] weight_matrix dpsgd_weights(const topology& topo);

/// D-PSGD's part of checkpoint `ck` against `plan` (checkpoint.hpp,
/// load_checkpoint), straggler_policy SKIP: a waiting gradient has the
/// model's size and read x in a round not after the node's; every held
/// model comes from a neighbour, once, for the node's round or the next,
/// with the model's size. Empty when fine, else the reason.
[[nodiscard]] std::string dpsgd_check_checkpoint(const proto::Checkpoint& ck, const run_plan& plan);

/// One round of one node as it happened (test hook, recorded with a probe).
struct dpsgd_round {
  std::uint64_t round = 0;
  std::vector<float> before;    // x^k
  std::vector<float> after;     // x^{k+1}
  std::vector<float> gradient;  // the gradient applied; empty: mixing only (SKIP)
  double gamma = 0;             // gamma_k
};

/// Test hook (virtual clock with a run_probe only, between two scheduler
/// steps): moves out the rounds the D-PSGD worker at `worker` finished since
/// the last call. Empty for any other actor or once it is gone.
[[nodiscard]] std::vector<dpsgd_round> dpsgd_take_rounds(const caf::actor_addr& worker);

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
[[nodiscard]] node_actors spawn_dpsgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                           std::uint32_t i);

/// Restart (supervision): a replacement for node `k`'s crashed worker, a
/// child of `sup`, keeping every message until join_dpsgd_worker starts it.
[[nodiscard]] caf::actor spawn_dpsgd_replacement(caf::event_based_actor* sup,
                                                 const context_ptr& ctx, std::uint32_t k);

/// Starts the replacement in the round its neighbours wait in (one past the
/// last model the dead worker handed its links), with the first answering
/// neighbour's model and every neighbour model of that round already sent
/// (to the dead worker); the rest arrive over the re-pointed links. W stays
/// doubly stochastic: every round from there moves the node average by the
/// gradient steps alone.
///
/// A node absent from the start joining (faults.join): every live node
/// stops beginning rounds and reports its round; with R one past the
/// highest, every node mixes with the joiner in (Metropolis-Hastings over
/// the nodes in the run) from round R on, and the joiner starts round R
/// with its first live neighbour's model. W stays doubly stochastic over
/// the members in every round.
void join_dpsgd_worker(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                       restart_started started);
/// The join half of join_dpsgd_worker (dpsgd_join.cpp).
void join_dpsgd_node(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                     restart_started started);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it.
void wire_dpsgd(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, link_list& links);

/// Its spec block, parsed once (dpsgd_spec.cpp; run_plan::config<dpsgd_config>()).
struct dpsgd_config : algorithm_config {
  static constexpr const char* name = "dpsgd";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  straggler_policy stragglers = straggler_policy::wait;
  bool overlap = true;  // order OVERLAP: x^k is sent when round k starts
};

/// Its spec block's checks (dpsgd_spec.cpp; algorithm_descriptor::check_block).
void dpsgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
/// Its block as a dpsgd_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
dpsgd_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
