#include "atrain/actors/supervisor.hpp"

#include <algorithm>
#include <deque>
#include <optional>
#include <set>
#include <utility>

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/algorithms.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/evaluator.hpp"
#include "atrain/actors/exceptions.hpp"
#include "atrain/actors/run_log.hpp"
#include "atrain/messages/json.hpp"
#include "atrain/version.hpp"
#include "supervisor_state.hpp"

namespace atrain::sup {

void adopt(sup_ptr self, const caf::actor& a, std::string name) {
  self->monitor(a);
  self->state.names[a.address()] = std::move(name);
  self->state.children->push_back(a);
}

void finish(sup_ptr self, proto::RunReport report) {
  auto& st = self->state;
  for (const auto& c : *st.children)
    self->send_exit(c, caf::exit_reason::user_shutdown);
  st.children->clear();
  if (st.sink) {
    std::lock_guard<std::mutex> guard{st.sink->mtx};
    st.sink->report = report;
  }
  if (st.listener) {
    report_bytes out;
    report.SerializeToString(&out.bytes);
    self->send(st.listener, done_atom::value, std::move(out));
  }
  self->quit();
}

proto::RunReport header(const run_context& ctx) {
  proto::RunReport r;
  const auto& plan = *ctx.plan;
  r.set_name(plan.name);
  r.set_algorithm(ctx.plan->algorithm_name());
  r.set_clock(plan.virtual_clock() ? "VIRTUAL" : "REAL");
  r.set_nodes(static_cast<std::uint32_t>(ctx.plan->nodes()));
  r.set_seed(plan.seed);
  r.set_target_accuracy(plan.stop.target_accuracy);
  r.set_atrain_version(atrain::version);
  for (const auto& w : ctx.plan->warnings)
    r.add_warnings(w);
  return r;
}

void begin_stop(sup_ptr self, std::string reason) {
  auto& st = self->state;
  if (st.stopping || (st.ckpt && st.ckpt->defer_stop(reason)))
    return;
  st.stopping = true;
  st.stop_reason = std::move(reason);
  st.ctx->events.record(st.ctx->ns(self), 0, event_kind::stop);
  log_event(self, *st.ctx, "stop", "\"reason\": " + json::quote(st.stop_reason));
  if (!st.evaluator) {  // stopped while the hosts were still spawning
    auto r = header(*st.ctx);
    r.set_stop_reason(st.stop_reason);
    finish(self, std::move(r));
    return;
  }
  self->request(st.evaluator, caf::infinite, final_atom::value)
    .then(
      [=](const report_bytes& bytes) {
        proto::RunReport evaluated;
        evaluated.ParseFromString(bytes.bytes);
        auto r = header(*self->state.ctx);
        r.MergeFrom(evaluated);
        r.set_stop_reason(self->state.stop_reason);
        if (self->state.ckpt)
          self->state.ckpt->add_to(r);
        finish(self, std::move(r));
      },
      [=](caf::error& e) {
        auto r = header(*self->state.ctx);
        r.set_stop_reason(self->state.stop_reason);
        r.set_error("final evaluation failed: " + error_text(e));
        finish(self, std::move(r));
      });
}

void fail(sup_ptr self, const std::string& what) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  log_event(self, *st.ctx, "stop", "\"reason\": \"error\", \"error\": " + json::quote(what));
  auto r = header(*st.ctx);
  r.set_stop_reason("error");
  r.set_error(what);
  r.set_duration_seconds(st.ctx->seconds(self));
  r.set_trace_hash(st.ctx->events.hex());
  r.set_trace_events(st.ctx->events.events());
  finish(self, std::move(r));
}

/// Why the algorithm cannot go on after losing a node for good (empty: it
/// can; the run continues without the node).
[[nodiscard]] std::string needs_every_node(const run_plan& plan) {
  const char* why = plan.algorithm().needs_every_node;
  return why ? why : "";
}

/// Index = node: its worker is running (not killed, or restarted since).
[[nodiscard]] std::vector<bool> workers_up(const sup_state& st) {
  std::vector<bool> up(st.nodes.size());
  for (std::size_t m = 0; m < st.nodes.size(); ++m)
    up[m] = st.crashed.count(st.nodes[m].worker.address()) == 0;
  return up;
}

/// Kills `a`; its down message is expected (not a failure).
void kill_child(sup_ptr self, const caf::actor& a) {
  if (!a)
    return;
  self->state.crashed.insert(a.address());
  self->send_exit(a, caf::exit_reason::kill);
}

/// The supervisor's side of an algorithm's recovery (recovery.hpp).
class sup_side final : public supervision {
public:
  explicit sup_side(sup_ptr self) : self_(self) {}
  caf::event_based_actor* self() override { return self_; }
  const context_ptr& ctx() const override { return self_->state.ctx; }
  std::vector<node_actors>& nodes() override { return self_->state.nodes; }
  std::vector<bool> workers_up() const override { return sup::workers_up(self_->state); }
  bool killed(const caf::actor& a) const override {
    return self_->state.crashed.count(a.address()) > 0;
  }
  bool stopping() const override { return self_->state.stopping; }
  const evaluator_actor& evaluator() const override { return self_->state.evaluator; }
  void kill(const caf::actor& a) override { kill_child(self_, a); }
  void adopt(const caf::actor& a, std::string name) override {
    sup::adopt(self_, a, std::move(name));
  }
  void adopt_replacement(std::uint32_t k, const caf::actor& a, const char* part,
                         const caf::actor_addr& old) override {
    sup::adopt_replacement(self_, k, a, part, old);
  }
  void count_restart(std::uint32_t k) override { ++self_->state.incarnations[k]; }
  void crash_closed() override { sup::crash_closed(self_); }
  void fail(const std::string& what) override { sup::fail(self_, what); }

private:
  sup_ptr self_;
};

/// Injected crash i: kill the worker (and the buffer for a whole node), tell
/// the evaluator, arm the restart or, when the algorithm cannot go on
/// without the node, end the run saying so.
void inject_crash(sup_ptr self, int i) {
  auto& st = self->state;
  if (st.stopping)
    return;
  if (st.ckpt && st.ckpt->active()) {
    st.crashes_deferred.push_back(i);  // a worker held at a barrier dies at its end
    return;
  }
  const auto& plan = *st.ctx->plan;
  const auto& c = plan.crashes.at(static_cast<std::size_t>(i));
  const auto k = c.node;
  auto& node = st.nodes.at(k);
  st.crash_fired.at(static_cast<std::size_t>(i)) = true;
  st.ctx->events.record(st.ctx->ns(self), k, event_kind::crash, static_cast<std::uint64_t>(i));
  kill_child(self, node.worker);
  const bool whole = c.whole_node && node.buffer && node.buffer != node.worker;
  if (whole)
    kill_child(self, node.buffer);
  const double t = st.ctx->seconds(self);
  if (c.whole_node && node.hub && node.hub != node.worker && node.hub != node.buffer) {
    // A hub's node (the spec refuses a whole-node restart of it).
    kill_child(self, node.hub);
    fail(self, "node " + std::to_string(k) + " crashed whole at " + std::to_string(t) + " s with " +
                 plan.algorithm().critical_role +
                 " it holds: the model it serves lives nowhere else, " + plan.algorithm_name() +
                 " cannot go on without it");
    return;
  }
  std::string effect = "killed at " + std::to_string(t) + " s";
  std::optional<loss_outcome> loss;
  if (c.restart_after_seconds) {
    ++st.crashes_open;
    self->delayed_send(self, to_timespan(*c.restart_after_seconds), restart_atom::value,
                       static_cast<std::uint64_t>(i));
    if (whole && st.recovery) {  // the survivors go on without it until then
      loss = st.recovery->lose(*st.side, node_loss{{k}, true, t, true, effect});
      if (!loss)
        return;  // the run ended saying why
      effect += loss->effect;
    }
  } else if (const auto why = needs_every_node(plan); !why.empty()) {
    fail(self, "node " + std::to_string(k) + " crashed at " + std::to_string(t) +
                 " s and is not restarted: " + plan.algorithm_name() +
                 " cannot go on without it (" + why + ")");
    return;
  } else if (st.recovery) {
    loss = st.recovery->lose(*st.side, node_loss{{k}, whole, t, false, effect});
    if (!loss)
      return;  // the run ended saying why
    effect += loss->effect;
  } else {
    effect += whole ? "; node lost for good (its gradient buffer's state with it), the others "
                      "go on"
                    : "; worker lost for good, the others go on";
  }
  // Gossip-style workers are their own "buffer": both are gone for the evaluator.
  const bool buffer_gone = whole || node.buffer == node.worker || (loss && loss->new_view);
  const auto fault = static_cast<std::uint64_t>(plan.faults.crash_index(i));
  self->send(st.evaluator, crash_atom::value, k, buffer_gone, fault, effect);
  if (loss && loss->new_view)
    st.recovery->start_view(*st.side, fault, 1, t);
}

/// `a` replaces node k's actor `old` (`part`: "worker", "gradient buffer"):
/// supervised, mapped to its node, and shown to a test's probe in old's place.
void adopt_replacement(sup_ptr self, std::uint32_t k, const caf::actor& a, const char* part,
                       const caf::actor_addr& old) {
  auto& st = self->state;
  adopt(self, a, "node " + std::to_string(k) + " " + part);
  st.node_of[a.address()] = k;
  if (auto& probe = st.ctx->probe)
    for (auto* shown : {&probe->workers, &probe->buffers})
      if (k < shown->size() && (*shown)[k] == old)
        (*shown)[k] = a.address();
}

/// Crash i's worker has been restarted and has joined: a checkpoint that
/// waited for it may begin (and sees the replacement).
void crash_closed(sup_ptr self) {
  auto& st = self->state;
  --st.crashes_open;
  if (!st.ckpt)
    return;
  st.ckpt->watch(st.nodes, st.links, st.evaluator);
  st.ckpt->quiet_again(self);
}

/// A restart an algorithm's join_fn carries out (after a crash, or a node's
/// join; its descriptor's follow_restarts, checked by the spec): a
/// replacement that keeps every message, every link re-pointed at it, then
/// its state the algorithm's way (join_replacement). Nobody else restarts.
void replace_worker(sup_ptr self, restart_order o) {
  auto& st = self->state;
  if (st.joining) {
    st.restarts_waiting.push_back(std::move(o));
    return;
  }
  const auto& plan = *st.ctx->plan;
  const auto k = o.node;
  worker_restart r;
  r.node = k;
  r.incarnation = ++st.incarnations[k];
  r.dead = st.nodes[k].worker.address();
  r.replacement = spawn_replacement(self, st.ctx, k, r.incarnation);
  if (!r.replacement)
    return fail(self, "node " + std::to_string(k) + ": " + plan.algorithm_name() +
                        " cannot restart a worker");
  const auto w = r.replacement;
  auto& node = st.nodes[k];
  if (node.buffer == node.worker)  // gossip-style: the worker is its own buffer
    node.buffer = w;
  node.worker = w;
  adopt_replacement(self, k, w, "worker", r.dead);  // gossip-style: the buffer too
  for (const auto& l : st.links)
    self->send(l, restart_atom::value, r.dead, w);
  r.nodes = st.nodes;
  r.links = st.links;
  if (st.ckpt)
    r.checkpoint = st.ckpt->last();
  st.joining = true;
  join_replacement(self, st.ctx, r, [self, o, w](const std::string& source) {
    auto& st = self->state;
    st.joining = false;
    if (st.stopping)
      return;
    st.ctx->events.record(st.ctx->ns(self), o.node, o.event, o.arg);
    const double t = st.ctx->seconds(self);
    self->send(st.evaluator, restart_atom::value, o.node, w, o.fault,
               o.before + ", " + o.verb + " at " + std::to_string(t) + " s with " + source);
    crash_closed(self);
    if (!st.restarts_waiting.empty()) {
      auto next = std::move(st.restarts_waiting.front());
      st.restarts_waiting.pop_front();
      replace_worker(self, std::move(next));
    }
  });
}

/// Restart after crash i (checked by the spec): the algorithm's own way
/// when it has one (its recovery), else replace_worker.
void restart_worker(sup_ptr self, int i) {
  auto& st = self->state;
  if (st.stopping)
    return;
  if (!st.recovery) {
    const auto& c = st.ctx->plan->crashes.at(static_cast<std::size_t>(i));
    restart_order o;
    o.node = c.node;
    o.fault = static_cast<std::uint64_t>(st.ctx->plan->faults.crash_index(i));
    o.arg = static_cast<std::uint64_t>(i);
    o.before = "killed at " + std::to_string(c.at_seconds) + " s";
    return replace_worker(self, std::move(o));
  }
  st.recovery->restart(*st.side, i);
}

/// Checkpoints: arms the spec's checkpoint times and, for a resumed run,
/// lets the restored workers go once every actor is up.
void arm_checkpoints(sup_ptr self) {
  auto& st = self->state;
  if (st.ctx->plan->checkpoint.enabled())
    st.ckpt->arm(self);
  if (st.ctx->resume)
    st.ckpt->start_resumed(self);
}

void start_checkpoints(sup_ptr self) {
  auto& st = self->state;
  if (!st.ctx->plan->checkpoint.enabled() && !st.ctx->resume)
    return;
  st.ckpt = std::make_shared<checkpointer>(
    st.ctx, [self](std::string reason) { begin_stop(self, std::move(reason)); },
    [self](std::string what) { fail(self, what); });
  st.ckpt->watch(st.nodes, st.links, st.evaluator);
  checkpointer::supervision sup;
  sup.quiet = [self] { return self->state.crashes_open == 0; };
  sup.after_go = [self] {
    auto& st = self->state;
    for (auto held = std::exchange(st.crashes_deferred, {}); !held.empty(); held.pop_front())
      inject_crash(self, held.front());
  };
  sup.save = [self](proto::SupervisorState& out) {
    const auto& st = self->state;
    for (std::size_t i = 0; i < st.crash_fired.size(); ++i)
      if (st.crash_fired[i])
        out.add_crashes_fired(static_cast<std::uint32_t>(i));
    for (int i : st.crashes_deferred)
      out.add_crashes_deferred(static_cast<std::uint32_t>(i));
    for (std::uint32_t k = 0; k < st.nodes.size(); ++k) {
      const auto it = st.incarnations.find(k);
      out.add_incarnations(it == st.incarnations.end() ? 0 : it->second);
    }
  };
  st.ckpt->supervise(std::move(sup));
  st.ckpt->watch_hosts(st.keepers);
  // A multi-host run resumed after its next evaluation was due (the hosts
  // took longer to prepare): that evaluation, of the restored models, comes
  // first; the first metric row then arms the checkpoints and lets go.
  st.resumed_eval_first = st.ctx->deploy && st.ctx->resume &&
                          st.ctx->resume->evaluator().next_eval_ns() <= st.ctx->ns(self);
  if (!st.resumed_eval_first)
    arm_checkpoints(self);
}

/// Arms the spec's crashes. A resumed run restores what the checkpoint says
/// of them: the ones that happened are not injected again, the ones its
/// barrier held back wait for the resumed barrier's go, the restarts so far
/// number the next incarnations.
void arm_crashes(sup_ptr self) {
  auto& st = self->state;
  const auto& ctx = *st.ctx;
  const auto& crashes = ctx.plan->crashes;
  st.crash_fired.assign(crashes.size(), false);
  std::vector<bool> held(st.crash_fired.size(), false);
  if (ctx.resume) {
    const auto& saved = ctx.resume->supervisor();
    for (auto i : saved.crashes_fired())
      st.crash_fired.at(i) = true;
    for (auto i : saved.crashes_deferred()) {
      held.at(i) = true;
      st.crashes_deferred.push_back(static_cast<int>(i));
    }
    for (std::uint32_t k = 0; k < static_cast<std::uint32_t>(saved.incarnations_size()); ++k)
      if (saved.incarnations(static_cast<int>(k)) > 0)
        st.incarnations[k] = saved.incarnations(static_cast<int>(k));
  }
  for (std::size_t i = 0; i < crashes.size(); ++i) {
    if (st.crash_fired[i] || held[i])
      continue;
    self->delayed_send(self, delay_until(ctx, self, crashes[i].at_seconds), crash_atom::value,
                       static_cast<std::uint64_t>(i));
  }
}

/// With every node spawned and wired: watch them, start the evaluator, arm
/// the injected crashes and the time budget.
void start_run(sup_ptr self, std::vector<node_actors> nodes, link_list links, caf::actor server) {
  auto& st = self->state;
  const auto& ctx = st.ctx;
  const auto& plan = *ctx->plan;
  if (ctx->probe) {
    if (server)
      ctx->probe->server = server.address();
    for (const auto& n : nodes) {
      ctx->probe->workers.push_back(n.worker.address());
      if (n.buffer)
        ctx->probe->buffers.push_back(n.buffer.address());
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto k = static_cast<std::uint32_t>(i);
    adopt(self, nodes[i].worker, "node " + std::to_string(i) + " worker");
    st.node_of[nodes[i].worker.address()] = k;
    if (nodes[i].buffer && nodes[i].buffer != nodes[i].worker) {  // gossip: one actor per node
      adopt(self, nodes[i].buffer, "node " + std::to_string(i) + " gradient buffer");
      st.node_of[nodes[i].buffer.address()] = k;
    }
    if (nodes[i].hub && nodes[i].hub != nodes[i].buffer) {
      adopt(self, nodes[i].hub, "node " + std::to_string(i) + " hub");
      st.node_of[nodes[i].hub.address()] = k;
    }
  }
  if (server && st.names.count(server.address()) == 0)
    adopt(self, server, st.ctx->plan->algorithm().evaluation.hub_label);
  for (const auto& l : links)
    adopt(self, caf::actor_cast<caf::actor>(l), "link");
  st.nodes = nodes;
  st.links = links;
  if (const auto make = plan.algorithm().recovery) {
    st.recovery = make(*ctx->plan);
    st.side = std::make_unique<sup_side>(self);
  }
  st.evaluator = spawn_evaluator(self, ctx, nodes, links, server, st.progress);
  adopt(self, caf::actor_cast<caf::actor>(st.evaluator), "evaluator");
  arm_crashes(self);
  arm_joins(self);
  if (!ctx->resume)  // a resumed evaluator arms its own next evaluation
    self->send(st.evaluator, eval_atom::value);
  if (plan.stop.time_seconds > 0)
    self->delayed_send(self,
                       ctx->resume ? delay_until(*ctx, self, plan.stop.time_seconds)
                                   : to_timespan(plan.stop.time_seconds),
                       stop_atom::value, std::string{"time budget spent"});
  start_checkpoints(self);
}

caf::behavior supervisor_actor(sup_ptr self, context_ptr ctx, caf::actor listener,
                               std::shared_ptr<run_sink> sink, bool progress) {
  name_exceptions(self);
  auto& st = self->state;
  st.progress = progress;
  st.ctx = ctx;
  st.listener = std::move(listener);
  st.sink = std::move(sink);
  ctx->t0 = self->clock().now();
  if (ctx->resume) {  // the run's clock reads the checkpoint's time from here on
    ctx->t0 -= caf::timespan{ctx->resume->time_ns()};
    ctx->events.restore(ctx->resume->trace_hash(), ctx->resume->trace_events());
  }
  // However the supervisor ends (killed by an embedding service, say), no
  // node actor may outlive it: they would keep re-arming their timers.
  self->attach_functor([children = st.children] {
    for (const auto& c : *children)
      caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
    children->clear();
  });
  if (ctx->deploy) {
    spawn_on_hosts(self);
  } else {
    link_list links;
    caf::actor server;
    auto spawned = spawn_algorithm(self, ctx, links, server);
    if (!spawned) {
      fail(self, error_text(spawned.error()));
      return {};
    }
    start_run(self, std::move(*spawned), std::move(links), server);
  }
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (!dm.reason || st.crashed.count(dm.source) > 0)
      return;
    // While stopping, a lost host still matters: the final evaluation may
    // be waiting on its nodes (host_lost lets it go on without them).
    if (st.stopping && !(dm.reason == caf::exit_reason::remote_link_unreachable && st.ctx->deploy))
      return;
    if (auto it = st.spawner_of.find(dm.source); it != st.spawner_of.end()) {
      // Once the nodes run, a lost host shows through its nodes (host_lost).
      if (!st.evaluator)
        fail(self, "host " + st.ctx->deploy->names[it->second] +
                     " was lost while it prepared its nodes: " + error_text(dm.reason) +
                     resume_hint(st, it->second));
      return;
    }
    if (dm.reason == caf::exit_reason::remote_link_unreachable && st.ctx->deploy) {
      if (auto it = st.node_of.find(dm.source); it != st.node_of.end())
        return host_lost(self, st.ctx->deploy->host_of.at(it->second));
    }
    auto it = st.names.find(dm.source);
    const std::string who = it != st.names.end() ? it->second : "an actor";
    fail(self, who + " failed: " + error_text(dm.reason));
  });
  return {
    [=](metric_atom, const metric_sample& row) {
      auto& st = self->state;
      if (std::exchange(st.resumed_eval_first, false) && !st.stopping)
        arm_checkpoints(self);
      if (st.sink) {
        std::lock_guard<std::mutex> guard{st.sink->mtx};
        st.sink->metrics.push_back(row);
      }
      if (st.listener)
        self->send(st.listener, metric_atom::value, row);
    },
    [=](crash_atom, std::uint64_t i) { inject_crash(self, static_cast<int>(i)); },
    [=](restart_atom, std::uint64_t i) { restart_worker(self, static_cast<int>(i)); },
    [=](join_atom, std::uint32_t k) -> caf::result<void> {
      auto done = join_node(self, k);
      if (done)
        return caf::unit;
      log_event(self, *self->state.ctx, "join_refused",
                "\"node\": " + std::to_string(k) +
                  ", \"reason\": " + json::quote(error_text(done.error())));
      // Only a request gets the error back: to a plain send CAF would deliver
      // it as an error message, which ends a sender that does not handle it.
      const auto* asked = self->current_mailbox_element();
      if (asked == nullptr || !asked->mid.is_request())
        return caf::unit;
      return std::move(done.error());
    },
    // A join's time (arm_joins): a node asked in earlier has joined already.
    [=](join_atom, std::uint32_t k, double) {
      if (self->state.absent.count(k) > 0)
        (void)join_node(self, k);
    },
    [=](stop_atom) { begin_stop(self, "stopped by request"); },
    [=](ckpt_timer_atom, double at) {
      auto& st = self->state;
      if (!st.ckpt || st.stopping)
        return;
      if (!st.lost_hosts.empty()) {  // (without this, the drain poll would time out)
        const auto h = *st.lost_hosts.begin();
        return fail(self, "checkpoint at " + std::to_string(at) + " s: host " +
                            st.ctx->deploy->names[h] +
                            " was lost earlier with its nodes and "
                            "the run went on without them; a checkpoint needs every node's state");
      }
      st.ckpt->begin(self, at);
    },
    [=](ckpt_poll_atom, std::uint64_t round) {
      if (self->state.ckpt && !self->state.stopping)
        self->state.ckpt->poll(self, round);
    },
    [=](stop_atom, std::string& reason) { begin_stop(self, std::move(reason)); },
  };
}

}  // namespace atrain::sup

namespace atrain {

caf::actor spawn_supervisor(caf::actor_system& sys, context_ptr ctx, caf::actor listener,
                            std::shared_ptr<run_sink> sink, bool progress) {
  return sys.spawn(sup::supervisor_actor, std::move(ctx), std::move(listener), std::move(sink),
                   progress);
}

}  // namespace atrain
