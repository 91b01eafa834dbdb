/// The evaluator's part of a checkpoint: its rows, heartbeats, the counters
/// of dead incarnations and when the next evaluation is due (save), and the
/// resumed run's start from them (restore).
#include <algorithm>

#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/run_log.hpp"
#include "atrain/actors/targets.hpp"
#include "evaluator_state.hpp"

namespace atrain::eval {

void arm_eval(eval_ptr self, caf::timespan delay) {
  self->state.next_eval_ns = self->state.ctx->ns(self) + delay.count();
  self->delayed_send(self, delay, eval_atom::value);
}

namespace {

void save_counters(const model_snapshot& m, proto::NodeCounters& c) {
  c.set_gradients(m.gradients);
  c.set_messages_sent(m.messages_sent);
  c.set_bytes_sent(m.bytes_sent);
  c.set_staleness_sum(m.staleness_sum);
  c.set_staleness_max(m.staleness_max);
  c.set_staleness_count(m.staleness_count);
  c.set_rejected(m.rejected);
  *c.mutable_fault_hits() = {m.fault_hits.begin(), m.fault_hits.end()};
  c.set_refused(m.refused);
  c.set_refused_since(m.refused_since);
  c.set_busy_seconds(m.busy_seconds);
  c.set_late(m.late);
}

model_snapshot load_counters(const proto::NodeCounters& c, std::uint32_t node) {
  model_snapshot m;
  m.node = node;
  m.gradients = c.gradients();
  m.messages_sent = c.messages_sent();
  m.bytes_sent = c.bytes_sent();
  m.staleness_sum = c.staleness_sum();
  m.staleness_max = c.staleness_max();
  m.staleness_count = c.staleness_count();
  m.rejected = c.rejected();
  m.fault_hits.assign(c.fault_hits().begin(), c.fault_hits().end());
  m.refused = c.refused();
  m.refused_since = c.refused_since();
  m.busy_seconds = c.busy_seconds();
  m.late = c.late();
  return m;
}

}  // namespace

std::string save_evaluator(const eval_state& st) {
  proto::EvaluatorState s;
  // Supervision: saved only when the run has crashes (a run without keeps
  // its checkpoints as before).
  if (!st.ctx->plan->crashes.empty()) {
    for (std::size_t i = 0; i < st.retired.size(); ++i) {
      save_counters(st.retired[i], *s.add_retired());
      save_counters(st.last[i], *s.add_last());
    }
    for (const auto& [fault, effect] : st.fault_effects) {
      auto* f = s.add_fault_effects();
      f->set_fault(fault);
      f->set_effect(effect);
    }
  }
  *s.mutable_report() = st.report;
  for (const auto& [node, straggler] : st.stragglers)
    *s.mutable_report()->add_stragglers() = straggler;
  for (const auto& [grads, busy] : st.heartbeat) {
    s.add_heartbeat_gradients(grads);
    s.add_heartbeat_busy(busy);
  }
  s.set_next_eval_ns(st.next_eval_ns);
  return s.SerializeAsString();
}

/// A resumed run: the rows so far, the heartbeats, the next evaluation at
/// its old time; a stop rule the last row already meets (under this spec)
/// stops the run at once.
void restore_evaluator(eval_ptr self) {
  auto& st = self->state;
  const auto& saved = st.ctx->resume->evaluator();
  st.report = saved.report();
  st.report.clear_stragglers();
  for (const auto& s : saved.report().stragglers())
    st.stragglers[s.node()] = s;
  const auto beats =
    std::min(st.heartbeat.size(), static_cast<std::size_t>(saved.heartbeat_gradients_size()));
  for (std::size_t i = 0; i < beats; ++i)
    st.heartbeat[i] = {saved.heartbeat_gradients(static_cast<int>(i)),
                       saved.heartbeat_busy(static_cast<int>(i))};
  for (std::size_t i = 0; i < st.retired.size(); ++i) {
    const auto k = static_cast<int>(i);
    const auto node = static_cast<std::uint32_t>(i);
    if (k < saved.retired_size())
      st.retired[i] = load_counters(saved.retired(k), node);
    if (k < saved.last_size())
      st.last[i] = load_counters(saved.last(k), node);
  }
  for (const auto& f : saved.fault_effects())
    st.fault_effects[f.fault()] = f.effect();
  if (st.log)  // the rows so far, so that the live file holds the whole run
    for (const auto& m : st.report.metrics())
      self->send(st.log, metric_atom::value, sample_of(m), false);
  const auto due = saved.next_eval_ns() - st.ctx->ns(self);
  arm_eval(self, caf::timespan{std::max<std::int64_t>(0, due)});
  const auto& stop = st.ctx->plan->stop;
  if (st.report.metrics_size() == 0)
    return;
  const auto& last = st.report.metrics(st.report.metrics_size() - 1);
  std::string reason;
  if (stop.stop_at_target && stop.target_accuracy > 0 &&
      judged_accuracy(stop, last) >= stop.target_accuracy)
    reason = "target accuracy reached";
  else if (stop.gradients > 0 && last.gradients() >= stop.gradients)
    reason = "gradient budget spent";
  if (!reason.empty()) {
    st.stop_sent = true;
    self->send(st.supervisor, stop_atom::value, reason);
  }
}

}  // namespace atrain::eval
