/// R-FAST's recovery policy, run by the supervisor (supervisor_state.hpp):
/// what losing nodes does to the graph pair, new tracking epochs (re-rooting),
/// and a whole node's rejoin. docs/RELIABILITY.md "Re-rooting".
#include <algorithm>

#include "actors/src/supervisor_state.hpp"
#include "algorithms/rfast/rfast.hpp"
#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/evaluator.hpp"

namespace atrain::sup {

/// Retires, with the old epoch, every buffer left relaying by an earlier
/// worker-only loss (none of `gone`): a new epoch has no place for them.
void retire_relaying_buffers(sup_ptr self, const rfast_epoch_plan& e,
                             const std::vector<std::uint32_t>& gone, rfast_loss& loss) {
  auto& st = self->state;
  for (auto m : e.members)
    if (st.rfast_out.count(m) > 0 && std::find(gone.begin(), gone.end(), m) == gone.end() &&
        st.crashed.count(st.nodes[m].buffer.address()) == 0) {
      kill_child(self, st.nodes[m].buffer);
      loss.buffers_gone.push_back(m);
    }
}

/// R-FAST: nodes `gone` are lost for good (`whole`: with their gradient
/// buffers; otherwise only their workers), or, with `restart_armed`, down
/// whole until their restart (rejoin_rfast_node): the survivors go on
/// without them just the same. A whole node took tracker mass along: the
/// next epoch is planned over the survivors (the pair rebuilt,
/// keeping the root when it survives). Only workers lost and the survivors'
/// pair still has a common root: nothing changes (a buffer without worker
/// withdraws the node's gradient and relays tracker mass). No common root
/// left: the nodes are retired whole (with every buffer left relaying) and
/// the next epoch is planned. Empty: the run ended (fail) saying why.
[[nodiscard]] std::optional<rfast_loss> lose_rfast_nodes(sup_ptr self,
                                                         const std::vector<std::uint32_t>& gone,
                                                         bool whole, double t, bool restart_armed) {
  auto& st = self->state;
  const std::string how = restart_armed ? "down until its restart" : "lost for good";
  const auto& plan = *st.ctx->plan;
  auto& e = *st.rfast;
  const bool was_root = std::find(gone.begin(), gone.end(), e.root) != gone.end();
  st.rfast_out.insert(gone.begin(), gone.end());
  std::vector<std::uint32_t> survivors;
  for (auto m : e.members)
    if (st.rfast_out.count(m) == 0)
      survivors.push_back(m);
  const std::string lost =
    gone.size() == 1 ? (was_root ? "root node " : "node ") + std::to_string(gone.front())
                     : std::string{"these nodes"} + (was_root ? " (the root among them)" : "");
  if (survivors.empty()) {
    fail(self, lost + " " + how + " at " + std::to_string(t) + " s: no node is left");
    return std::nullopt;
  }
  rfast_loss loss;
  const auto roots = surviving_roots(e, survivors);
  const bool reroot =
    !plan.spec.algorithm().rfast().has_reroot() || plan.spec.algorithm().rfast().reroot();
  // A whole node takes its buffer's tracker mass (and the mass in flight to
  // it) along: even when a common root survives, the tracked sum no longer
  // equals the survivors' gradients and R-FAST settles off the optimum
  // (measured: a9a stalls near 0.77). A new epoch over the survivors restores
  // it; a pair that cannot be rebuilt goes on as before, saying so.
  std::optional<rfast_epoch_plan> renewed;
  std::string no_renewal;
  if (whole && !roots.empty() && reroot) {
    auto next = next_rfast_epoch(plan, e, survivors, workers_up(st));
    if (next)
      renewed = std::move(*next);
    else
      no_renewal = "; its tracker mass is not restored: " + error_text(next.error());
  }
  if (renewed) {
    retire_relaying_buffers(self, e, gone, loss);
    loss.effect = "; " + lost + " " + how +
                  " (its gradient buffer's tracker mass with it); "
                  "new tracking epoch " +
                  std::to_string(renewed->epoch) + " over the " + std::to_string(survivors.size()) +
                  " survivors to restore the tracked sum: " + renewed->kind + " with root " +
                  std::to_string(renewed->root);
    loss.next = std::move(*renewed);
    return loss;
  }
  if (!roots.empty() || !reroot) {
    const std::string why = !roots.empty()
                              ? "the survivors still share the common root " +
                                  std::to_string(roots.front()) + ": no re-rooting"
                              : "the survivors share no common root and re-rooting is off "
                                "(algorithm.rfast.reroot: false): the run goes on without one";
    if (whole) {
      loss.effect = "; " + lost + " " + how +
                    " (its gradient buffer's state with it), the "
                    "others go on (" +
                    why + no_renewal + ")";
      return loss;
    }
    for (auto k : gone)
      self->send(st.nodes[k].buffer, retire_atom::value);
    loss.effect = "; worker lost for good: its gradient buffer withdrew the node's gradient from "
                  "the tracked sum and relays tracker mass, the others go on (" +
                  why + ")";
    return loss;
  }
  // Re-root. A buffer without its worker has no model to hand on: retire it
  // (and every buffer left relaying by an earlier loss) with the old epoch.
  retire_relaying_buffers(self, e, gone, loss);
  if (!whole)
    for (auto k : gone)
      kill_child(self, st.nodes[k].buffer);
  auto next = next_rfast_epoch(plan, e, survivors, workers_up(st));
  if (!next) {
    fail(self, lost + " " + how + " at " + std::to_string(t) + " s: " + error_text(next.error()));
    return std::nullopt;
  }
  loss.effect = "; " + lost + " " + how +
                (whole ? "" : " (its worker; the node is retired whole, buffer too)") +
                "; re-rooted at node " + std::to_string(next->root) + " (tracking epoch " +
                std::to_string(next->epoch) + "): " + next->kind + " over the " +
                std::to_string(survivors.size()) + " survivors";
  loss.next = std::move(*next);
  return loss;
}

/// Starts epoch `e` (every member adopts its new neighbours and restarts its
/// tracker), which becomes the current one; returns the links spawned for
/// its new edges (adopted).
std::vector<caf::actor> launch_epoch(sup_ptr self, rfast_epoch_plan e) {
  auto& st = self->state;
  std::vector<caf::actor> links;
  start_rfast_epoch(self, st.ctx, st.nodes, e, workers_up(st), links);
  for (const auto& l : links)
    adopt(self, l, "link");
  st.ctx->events.record(st.ctx->ns(self), e.root, event_kind::reroot, e.epoch, e.members.size());
  st.rfast = std::move(e);
  return links;
}

/// Starts the planned epoch (launch_epoch) and tells the evaluator: the new
/// root, the new links, the retired buffers, and when the loss of `fault`
/// happened (recovery time; `records`: how many fault records it made, one
/// per node of a lost host).
void start_epoch(sup_ptr self, rfast_loss loss, std::uint64_t fault, std::uint32_t records,
                 double lost_at) {
  auto& st = self->state;
  const auto epoch = loss.next->epoch;
  const auto root = loss.next->root;
  auto links = launch_epoch(self, std::move(*loss.next));
  self->send(st.evaluator, epoch_atom::value, epoch, root, std::move(links),
             std::move(loss.buffers_gone), fault, records, lost_at);
}

/// Restart after crash i of a whole R-FAST node, down since (rfast_down): a
/// fresh gradient buffer and worker (model `x`, from `source`), every edge
/// into the node re-pointed at the new buffer, and a new tracking epoch over
/// the nodes in the run, node k among them (rejoin_rfast_epoch: the spec's
/// pair once every node is back). Every member restarts its tracker from
/// z = g_prev, the new buffer's g_prev being 0 until its first gradient: the
/// mass invariant holds over the members from the epoch's start. A pair that
/// cannot be built leaves the node out, saying why.
void rejoin_rfast_node(sup_ptr self, int i, std::vector<float> x, const std::string& source) {
  auto& st = self->state;
  const auto& plan = *st.ctx->plan;
  const auto k = plan.spec.faults().crash(i).node();
  const auto fault = static_cast<std::uint64_t>(plan.faults.crash_index(i));
  const double t = st.ctx->seconds(self);
  const std::string at = " at " + std::to_string(t) + " s";
  std::string effect = std::move(st.rfast_down.at(i));
  st.rfast_down.erase(i);
  st.rfast_out.erase(k);
  std::vector<std::uint32_t> members;
  for (std::uint32_t m = 0; m < st.nodes.size(); ++m)
    if (st.rfast_out.count(m) == 0)
      members.push_back(m);
  auto up = workers_up(st);
  up.at(k) = true;  // its worker is about to be
  auto next = rejoin_rfast_epoch(plan, *st.rfast, members, up);
  if (!next) {
    st.rfast_out.insert(k);
    self->send(st.evaluator, crash_atom::value, k, true, fault,
               effect + "; not restarted" + at + ": " + error_text(next.error()) +
                 " (the node stays out of the run)");
    return crash_closed(self);
  }
  rfast_loss retired;  // the buffers left relaying have no place in the new epoch
  retire_relaying_buffers(self, *st.rfast, {}, retired);
  auto& node = st.nodes[k];
  const auto old_buffer = node.buffer.address();
  const auto old_worker = node.worker.address();
  const auto fresh = respawn_rfast_node(self, st.ctx, k, std::move(x));
  node.worker = fresh.worker;
  node.buffer = fresh.buffer;
  adopt_replacement(self, k, node.buffer, "gradient buffer", old_buffer);
  adopt_replacement(self, k, node.worker, "worker", old_worker);
  repoint_rfast_routes(self, *st.ctx, k, old_buffer, node.buffer);
  const auto epoch = next->epoch;
  const auto root = next->root;
  const bool all_back = members.size() == st.nodes.size();
  effect += "; restarted" + at + " with " + source +
            " and a fresh gradient buffer: new tracking "
            "epoch " +
            std::to_string(epoch) + " with node " + std::to_string(k) + " back: " + next->kind +
            " over " + (all_back ? "all " : "the ") + std::to_string(members.size()) + " nodes" +
            (all_back ? " (the spec's pair)" : " in the run") + ", root " + std::to_string(root);
  // A worker's restart event, with the epoch that takes the whole node back.
  st.ctx->events.record(st.ctx->ns(self), k, event_kind::restart, static_cast<std::uint64_t>(i),
                        epoch);
  auto links = launch_epoch(self, std::move(*next));
  start_respawned_rfast_node(self, node);
  self->send(st.evaluator, epoch_atom::value, epoch, root, std::move(links),
             std::move(retired.buffers_gone));
  self->send(st.evaluator, restart_atom::value, k, node.worker, node.buffer, fault,
             std::move(effect));
  crash_closed(self);
}

}  // namespace atrain::sup
