#pragma once
/// R-FAST tracking epochs (docs/RELIABILITY.md "Re-rooting"): the graph pair
/// over the nodes still in the run. When a node is lost for good and the
/// survivors' pair has no common root left (a tree pair losing its root or an
/// interior node), the supervisor builds a pair of the same kind over the
/// survivors and starts a new epoch: every survivor adopts its new
/// neighbours and weights and restarts its tracker from z = g_prev.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/recovery.hpp"

namespace atrain {

/// One epoch's graph pair. Node k of `topo` is node members[k] of the run.
struct rfast_epoch_plan {
  std::uint32_t epoch = 0;
  std::vector<std::uint32_t> members;  // ascending
  std::shared_ptr<const topology> topo;
  std::uint32_t root = 0;  // a common root (run id): the evaluated model on trees
  std::string kind;        // e.g. "tree pair of arity 2"
};

/// Throws spec_error naming faults.join when the spec has joins and its kind
/// of graph pair cannot be rebuilt over the nodes present at the start.
void check_rfast_joins(const loaded_spec& ls, const topology_settings& t);

/// Epoch 0: the spec's graph pair over every node.
[[nodiscard]] rfast_epoch_plan first_rfast_epoch(const run_plan& plan);

/// The common roots (run ids, ascending) of e's pair restricted to
/// `survivors` (an ascending subset of e.members); empty: none is left.
[[nodiscard]] std::vector<std::uint32_t>
surviving_roots(const rfast_epoch_plan& e, const std::vector<std::uint32_t>& survivors);

/// The next epoch over `survivors` (ascending, not empty): a pair of the
/// spec's kind (TREE_PAIR: same arity; STAR; RING, DIRECTED_RING,
/// EXPONENTIAL, DIRECTED_EXPONENTIAL, COMPLETE: same builder) whose root is e's root when it
/// survives, else the first surviving G_R child of e's root with a live
/// worker (`worker_up`, index = run id), else the lowest survivor with a live
/// worker, else the lowest survivor. An error when the kind cannot be rebuilt
/// over other nodes (TORUS, RANDOM_REGULAR, BIPARTITE_EXPONENTIAL, EXPLICIT).
[[nodiscard]] caf::expected<rfast_epoch_plan>
next_rfast_epoch(const run_plan& plan, const rfast_epoch_plan& e,
                 const std::vector<std::uint32_t>& survivors, const std::vector<bool>& worker_up);

/// The epoch that takes a restarted whole node back: `members` (ascending)
/// are the nodes in the run again, the restarted one among them. Every node
/// back: the spec's graph pair with its common root (epoch 0's pair, numbered
/// e.epoch + 1); otherwise the re-rooting's pair over them (next_rfast_epoch:
/// e's root kept), or its error.
[[nodiscard]] caf::expected<rfast_epoch_plan>
rejoin_rfast_epoch(const run_plan& plan, const rfast_epoch_plan& e,
                   const std::vector<std::uint32_t>& members, const std::vector<bool>& worker_up);

/// Every directed edge's handle (a link actor, or the receiving buffer when
/// links are perfect): filled by wire_rfast, extended by start_rfast_epoch.
struct rfast_routes {
  std::map<std::pair<std::uint32_t, std::uint32_t>, caf::actor> route;
  /// The newest epoch view of each node's worker (none before a re-rooting):
  /// a worker restarted later gets it too.
  std::map<std::uint32_t, rfast_epoch> worker_view;
};

/// This process's route table of the run (in ctx.shared).
[[nodiscard]] std::shared_ptr<rfast_routes> rfast_route_table(run_context& ctx);

/// Node `id` restarted whole: every edge into it ends at its new `buffer`
/// from now on. A direct route (a perfect link) is replaced in the route
/// table; a link actor is re-pointed ((restart_atom, old_buffer, buffer)).
/// Call before start_rfast_epoch, which hands the senders their routes.
void repoint_rfast_routes(caf::event_based_actor* sup, run_context& ctx, std::uint32_t id,
                          const caf::actor_addr& old_buffer, const caf::actor& buffer);

/// Starts epoch `e`: reuses the handle of every edge that existed before,
/// spawns a link (as wire_rfast does: same link model, same faults) for every
/// new edge (appended to `new_links`), and sends every member's buffer its
/// view (G_C out-routes) and, when its worker is up (`worker_up`, index = run
/// id), its worker its view (G_R out-routes). `nodes[m].worker_routes` is
/// updated for a later restart.
void start_rfast_epoch(caf::event_based_actor* sup, const context_ptr& ctx,
                       std::vector<node_actors>& nodes, const rfast_epoch_plan& e,
                       const std::vector<bool>& worker_up, link_list& new_links);

/// R-FAST's recovery (rfast_supervision.cpp): losses, re-rooting epochs,
/// restarted workers and whole-node rejoins.
[[nodiscard]] std::unique_ptr<recovery_policy> make_rfast_recovery(const run_plan& plan);

}  // namespace atrain
