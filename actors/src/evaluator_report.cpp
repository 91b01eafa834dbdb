/// The run report's sections from the evaluator's final gathering
/// (evaluator_state.hpp).
#include <algorithm>
#include <cstdio>

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/evaluator.hpp"
#include "atrain/actors/targets.hpp"
#include "atrain/kernels/heterogeneity.hpp"
#include "evaluator_state.hpp"

namespace atrain::eval {

/// How often each injected fault acted, summed over the compute units and
/// links that counted it.
std::vector<std::uint64_t> fault_hits(std::size_t faults, const gathering& g) {
  std::vector<std::uint64_t> hits(faults, 0);
  auto add = [&](const std::vector<std::uint64_t>& h) {
    for (std::size_t i = 0; i < h.size() && i < hits.size(); ++i)
      hits[i] += h[i];
  };
  for (const auto& s : g.models)
    add(s.fault_hits);
  for (const auto& l : g.links)
    add(l.fault_hits);
  return hits;
}

namespace {

/// The report's faults section: each injected fault with how often it
/// acted, summed over the compute units and links that counted it.
void fill_faults(proto::RunReport& r, const fault_schedule& faults, const gathering& g,
                 const std::map<std::size_t, std::string>& effects) {
  const auto hits = fault_hits(faults.size(), g);
  const auto described = faults.describe();
  for (std::size_t i = 0; i < described.size(); ++i) {
    const auto& d = described[i];
    auto* f = r.add_faults();
    f->set_kind(d.kind);
    f->set_what(d.what);
    f->set_from_seconds(d.from);
    if (d.to > 0)
      f->set_to_seconds(d.to);
    const std::string n = std::to_string(hits[i]);
    if (d.kind == "straggle")
      f->set_effect(n + " gradients computed slowed down");
    else if (d.kind == "partition")
      f->set_effect(n + " packet transmissions cut");
    else if (d.kind == "loss_burst")
      f->set_effect(n + " packet transmissions exposed to the burst");
    else if (d.kind == "delay_spike")
      f->set_effect(n + " packet transmissions delayed");
    else if (d.kind == "crash")
      f->set_effect(effects.count(i) > 0 ? effects.at(i) : "not injected: the run ended first");
    else if (d.kind == "join")
      f->set_effect(effects.count(i) > 0 ? effects.at(i) : "absent from the start");
    else
      f->set_effect(n + " gradients corrupted");
  }
}

/// Appends a re-rooting's recovery to its fault record.
void add_recovery(proto::RunReport& r, const eval_state::recovery& rec, int planned) {
  const bool host = rec.fault == unplanned_fault;
  const auto first = host ? planned + static_cast<int>(rec.unplanned) : static_cast<int>(rec.fault);
  const auto count = host ? static_cast<int>(rec.records) : 1;
  char level[32];
  std::snprintf(level, sizeof level, "%.4f", rec.accuracy_before);
  for (int at = first; at < first + count && at < r.faults_size(); ++at) {
    auto* f = r.mutable_faults(at);
    if (rec.back_at) {
      f->set_recovery_seconds(*rec.back_at - rec.lost_at);
      f->set_effect(f->effect() + "; test accuracy back to " + level +
                    " (its last value before the loss) at " + std::to_string(*rec.back_at) +
                    " s: recovered in " + std::to_string(*rec.back_at - rec.lost_at) + " s");
    } else {
      f->set_effect(f->effect() + "; test accuracy not back to " + level +
                    " (its last value before the loss) by the end of the run");
    }
  }
}

}  // namespace

/// From the rows as they stand (the final one may have replaced a periodic
/// one): the first time at the target, and the best accuracy with its time.
void summarize_rows(proto::RunReport& r, const stop_settings& stop) {
  set_targets(r, stop);
  r.clear_best_test_accuracy();
  r.clear_best_test_accuracy_seconds();
  for (const auto& m : r.metrics()) {
    if (m.test_accuracy() > r.best_test_accuracy()) {
      r.set_best_test_accuracy(m.test_accuracy());
      r.set_best_test_accuracy_seconds(m.time_seconds());
    }
  }
}

void record_final_heterogeneity(eval_state& st, const std::vector<float>& x) {
  const auto& plan = *st.ctx->plan;
  const auto h =
    measure_heterogeneity(*st.m, *plan.train, plan.shard, x.data(), 0, 0, plan.zeta2_rows);
  st.report.mutable_data_split()->set_zeta2_final(h.zeta2);
}

/// One sender's routes to other processes into node `n`'s report and the run's sums.
void add_wire(proto::RunReport& r, proto::NodeReport& n, const char* sender,
              const std::vector<route_traffic>& wire) {
  for (const auto& w : wire) {
    auto* t = n.add_wire();
    t->set_to(w.to);
    t->set_sender(sender);
    t->set_sends(w.sends);
    t->set_packets(w.packets);
    t->set_bytes(w.bytes);
    t->set_merged(w.merged);
    t->set_dropped(w.dropped);
    t->set_waiting(w.waiting);
    t->set_round_trip_seconds(w.round_trip_seconds);
    t->set_code_seconds(w.code_seconds);
    r.set_wire_packets(r.wire_packets() + w.packets);
    r.set_wire_bytes(r.wire_bytes() + w.bytes);
    r.set_packets_merged(r.packets_merged() + w.merged);
  }
}

void fill_report(eval_state& st, const gathering& g, const metric_sample& row) {
  const auto& plan = *st.ctx->plan;
  auto& r = st.report;
  r.mutable_final()->set_train_loss(row.train_loss);
  r.mutable_final()->set_test_accuracy(row.test_accuracy);
  r.mutable_final()->set_nodes_evaluated(row.nodes_evaluated);
  r.mutable_final()->set_node_test_accuracy_mean(row.node_test_accuracy_mean);
  r.mutable_final()->set_node_test_accuracy_min(row.node_test_accuracy_min);
  r.mutable_final()->set_node_train_loss_max(row.node_train_loss_max);
  r.mutable_final()->set_worst_node(row.worst_node);
  r.set_gradients_total(row.gradients);
  r.set_messages_sent(row.messages);
  r.set_bytes_sent(row.bytes);
  r.set_packets_dropped(row.dropped);
  std::uint64_t replaced = 0, retransmitted = 0;
  for (const auto& l : g.links) {
    replaced += l.replaced;
    retransmitted += l.retransmitted;
  }
  r.set_packets_replaced(replaced);
  r.set_packets_retransmitted(retransmitted);
  std::uint64_t rejected = g.rejected;  // by buffers
  for (const auto& s : g.models)
    rejected += s.rejected;  // by workers that receive packets themselves
  if (g.server)
    rejected += g.server->rejected;
  r.set_packets_rejected(rejected);
  r.set_packets_old_epoch(g.old_epoch);
  r.set_consensus_error(row.consensus_error);
  r.set_duration_seconds(row.time_seconds);
  double s_sum = 0, s_max = 0;
  std::uint64_t s_count = 0, late = 0;
  for (const auto& s : g.models) {
    auto* n = r.add_per_node();
    n->set_node(s.node);
    n->set_gradients(s.gradients);
    n->set_seconds_per_gradient(s.gradients ? s.busy_seconds / static_cast<double>(s.gradients)
                                            : 0.0);
    n->set_process_cpu_seconds(s.process_cpu_seconds);
    n->set_gradient_cpu_seconds(s.gradient_cpu_seconds);
    n->set_gradient_wall_seconds(s.gradient_wall_seconds);
    // Everything the node's actors sent: the worker, its gradient buffer,
    // and the evaluated hub when it runs on this node (sums = totals).
    const auto k = static_cast<std::size_t>(s.node);
    const auto buf_msgs = k < g.node_buffer_messages.size() ? g.node_buffer_messages[k] : 0;
    const auto buf_bytes = k < g.node_buffer_bytes.size() ? g.node_buffer_bytes[k] : 0;
    n->set_buffer_messages_sent(buf_msgs);
    n->set_buffer_bytes_sent(buf_bytes);
    n->set_messages_sent(s.messages_sent + buf_msgs);
    n->set_bytes_sent(s.bytes_sent + buf_bytes);
    if (g.server && g.server->node == s.node) {  // the server runs on this node
      n->set_messages_sent(n->messages_sent() + g.server->messages_sent);
      n->set_bytes_sent(n->bytes_sent() + g.server->bytes_sent);
    }
    add_wire(r, *n, "worker", s.wire);
    if (k < g.node_buffer_wire.size())
      add_wire(r, *n, "buffer", g.node_buffer_wire[k]);
    if (g.server && g.server->node == s.node)
      add_wire(r, *n, "server", g.server->wire);
    n->set_staleness_mean(s.staleness_count ? s.staleness_sum / s.staleness_count : 0.0);
    n->set_staleness_max(s.staleness_max);
    n->set_late_contributions(s.late);
    late += s.late;
    s_sum += s.staleness_sum;
    s_count += s.staleness_count;
    s_max = std::max(s_max, s.staleness_max);
  }
  r.set_staleness_mean(s_count ? s_sum / static_cast<double>(s_count) : 0.0);
  r.set_staleness_max(s_max);
  r.set_late_contributions(late);
  const auto& algo = plan.algorithm();
  if (!g.masses.empty() && algo.evaluation.mass_residual)
    r.set_mass_residual(algo.evaluation.mass_residual(g.masses, nullptr));
  if (g.server)
    r.set_evaluated_model(std::string{algo.evaluation.hub_label} + " (node " +
                          std::to_string(g.server->node) + ")");
  else if (plan.topo && plan.topo->tree && st.worker_down.at(st.root))
    r.set_evaluated_model("live nodes' average (the common root, node " + std::to_string(st.root) +
                          ", is down)");
  else if (plan.topo && plan.topo->tree)
    r.set_evaluated_model(
      "common root (node " + std::to_string(st.root) + ")" +
      (st.epoch > 0 ? ", since the re-rooting of tracking epoch " + std::to_string(st.epoch)
                    : std::string{}));
  else if (algo.evaluation.average_label && g.models.size() > 1)
    r.set_evaluated_model(algo.evaluation.average_label);
  else
    r.set_evaluated_model(g.models.size() > 1 ? "node average" : "single node");
  for (const auto& e : g.errors)
    r.add_warnings("evaluation: " + e);
  fill_faults(r, plan.faults, g, st.fault_effects);
  const int planned = r.faults_size();
  for (const auto& f : st.unplanned)
    *r.add_faults() = f;
  for (const auto& rec : st.recoveries)
    add_recovery(r, rec, planned);
  for (const auto& [node, s] : st.stragglers)
    *r.add_stragglers() = s;
  for (const auto& s : g.models)
    if (s.refused > 0) {
      auto* q = r.add_quarantined();
      q->set_node(s.node);
      q->set_since_seconds(s.refused_since);
      q->set_gradients_refused(s.refused);
    }
  r.set_trace_hash(st.ctx->events.hex());
  r.set_trace_events(st.ctx->events.events());
  summarize_rows(r, plan.stop);
}

}  // namespace atrain::eval
