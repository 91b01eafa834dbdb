/// R-FAST's recovery policy (a descriptor's `recovery`, recovery.hpp): what
/// losing nodes does to the graph pair, new tracking epochs (re-rooting), a
/// restarted worker behind its buffer and a whole node's rejoin.
/// docs/RELIABILITY.md "Re-rooting".
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "algorithms/rfast/rfast.hpp"
#include "algorithms/rfast/rfast_epoch.hpp"
#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/recovery.hpp"

namespace atrain {
namespace {

class rfast_recovery final : public recovery_policy {
public:
  explicit rfast_recovery(const run_plan& plan) : epoch_(first_rfast_epoch(plan)) {}

  std::optional<loss_outcome> lose(supervision& s, const node_loss& l) override;
  void start_view(supervision& s, std::uint64_t fault, std::uint32_t records,
                  double lost_at) override;
  void restart(supervision& s, int crash) override;
  std::optional<std::string> absent(supervision& s,
                                    const std::vector<std::uint32_t>& nodes) override;
  void join(supervision& s, int j) override;

private:
  /// What a loss planned: the next epoch, and the relaying buffers retired
  /// with the current one.
  struct pending {
    std::optional<rfast_epoch_plan> next;
    std::vector<std::uint32_t> buffers_gone;
  };

  void retire_relaying_buffers(supervision& s, const std::vector<std::uint32_t>& gone,
                               std::vector<std::uint32_t>& retired);
  [[nodiscard]] loss_outcome renew(supervision& s, const node_loss& l, const std::string& lost,
                                   const std::string& how,
                                   const std::vector<std::uint32_t>& survivors);
  link_list launch_epoch(supervision& s, rfast_epoch_plan e);
  /// How a whole node down since a crash or absent since the start comes in.
  struct comeback {
    std::uint32_t node = 0;
    std::uint64_t fault = 0;  // its fault record
    event_kind event = event_kind::restart;
    std::uint64_t arg = 0;  // the trace's: the crash's or the join's index
    const char* verb = "restarted";
  };
  /// Asks a live node for its model (node k's G_R in-neighbour first) and
  /// calls `then` with it and where it came from.
  void fetch_model(supervision& s, std::uint32_t k,
                   std::function<void(std::vector<float>, const std::string&)> then);
  void bring_back(supervision& s, const comeback& c, std::optional<int> crash);
  void respawn_worker(supervision& s, int crash, std::vector<float> x, const std::string& source);
  void rejoin(supervision& s, const comeback& c, std::vector<float> x, const std::string& source);

  rfast_epoch_plan epoch_;  // the current tracking epoch
  /// Nodes out of the run for good (lost whole, or their worker lost: no
  /// later epoch includes them) or down whole until their restart.
  std::set<std::uint32_t> out_;
  /// Whole nodes down until their restart or join: node -> what the crash
  /// or the absence did (the restart's fault record goes on from it).
  std::map<std::uint32_t, std::string> down_;
  pending pending_;
};

/// Retires, with the current epoch, every buffer left relaying by an earlier
/// worker-only loss (none of `gone`): a new epoch has no place for them.
void rfast_recovery::retire_relaying_buffers(supervision& s, const std::vector<std::uint32_t>& gone,
                                             std::vector<std::uint32_t>& retired) {
  auto& nodes = s.nodes();
  for (auto m : epoch_.members)
    if (out_.count(m) > 0 && std::find(gone.begin(), gone.end(), m) == gone.end() &&
        !s.killed(nodes[m].buffer)) {
      s.kill(nodes[m].buffer);
      retired.push_back(m);
    }
}

/// A whole node takes its buffer's tracker mass (and the mass in flight to
/// it) along: even when a common root survives, the tracked sum no longer
/// equals the survivors' gradients and R-FAST settles off the optimum
/// (measured: a9a stalls near 0.77). A new epoch over the survivors restores
/// it; when the pair cannot be rebuilt, new_view stays false and the effect says why.
loss_outcome rfast_recovery::renew(supervision& s, const node_loss& l, const std::string& lost,
                                   const std::string& how,
                                   const std::vector<std::uint32_t>& survivors) {
  auto next = next_rfast_epoch(*s.ctx()->plan, epoch_, survivors, s.workers_up());
  if (!next) {  // new_view false: the caller goes on as before, saying why
    loss_outcome o;
    o.effect = "; its tracker mass is not restored: " + error_text(next.error());
    return o;
  }
  retire_relaying_buffers(s, l.gone, pending_.buffers_gone);
  loss_outcome o;
  o.new_view = true;
  o.effect = "; " + lost + " " + how +
             " (its gradient buffer's tracker mass with it); new tracking epoch " +
             std::to_string(next->epoch) + " over the " + std::to_string(survivors.size()) +
             " survivors to restore the tracked sum: " + next->kind + " with root " +
             std::to_string(next->root);
  pending_.next = std::move(*next);
  return o;
}

/// Nodes `l.gone` are lost for good (whole: with their gradient buffers;
/// otherwise only their workers), or down whole until their restart: the
/// survivors go on without them just the same. A whole node took tracker
/// mass along: the next epoch is planned over the survivors (renew). Only
/// workers lost and the survivors' pair still has a common root: nothing
/// changes (a buffer without worker withdraws the node's gradient and relays
/// tracker mass). No common root left: the nodes are retired whole (with
/// every buffer left relaying) and the next epoch is planned.
std::optional<loss_outcome> rfast_recovery::lose(supervision& s, const node_loss& l) {
  const std::string how = l.back_later ? "down until its restart" : "lost for good";
  const auto& plan = *s.ctx()->plan;
  const auto& gone = l.gone;
  const bool was_root = std::find(gone.begin(), gone.end(), epoch_.root) != gone.end();
  out_.insert(gone.begin(), gone.end());
  pending_ = {};
  std::vector<std::uint32_t> survivors;
  for (auto m : epoch_.members)
    if (out_.count(m) == 0)
      survivors.push_back(m);
  const std::string lost =
    gone.size() == 1 ? (was_root ? "root node " : "node ") + std::to_string(gone.front())
                     : std::string{"these nodes"} + (was_root ? " (the root among them)" : "");
  const std::string at = " at " + std::to_string(l.at) + " s";
  if (survivors.empty()) {
    s.fail(lost + " " + how + at + ": no node is left");
    return std::nullopt;
  }
  const auto roots = surviving_roots(epoch_, survivors);
  const bool reroot = plan.config<rfast_config>().reroot;
  std::string no_renewal;
  if (l.whole && !roots.empty() && reroot) {
    auto o = renew(s, l, lost, how, survivors);
    if (o.new_view) {
      if (l.back_later)
        for (auto k : gone)
          down_[k] = l.so_far + o.effect;
      return o;
    }
    no_renewal = o.effect;
  }
  loss_outcome o;
  if (!roots.empty() || !reroot) {
    const std::string why = !roots.empty()
                              ? "the survivors still share the common root " +
                                  std::to_string(roots.front()) + ": no re-rooting"
                              : "the survivors share no common root and re-rooting is off "
                                "(algorithm.rfast.reroot: false): the run goes on without one";
    if (l.whole) {
      o.effect = "; " + lost + " " + how + " (its gradient buffer's state with it), the others " +
                 "go on (" + why + no_renewal + ")";
    } else {
      for (auto k : gone)
        s.self()->send(caf::actor_cast<rfast_buffer_actor>(s.nodes()[k].buffer),
                       retire_atom::value);
      o.effect = "; worker lost for good: its gradient buffer withdrew the node's gradient from "
                 "the tracked sum and relays tracker mass, the others go on (" +
                 why + ")";
    }
    if (l.back_later)
      for (auto k : gone)
        down_[k] = l.so_far + o.effect;
    return o;
  }
  // Re-root. A buffer without its worker has no model to hand on: retire it
  // (and every buffer left relaying by an earlier loss) with the old epoch.
  retire_relaying_buffers(s, gone, pending_.buffers_gone);
  if (!l.whole)
    for (auto k : gone)
      s.kill(s.nodes()[k].buffer);
  auto next = next_rfast_epoch(plan, epoch_, survivors, s.workers_up());
  if (!next) {
    s.fail(lost + " " + how + at + ": " + error_text(next.error()));
    return std::nullopt;
  }
  o.new_view = true;
  o.effect = "; " + lost + " " + how +
             (l.whole ? "" : " (its worker; the node is retired whole, buffer too)") +
             "; re-rooted at node " + std::to_string(next->root) + " (tracking epoch " +
             std::to_string(next->epoch) + "): " + next->kind + " over the " +
             std::to_string(survivors.size()) + " survivors";
  pending_.next = std::move(*next);
  if (l.back_later)
    for (auto k : gone)
      down_[k] = l.so_far + o.effect;
  return o;
}

/// Starts epoch `e` (every member adopts its new neighbours and restarts its
/// tracker), which becomes the current one; returns the links spawned for
/// its new edges (adopted).
link_list rfast_recovery::launch_epoch(supervision& s, rfast_epoch_plan e) {
  link_list links;
  const auto& ctx = s.ctx();
  start_rfast_epoch(s.self(), ctx, s.nodes(), e, s.workers_up(), links);
  for (const auto& l : links)
    s.adopt(caf::actor_cast<caf::actor>(l), "link");
  ctx->events.record(ctx->ns(s.self()), e.root, event_kind::reroot, e.epoch, e.members.size());
  epoch_ = std::move(e);
  return links;
}

/// Starts the planned epoch and tells the evaluator: the new root, the new
/// links, the retired buffers, and when the loss happened (recovery time).
void rfast_recovery::start_view(supervision& s, std::uint64_t fault, std::uint32_t records,
                                double lost_at) {
  auto p = std::exchange(pending_, {});
  const auto epoch = p.next->epoch;
  const auto root = p.next->root;
  auto links = launch_epoch(s, std::move(*p.next));
  s.self()->send(s.evaluator(), epoch_atom::value, epoch, root, std::move(links),
                 std::move(p.buffers_gone), fault, records, lost_at);
}

void rfast_recovery::fetch_model(supervision& s, std::uint32_t k,
                                 std::function<void(std::vector<float>, const std::string&)> then) {
  const auto& plan = *s.ctx()->plan;
  const auto& nodes = s.nodes();
  std::vector<std::uint32_t> donors = plan.topo->g_r.in(k);
  for (std::uint32_t j = 0; j < nodes.size(); ++j)
    donors.push_back(j);
  std::uint32_t donor = k;
  for (auto j : donors)
    if (j != k && out_.count(j) == 0 && !s.killed(nodes[j].worker)) {
      donor = j;
      break;
    }
  if (donor == k) {
    then({}, "x^0 (no live node to copy from)");
    return;
  }
  s.self()
    ->request(caf::actor_cast<rfast_worker_actor>(nodes[donor].worker), caf::infinite,
              model_atom::value)
    .then(
      [then, donor](const model_snapshot& m) {
        then(m.params.vec(), "node " + std::to_string(donor) + "'s model");
      },
      [then](const caf::error&) { then({}, "x^0 (the donor did not answer)"); });
}

/// Node c.node comes back with a live node's model: a whole node down (or
/// absent) rejoins; after a worker-only crash `crash`, its worker respawns.
void rfast_recovery::bring_back(supervision& s, const comeback& c, std::optional<int> crash) {
  fetch_model(s, c.node, [this, &s, c, crash](std::vector<float> x, const std::string& source) {
    if (s.stopping())
      return;
    s.count_restart(c.node);
    if (crash && down_.count(c.node) == 0)
      return respawn_worker(s, *crash, std::move(x), source);
    rejoin(s, c, std::move(x), source);
  });
}

/// Restart after crash i: the worker gets a neighbour's model (its G_R
/// in-neighbour's, else any live node's) and the buffer's durable state, or,
/// the whole node down, a fresh buffer with it (rejoin).
void rfast_recovery::restart(supervision& s, int crash) {
  const auto& plan = *s.ctx()->plan;
  comeback c;
  c.node = plan.crashes.at(static_cast<std::size_t>(crash)).node;
  c.fault = static_cast<std::uint64_t>(plan.faults.crash_index(crash));
  c.arg = static_cast<std::uint64_t>(crash);
  bring_back(s, c, crash);
}

/// Nodes absent from the start: the run starts a tracking epoch over the
/// others at once, before any gradient (every buffer's tracker is still at
/// zero: nothing is lost), as if they had been lost whole at time 0.
std::optional<std::string> rfast_recovery::absent(supervision& s,
                                                  const std::vector<std::uint32_t>& nodes) {
  const auto& plan = *s.ctx()->plan;
  out_.insert(nodes.begin(), nodes.end());
  std::vector<std::uint32_t> present;
  for (std::uint32_t m = 0; m < plan.nodes(); ++m)
    if (out_.count(m) == 0)
      present.push_back(m);
  auto next = next_rfast_epoch(plan, epoch_, present, s.workers_up());
  if (!next) {
    s.fail("the nodes absent from the start (faults.join) leave no graph pair to start with: " +
           error_text(next.error()));
    return std::nullopt;
  }
  const std::string effect = "; the run starts with tracking epoch " + std::to_string(next->epoch) +
                             " over the " + std::to_string(present.size()) +
                             " nodes present: " + next->kind + ", root " +
                             std::to_string(next->root);
  for (auto k : nodes)
    down_[k] = "absent from the start" + effect;
  const auto epoch = next->epoch;
  const auto root = next->root;
  auto links = launch_epoch(s, std::move(*next));
  s.self()->send(s.evaluator(), epoch_atom::value, epoch, root, std::move(links),
                 std::vector<std::uint32_t>{});
  return effect;
}

/// Join j: a node absent since the start comes in as a whole node restarted
/// after a crash does (rejoin): a live node's model, a fresh buffer and a
/// new tracking epoch with it in both graphs.
void rfast_recovery::join(supervision& s, int j) {
  const auto& plan = *s.ctx()->plan;
  comeback c;
  c.node = plan.joins.at(static_cast<std::size_t>(j)).node;
  c.fault = static_cast<std::uint64_t>(plan.faults.join_index(j));
  c.event = event_kind::join;
  c.arg = static_cast<std::uint64_t>(j);
  c.verb = "joined";
  bring_back(s, c, std::nullopt);
}

/// A worker-only crash: a new worker behind the buffer, which kept the
/// tracker state.
void rfast_recovery::respawn_worker(supervision& s, int crash, std::vector<float> x,
                                    const std::string& source) {
  const auto& ctx = s.ctx();
  const auto& plan = *ctx->plan;
  const auto& c = plan.crashes.at(static_cast<std::size_t>(crash));
  const auto k = c.node;
  auto& node = s.nodes()[k];
  const auto dead = node.worker.address();
  auto w = respawn_rfast_worker(s.self(), ctx, k, node, std::move(x));
  node.worker = w;
  s.adopt_replacement(k, w, "worker", dead);
  ctx->events.record(ctx->ns(s.self()), k, event_kind::restart, static_cast<std::uint64_t>(crash));
  const double t = ctx->seconds(s.self());
  const auto fault = static_cast<std::uint64_t>(plan.faults.crash_index(crash));
  s.self()->send(s.evaluator(), restart_atom::value, k, w, fault,
                 "killed at " + std::to_string(c.at_seconds) + " s, restarted at " +
                   std::to_string(t) + " s with " + source +
                   "; tracker state kept in the gradient buffer");
  s.crash_closed();
}

/// A whole node comes back (after a crash, or its join): a fresh gradient
/// buffer and worker (model `x`, from `source`), every edge into the node
/// re-pointed at the new buffer, and a new tracking epoch over the nodes in
/// the run, node k among them (rejoin_rfast_epoch: the spec's pair once every
/// node is back). Every member restarts its tracker from z = g_prev, the new
/// buffer's g_prev being 0 until its first gradient: the mass invariant holds
/// over the members from the epoch's start. A pair that cannot be built
/// leaves the node out, saying why.
void rfast_recovery::rejoin(supervision& s, const comeback& c, std::vector<float> x,
                            const std::string& source) {
  const auto& ctx = s.ctx();
  const auto& plan = *ctx->plan;
  auto& nodes = s.nodes();
  const auto k = c.node;
  const auto fault = c.fault;
  const std::string at = " at " + std::to_string(ctx->seconds(s.self())) + " s";
  std::string effect = std::move(down_.at(k));
  down_.erase(k);
  out_.erase(k);
  std::vector<std::uint32_t> members;
  for (std::uint32_t m = 0; m < nodes.size(); ++m)
    if (out_.count(m) == 0)
      members.push_back(m);
  auto up = s.workers_up();
  up.at(k) = true;  // its worker is about to be
  auto next = rejoin_rfast_epoch(plan, epoch_, members, up);
  if (!next) {
    out_.insert(k);
    s.self()->send(s.evaluator(), crash_atom::value, k, true, fault,
                   effect + "; not " + c.verb + at + ": " + error_text(next.error()) +
                     " (the node stays out of the run)");
    return s.crash_closed();
  }
  std::vector<std::uint32_t> retired;  // the buffers left relaying have no place in the new epoch
  retire_relaying_buffers(s, {}, retired);
  auto& node = nodes[k];
  const auto old_buffer = node.buffer.address();
  const auto old_worker = node.worker.address();
  const auto fresh = respawn_rfast_node(s.self(), ctx, k, std::move(x));
  node.worker = fresh.worker;
  node.buffer = fresh.buffer;
  s.adopt_replacement(k, node.buffer, "gradient buffer", old_buffer);
  s.adopt_replacement(k, node.worker, "worker", old_worker);
  repoint_rfast_routes(s.self(), *ctx, k, old_buffer, node.buffer);
  const auto epoch = next->epoch;
  const auto root = next->root;
  const bool all_back = members.size() == nodes.size();
  effect += std::string{"; "} + c.verb + at + " with " + source +
            " and a fresh gradient buffer: new tracking epoch " + std::to_string(epoch) +
            " with node " + std::to_string(k) +
            (c.event == event_kind::join ? " in: " : " back: ") + next->kind + " over " +
            (all_back ? "all " : "the ") + std::to_string(members.size()) + " nodes" +
            (all_back ? " (the spec's pair)" : " in the run") + ", root " + std::to_string(root);
  // A worker's restart (or join) event, with the epoch that takes the whole node back.
  ctx->events.record(ctx->ns(s.self()), k, c.event, c.arg, epoch);
  auto links = launch_epoch(s, std::move(*next));
  start_respawned_rfast_node(s.self(), node);
  s.self()->send(s.evaluator(), epoch_atom::value, epoch, root, std::move(links),
                 std::move(retired));
  s.self()->send(s.evaluator(), restart_atom::value, k, node.worker, node.buffer, fault,
                 std::move(effect));
  s.crash_closed();
}

}  // namespace

std::unique_ptr<recovery_policy> make_rfast_recovery(const run_plan& plan) {
  return std::make_unique<rfast_recovery>(plan);
}

}  // namespace atrain
