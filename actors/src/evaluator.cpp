#include "atrain/actors/evaluator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/compute.hpp"
#include "atrain/actors/exceptions.hpp"
#include "atrain/actors/node_scores.hpp"
#include "atrain/actors/progress.hpp"
#include "atrain/actors/run_log.hpp"
#include "atrain/actors/targets.hpp"
#include "atrain/kernels/vector_ops.hpp"
#include "atrain/messages/json.hpp"
#include "evaluator_state.hpp"

namespace atrain {

namespace {

using eval::add_counters;
using eval::answered;
using eval::arm_eval;
using eval::await_node;
using eval::eval_ptr;
using eval::eval_state;
using eval::fault_hits;
using eval::fill_report;
using eval::forget_finished;
using eval::gathering;
using eval::gathering_ptr;
using eval::restore_evaluator;
using eval::retired_only;
using eval::save_evaluator;
using eval::settle_lost_node;
using eval::summarize_rows;

/// One answer of a gathering in; the last one completes it.
void finish_one(const gathering_ptr& g) {
  if (--g->pending == 0)
    g->done(*g);
}

void fail(const gathering_ptr& g, const std::string& what, const caf::error& err) {
  g->errors.push_back(what + ": " + error_text(err));
  finish_one(g);
}

/// An actor on a host that was just lost, or killed by an injected crash,
/// answers request_receiver_down, which may come before the supervisor's
/// crash_atom (real clock: the kill and the crash_atom race with this
/// request); not an evaluation failure.
bool lost_meanwhile(eval_ptr self, const caf::error& e) {
  const auto& ctx = *self->state.ctx;
  return (ctx.spans_processes || !ctx.plan->crashes.empty()) &&
         e == caf::sec::request_receiver_down;
}

/// Node i's worker: its model snapshot (or its counters alone when down).
void ask_worker(eval_ptr self, const gathering_ptr& g, std::size_t i) {
  auto& st = self->state;
  if (st.worker_down[i]) {
    g->models[i] = retired_only(st, i);
    return;
  }
  await_node(*g, i, true);
  self
    ->request(caf::actor_cast<node_actor>(st.nodes[i].worker), st.ctx->reply_timeout(),
              model_atom::value)
    .then(
      [self, g, i](model_snapshot& s) {
        if (!answered(*g, i, true))
          return;
        auto& st = self->state;
        st.last[i] = s;
        g->models[i] = add_counters(std::move(s), st.retired[i]);
        finish_one(g);
      },
      [self, g, i](caf::error& e) {
        if (!answered(*g, i, true))
          return;
        auto& st = self->state;
        if (st.worker_down[i]) {
          g->models[i] = retired_only(st, i);  // crashed meanwhile
        } else if (lost_meanwhile(self, e)) {
          // left out of this evaluation; its counters as of the last one
          g->models[i] = add_counters(retired_only(st, i), st.last[i]);
        } else {
          return fail(g, "node " + std::to_string(i) + " worker", e);
        }
        finish_one(g);
      });
}

/// A buffer's failed answer: an error unless the buffer went down meanwhile.
auto buffer_failed(eval_ptr self, const gathering_ptr& g, std::size_t i) {
  return [self, g, i](caf::error& e) {
    if (!answered(*g, i, false))
      return;
    if (!self->state.buffer_down[i] && !lost_meanwhile(self, e))
      return fail(g, "node " + std::to_string(i) + " buffer", e);
    finish_one(g);
  };
}

/// Node i's gradient buffer, if it has one: its traffic, and its mass
/// account when `with_mass`.
void ask_buffer(eval_ptr self, const gathering_ptr& g, std::size_t i, bool with_mass) {
  auto& st = self->state;
  if (!st.nodes[i].buffer || st.buffer_down[i])
    return;
  await_node(*g, i, false);
  auto add_stats = [g, i](std::uint64_t msgs, std::uint64_t bytes, std::uint64_t rejected,
                          std::uint64_t old_epoch) {
    if (!answered(*g, i, false))
      return;
    g->buffer_messages += msgs;
    g->buffer_bytes += bytes;
    g->node_buffer_messages[i] += msgs;
    g->node_buffer_bytes[i] += bytes;
    g->rejected += rejected;
    g->old_epoch += old_epoch;
    finish_one(g);
  };
  // Its routes to other processes, asked before its counters: answered in
  // order, so the sends counted there never exceed the messages counted after.
  if (st.ctx->may_flow_control() && st.nodes[i].buffer != st.nodes[i].worker) {
    await_node(*g, i, false);
    self->request(st.nodes[i].buffer, st.ctx->reply_timeout(), wire_atom::value)
      .then(
        [g, i](std::vector<route_traffic>& w) {
          if (!answered(*g, i, false))
            return;
          g->node_buffer_wire[i] = std::move(w);
          finish_one(g);
        },
        buffer_failed(self, g, i));
  }
  // Buffers with a mass account also count the packets dropped for another epoch.
  if (st.ctx->plan->algorithm().evaluation.mass_residual)
    self->request(st.nodes[i].buffer, st.ctx->reply_timeout(), stats_atom::value, epoch_atom::value)
      .then(add_stats, buffer_failed(self, g, i));
  else
    self->request(st.nodes[i].buffer, st.ctx->reply_timeout(), stats_atom::value)
      .then([add_stats](std::uint64_t msgs, std::uint64_t bytes,
                        std::uint64_t rejected) { add_stats(msgs, bytes, rejected, 0); },
            buffer_failed(self, g, i));
  if (!with_mass)
    return;
  await_node(*g, i, false);
  self->request(st.nodes[i].buffer, st.ctx->reply_timeout(), mass_atom::value)
    .then(
      [g, i](mass_account& a) {
        if (!answered(*g, i, false))
          return;
        g->masses.push_back(std::move(a));
        finish_one(g);
      },
      buffer_failed(self, g, i));
}

/// Links whose counters one evaluation has asked for and not received yet.
/// CAF 0.17 keeps an actor's pending responses in a flat vector, so L
/// requests in flight cost O(L^2) as their answers come in: 30 s per
/// evaluation at 4,096 nodes (188,416 links) when all were asked at once.
constexpr std::size_t links_in_flight = 1024;

/// The links one evaluation asks, [next, end) still to ask. A new tracking
/// epoch appends links meanwhile (adopt_epoch): they wait for the next one.
struct link_cursor {
  std::size_t next = 0;
  std::size_t end = 0;
};

/// Asks the cursor's next link for its counters; each answer asks the next one.
void ask_next_link(eval_ptr self, const gathering_ptr& g,
                   const std::shared_ptr<link_cursor>& next) {
  auto& st = self->state;
  if (next->next >= next->end)
    return;
  self->request(st.links[next->next++], st.ctx->reply_timeout(), stats_atom::value)
    .then(
      [self, g, next](link_stats& s) {
        g->links.push_back(s);
        finish_one(g);  // never the last while links are left to ask
        ask_next_link(self, g, next);
      },
      [self, g, next](caf::error& e) {
        fail(g, "link", e);
        ask_next_link(self, g, next);
      });
}

/// The hub's model (a parameter server) and every link's counters.
void ask_hub_and_links(eval_ptr self, const gathering_ptr& g) {
  auto& st = self->state;
  if (st.server) {
    ++g->pending;
    self->request(st.server, st.ctx->reply_timeout(), model_atom::value)
      .then(
        [g](model_snapshot& s) {
          g->server = std::move(s);
          finish_one(g);
        },
        [self, g](caf::error& e) {
          fail(g, self->state.ctx->plan->algorithm().evaluation.hub_label, e);
        });
  }
  g->pending += st.links.size();
  auto next = std::make_shared<link_cursor>(link_cursor{0, st.links.size()});
  for (std::size_t k = 0; k < std::min(links_in_flight, st.links.size()); ++k)
    ask_next_link(self, g, next);
}

/// Asks every node, the hub and the links for what an evaluation needs;
/// `done(self, all)` once every answer (or its failure) is in.
template <class Done>
void gather(eval_ptr self, bool with_mass, Done done) {
  auto& st = self->state;
  auto g = std::make_shared<gathering>();
  g->models.resize(st.nodes.size());
  g->node_buffer_messages.assign(st.nodes.size(), 0);
  g->node_buffer_bytes.assign(st.nodes.size(), 0);
  g->node_buffer_wire.resize(st.nodes.size());
  g->awaiting.assign(st.nodes.size(), 0);
  g->worker_awaited.assign(st.nodes.size(), false);
  g->settled.assign(st.nodes.size(), false);
  g->done = [self, done](const gathering& all) mutable { done(self, all); };
  forget_finished(st);
  st.open.push_back(g);
  for (std::size_t i = 0; i < st.nodes.size(); ++i) {
    ask_worker(self, g, i);
    ask_buffer(self, g, i, with_mass);
  }
  ask_hub_and_links(self, g);
  // Nothing to ask (a single node whose only worker is down).
  if (g->pending == 0)
    g->done(*g);
}

/// True when some node reports a push-sum weight other than 1.
bool uses_push_sum(const std::vector<model_snapshot>& models) {
  return std::any_of(models.begin(), models.end(),
                     [](const model_snapshot& s) { return s.weight != 1.0; });
}

/// evaluated = (1/n) sum_i x_i; returns the consensus error (1/n) sum_i |x_i - evaluated|^2.
double node_average(const std::vector<model_snapshot>& models, std::vector<float>& evaluated) {
  const std::size_t dim = evaluated.size();
  std::vector<double> mean(dim, 0.0);
  for (const auto& s : models)
    vec::axpy(1.0 / static_cast<double>(models.size()), s.params.ptr(), mean.data(), dim);
  vec::copy(mean.data(), evaluated.data(), dim);
  double consensus = 0;
  for (const auto& s : models)
    consensus += vec::squared_distance(s.params.ptr(), evaluated.data(), dim);
  return consensus / static_cast<double>(models.size());
}

/// Push-sum (params = numerator x_i, weight w_i): evaluated = sum_i x_i /
/// sum_i w_i; returns the consensus error of the de-biased models z_i =
/// x_i / w_i around it, (1/n) sum_i |z_i - evaluated|^2.
double push_sum_average(const std::vector<model_snapshot>& models, std::vector<float>& evaluated) {
  const std::size_t dim = evaluated.size();
  std::vector<double> num(dim, 0.0);
  double weight = 0;
  for (const auto& s : models) {
    vec::axpy(1.0, s.params.ptr(), num.data(), dim);
    weight += s.weight;
  }
  for (std::size_t k = 0; k < dim; ++k)
    evaluated[k] = static_cast<float>(num[k] / weight);
  double consensus = 0;
  for (const auto& s : models)
    for (std::size_t k = 0; k < dim; ++k) {
      const double e = static_cast<double>(s.params.ptr()[k]) / s.weight - evaluated[k];
      consensus += e * e;
    }
  return consensus / static_cast<double>(models.size());
}

/// Evaluates the gathered models into one metric row (and the report's totals);
/// the evaluated model into `evaluated_out` when given.
metric_sample evaluate(eval_ptr self, const gathering& g,
                       std::vector<float>* evaluated_out = nullptr) {
  auto& st = self->state;
  const auto& plan = *st.ctx->plan;
  const std::size_t dim = plan.dim();
  metric_sample row;
  row.time_seconds = st.ctx->seconds(self);
  for (const auto& s : g.models) {
    row.gradients += s.gradients;
    row.messages += s.messages_sent;
    row.bytes += s.bytes_sent;
  }
  row.messages += g.buffer_messages;
  row.bytes += g.buffer_bytes;
  for (const auto& l : g.links)
    row.dropped += l.dropped;
  // Models of the nodes that are up (a crashed worker has none).
  std::vector<model_snapshot> alive;
  for (const auto& s : g.models)
    if (!s.params.empty())
      alive.push_back(s);
  std::vector<float> evaluated(dim);
  if (alive.empty()) {
    std::copy(plan.x0.begin(), plan.x0.end(), evaluated.begin());
  } else if (g.server) {
    // The hub's model is the evaluated one; the consensus error
    // measures the workers' copies around it.
    row.messages += g.server->messages_sent;
    row.bytes += g.server->bytes_sent;
    std::copy_n(g.server->params.ptr(), dim, evaluated.data());
    double consensus = 0;
    for (const auto& s : alive)
      consensus += vec::squared_distance(s.params.ptr(), evaluated.data(), dim);
    row.consensus_error = consensus / static_cast<double>(alive.size());
  } else {
    row.consensus_error =
      uses_push_sum(alive) ? push_sum_average(alive, evaluated) : node_average(alive, evaluated);
  }
  single_threaded_kernels();
  if (plan.topo && plan.topo->tree) {
    const auto root = st.root;
    if (!g.models.at(root).params.empty())  // else the root is down: the live nodes' average
      std::copy_n(g.models.at(root).params.ptr(), dim, evaluated.data());
  }
  row.train_loss = st.m->loss(whole(st.train_subset), evaluated.data());
  row.test_accuracy = st.m->accuracy(whole(*plan.test), evaluated.data());
  score_nodes(*st.m, *plan.test, st.train_subset, alive, plan.eval.node_models, row);
  if (evaluated_out)
    *evaluated_out = std::move(evaluated);
  return row;
}

/// Compares every node's seconds per gradient over the last period with the
/// median: above 2x it is a straggler (recorded once, with its worst
/// factor); back under 1.5x it has recovered. Works for synchronous
/// algorithms too, where every node makes as many gradients but the
/// straggler spends longer on each.
void detect_stragglers(caf::local_actor* self, eval_state& st, const gathering& g, double now) {
  std::vector<std::pair<std::uint32_t, double>> cost;  // node, seconds per gradient
  for (const auto& s : g.models) {
    auto& [grads, busy] = st.heartbeat.at(s.node);
    if (!s.params.empty() && s.gradients > grads)
      cost.emplace_back(s.node, (s.busy_seconds - busy) / static_cast<double>(s.gradients - grads));
    grads = s.gradients;
    busy = s.busy_seconds;
  }
  if (cost.size() < 3)
    return;  // no meaningful median
  std::vector<double> sorted;
  for (const auto& c : cost)
    sorted.push_back(c.second);
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double median = sorted[sorted.size() / 2];
  if (!(median > 0))
    return;
  for (const auto& [node, c] : cost) {
    const double factor = c / median;
    auto it = st.stragglers.find(node);
    if (factor > 2) {
      if (it == st.stragglers.end()) {
        proto::Straggler s;
        s.set_node(node);
        s.set_detected_seconds(now);
        s.set_slowest_factor(factor);
        st.stragglers.emplace(node, s);
        log_event(self, *st.ctx, "straggler",
                  "\"node\": " + std::to_string(node) + ", \"factor\": " + json::number(factor));
      } else {
        it->second.set_slowest_factor(std::max(it->second.slowest_factor(), factor));
      }
    } else if (it != st.stragglers.end() && factor < 1.5 && !it->second.has_recovered_seconds()) {
      it->second.set_recovered_seconds(now);
      log_event(self, *st.ctx, "straggler_recovered", "\"node\": " + std::to_string(node));
    }
  }
}

/// Appends the row, or with `replace` overwrites the last one (the final
/// evaluation at the time of the last periodic one: one row per time).
void record_row(eval_ptr self, const metric_sample& row, bool last, bool replace = false) {
  auto& st = self->state;
  const auto& stop = st.ctx->plan->stop;
  auto* m = replace && st.report.metrics_size() > 0
              ? st.report.mutable_metrics(st.report.metrics_size() - 1)
              : st.report.add_metrics();
  set_row(*m, row);
  st.ctx->events.record(st.ctx->ns(self), 0, event_kind::evaluate, row.gradients,
                        static_cast<std::uint64_t>(row.test_accuracy * 1e9));
  for (auto& r : st.recoveries)
    if (!r.back_at && row.time_seconds > r.lost_at && row.test_accuracy >= r.accuracy_before)
      r.back_at = row.time_seconds;
  const double target = stop.target_accuracy;
  if (target > 0 && judged_accuracy(stop, row) >= target && !st.report.has_time_to_target())
    st.report.set_time_to_target(row.time_seconds);
  if (st.progress)  // wall time for the display only, never for the run
    print_progress(
      *st.ctx->plan, row,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - st.wall_start).count(),
      last);
  if (st.log)
    self->send(st.log, metric_atom::value, row, replace);
  self->send(st.supervisor, metric_atom::value, row);
  if (last || st.stop_sent)
    return;
  std::string reason;
  if (stop.stop_at_target && st.report.has_time_to_target())
    reason = "target accuracy reached";
  else if (stop.gradients > 0 && row.gradients >= stop.gradients)
    reason = "gradient budget spent";
  if (!reason.empty()) {
    st.stop_sent = true;
    self->send(st.supervisor, stop_atom::value, reason);
  }
}

/// The live log: each windowed fault (straggle, partition, ...) the first
/// time an evaluation finds it acted (its counters above zero).
void log_faults_acting(eval_ptr self, const gathering& g) {
  auto& st = self->state;
  if (!st.ctx->log)
    return;
  const auto& faults = st.ctx->plan->faults;
  const auto hits = fault_hits(faults.size(), g);
  st.fault_seen.resize(hits.size(), false);
  const auto described = faults.describe();
  for (std::size_t i = 0; i < hits.size() && i < described.size(); ++i) {
    if (hits[i] == 0 || st.fault_seen[i])
      continue;
    st.fault_seen[i] = true;
    const auto& d = described[i];
    log_event(self, *st.ctx, "fault",
              "\"kind\": " + json::quote(d.kind) + ", \"what\": " + json::quote(d.what) +
                ", \"from_seconds\": " + json::number(d.from) +
                ", \"hits\": " + json::integer(hits[i]));
  }
}

/// A new view of the run (a tracking epoch): its root, the links spawned for its new
/// edges, the relaying buffers retired with the old one.
void adopt_epoch(eval_state& st, std::uint32_t epoch, std::uint32_t root, const link_list& links,
                 const std::vector<std::uint32_t>& buffers_gone) {
  st.epoch = epoch;
  st.root = root;
  st.links.insert(st.links.end(), links.begin(), links.end());
  for (auto k : buffers_gone)
    st.buffer_down.at(k) = true;
}

/// An evaluation finished gathering: state requests waiting for it go out.
void eval_gathered(eval_ptr self) {
  auto& st = self->state;
  if (--st.gathering > 0)
    return;
  for (auto& rp : std::exchange(st.state_waiting, {}))
    rp.deliver(save_evaluator(st));
}

/// A periodic evaluation: gather, then a metrics row (or the run stops
/// with the reason an answer failed). False once the run is finished.
bool evaluate_now(eval_ptr self) {
  if (self->state.finished)
    return false;
  ++self->state.gathering;
  gather(self, false, [](eval_ptr self, const gathering& g) {
    eval_gathered(self);
    if (self->state.finished)
      return;
    for (const auto& e : g.errors)
      self->send(self->state.supervisor, stop_atom::value, "evaluation failed: " + e);
    if (!g.errors.empty())
      return;
    const auto row = evaluate(self, g);
    detect_stragglers(self, self->state, g, row.time_seconds);
    log_faults_acting(self, g);
    record_row(self, row, false);
  });
  return true;
}

/// Node k's worker is down (an injected crash, or its host lost: unplanned).
void node_crashed(eval_ptr self, std::uint32_t k, bool buffer_gone, std::uint64_t fault,
                  std::string& effect) {
  auto& st = self->state;
  st.worker_down.at(k) = true;
  st.buffer_down.at(k) = st.buffer_down.at(k) || buffer_gone;
  st.retired[k] = add_counters(st.retired[k], st.last[k]);
  st.last[k] = {};
  if (fault == unplanned_fault) {
    proto::FaultRecord f;
    f.set_kind("host_lost");
    f.set_what("node " + std::to_string(k));
    f.set_from_seconds(st.ctx->seconds(self));
    // The supervisor's text: "host HOST:PORT lost at ..."
    if (effect.rfind("host ", 0) == 0)
      f.set_host(effect.substr(5, effect.find(' ', 5) - 5));
    log_event(self, *st.ctx, "host_lost",
              "\"node\": " + std::to_string(k) + ", \"host\": " + json::quote(f.host()) +
                ", \"effect\": " + json::quote(effect));
    f.set_effect(std::move(effect));
    st.unplanned.push_back(std::move(f));
    settle_lost_node(st, k);
  } else {
    log_event(self, *st.ctx, "crash",
              "\"node\": " + std::to_string(k) + ", \"effect\": " + json::quote(effect));
    st.fault_effects[fault] = std::move(effect);
  }
}

/// The last evaluation (with the mass accounts where the algorithm keeps
/// them), then the whole report.
caf::typed_response_promise<report_bytes> final_report(eval_ptr self) {
  auto rp = self->make_response_promise<report_bytes>();
  self->state.finished = true;
  const bool mass = self->state.ctx->plan->algorithm().evaluation.mass_residual;
  gather(self, mass, [rp](eval_ptr self, const gathering& g) mutable {
    metric_sample row;
    if (g.errors.empty()) {
      std::vector<float> x;
      row = evaluate(self, g, &x);
      record_final_heterogeneity(self->state, x);
      const auto& rows = self->state.report.metrics();
      const auto& stop = self->state.ctx->plan->stop;
      auto reached = [&](double accuracy) {
        return stop.target_accuracy > 0 && accuracy >= stop.target_accuracy;
      };
      // The evaluation at the stop replaces the periodic one of the same
      // time (one row per time) unless that one reached the target and
      // this one, taken after later events of the same instant, does not:
      // the report would then say "stopped at the target, never reached".
      const bool replace = !rows.empty() &&
                           rows[rows.size() - 1].time_seconds() == row.time_seconds &&
                           !(reached(judged_accuracy(stop, rows[rows.size() - 1])) &&
                             !reached(judged_accuracy(stop, row)));
      record_row(self, row, true, replace);
    }
    fill_report(self->state, g, row);
    report_bytes out;
    self->state.report.SerializeToString(&out.bytes);
    rp.deliver(std::move(out));
  });
  return rp;
}

evaluator_actor::behavior_type evaluator_impl(eval_ptr self, context_ptr ctx,
                                              std::vector<node_actors> nodes, link_list links,
                                              caf::actor server, caf::actor supervisor,
                                              bool progress) {
  name_exceptions(self);
  auto& st = self->state;
  const auto& plan = *ctx->plan;
  st.ctx = ctx;
  st.nodes = std::move(nodes);
  st.links = std::move(links);
  st.server = std::move(server);
  st.supervisor = caf::actor_cast<evaluator_listener>(std::move(supervisor));
  st.log = caf::actor_cast<metric_log>(ctx->log);
  st.progress = progress;
  st.m = plan.prototype->clone();
  st.train_subset = select_rows(*plan.train, plan.train_eval_rows);
  st.worker_down.assign(st.nodes.size(), false);
  st.buffer_down.assign(st.nodes.size(), false);
  st.last.resize(st.nodes.size());
  st.retired.resize(st.nodes.size());
  st.heartbeat.assign(st.nodes.size(), {0, 0.0});
  if (plan.topo)
    st.root = plan.topo->roots.front();
  const double period = plan.eval.period_seconds;
  if (ctx->resume)
    restore_evaluator(self);
  return {
    [=](eval_atom) {
      if (evaluate_now(self))
        arm_eval(self, to_timespan(period));
    },
    [=](crash_atom, std::uint32_t k, bool buffer_gone, std::uint64_t fault, std::string& effect) {
      node_crashed(self, k, buffer_gone, fault, effect);
    },
    [=](restart_atom, std::uint32_t k, caf::actor& worker, std::uint64_t fault,
        std::string& effect) {
      auto& st = self->state;
      auto& node = st.nodes.at(k);
      if (node.buffer == node.worker) {  // gossip-style: the worker is its own buffer
        node.buffer = worker;
        st.buffer_down[k] = false;
      }
      node.worker = std::move(worker);
      st.worker_down[k] = false;
      log_event(self, *st.ctx, "restart",
                "\"node\": " + std::to_string(k) + ", \"effect\": " + json::quote(effect));
      st.fault_effects[fault] = std::move(effect);
    },
    // A whole node restarted (a recovery policy): the view that takes it
    // back (no loss to recover from), then its new worker and buffer.
    [=](epoch_atom, std::uint32_t epoch, std::uint32_t root, link_list& links,
        const std::vector<std::uint32_t>& buffers_gone) {
      adopt_epoch(self->state, epoch, root, links, buffers_gone);
    },
    [=](restart_atom, std::uint32_t k, caf::actor& worker, caf::actor& buffer, std::uint64_t fault,
        std::string& effect) {
      auto& st = self->state;
      st.nodes.at(k).worker = std::move(worker);
      st.nodes[k].buffer = std::move(buffer);
      st.worker_down[k] = false;
      st.buffer_down[k] = false;
      log_event(self, *st.ctx, "restart",
                "\"node\": " + std::to_string(k) + ", \"effect\": " + json::quote(effect));
      st.fault_effects[fault] = std::move(effect);
    },
    // A new view after a loss (a recovery policy): its root, the
    // links spawned for new edges, the relaying buffers retired with it, and
    // when the loss that caused it happened.
    [=](epoch_atom, std::uint32_t epoch, std::uint32_t root, link_list& links,
        const std::vector<std::uint32_t>& buffers_gone, std::uint64_t fault, std::uint32_t records,
        double lost_at) {
      auto& st = self->state;
      adopt_epoch(st, epoch, root, links, buffers_gone);
      eval_state::recovery rec;
      rec.fault = fault;
      rec.records =
        fault == unplanned_fault ? std::min<std::size_t>(records, st.unplanned.size()) : 0;
      rec.unplanned = st.unplanned.size() - rec.records;
      rec.lost_at = lost_at;
      rec.accuracy_before = st.report.metrics_size() > 0
                              ? st.report.metrics(st.report.metrics_size() - 1).test_accuracy()
                              : 0.0;
      st.recoveries.push_back(rec);
    },
    [=](ckpt_state_atom) -> caf::result<std::string> {
      auto& st = self->state;
      if (st.gathering == 0)
        return save_evaluator(st);
      st.state_waiting.push_back(self->make_response_promise());
      return caf::delegated<std::string>{};
    },
    [=](final_atom) { return final_report(self); },
  };
}

}  // namespace

evaluator_actor spawn_evaluator(caf::event_based_actor* supervisor, const context_ptr& ctx,
                                std::vector<node_actors> nodes, link_list links, caf::actor server,
                                bool progress) {
  return supervisor->spawn(evaluator_impl, ctx, std::move(nodes), std::move(links),
                           std::move(server), caf::actor_cast<caf::actor>(supervisor), progress);
}

}  // namespace atrain
