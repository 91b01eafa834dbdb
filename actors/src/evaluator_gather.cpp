/// The evaluator's gatherings: what a node's replies add up to, and a node
/// whose host is lost while they are awaited (evaluator_state.hpp).
#include <algorithm>

#include "evaluator_state.hpp"

namespace atrain::eval {

model_snapshot add_counters(model_snapshot a, const model_snapshot& b) {
  a.gradients += b.gradients;
  a.messages_sent += b.messages_sent;
  a.bytes_sent += b.bytes_sent;
  a.staleness_sum += b.staleness_sum;
  a.staleness_count += b.staleness_count;
  a.staleness_max = std::max(a.staleness_max, b.staleness_max);
  a.rejected += b.rejected;
  if (b.refused > 0 && (a.refused == 0 || b.refused_since < a.refused_since))
    a.refused_since = b.refused_since;
  a.refused += b.refused;
  a.busy_seconds += b.busy_seconds;
  a.gradient_cpu_seconds += b.gradient_cpu_seconds;
  a.gradient_wall_seconds += b.gradient_wall_seconds;
  a.process_cpu_seconds = std::max(a.process_cpu_seconds, b.process_cpu_seconds);  // one process
  a.late += b.late;
  a.wire.insert(a.wire.end(), b.wire.begin(), b.wire.end());  // a dead incarnation's routes
  if (a.fault_hits.size() < b.fault_hits.size())
    a.fault_hits.resize(b.fault_hits.size(), 0);
  for (std::size_t i = 0; i < b.fault_hits.size(); ++i)
    a.fault_hits[i] += b.fault_hits[i];
  return a;
}

model_snapshot retired_only(const eval_state& st, std::size_t i) {
  auto s = st.retired[i];
  s.node = static_cast<std::uint32_t>(i);
  s.params = {};
  return s;
}

void await_node(gathering& g, std::size_t i, bool worker) {
  ++g.pending;
  ++g.awaiting[i];
  if (worker)
    g.worker_awaited[i] = true;
}

bool answered(gathering& g, std::size_t i, bool worker) {
  if (g.settled[i])
    return false;
  --g.awaiting[i];
  if (worker)
    g.worker_awaited[i] = false;
  return true;
}

void forget_finished(eval_state& st) {
  st.open.erase(std::remove_if(st.open.begin(), st.open.end(),
                               [](const auto& w) { return w.expired() || w.lock()->pending == 0; }),
                st.open.end());
}

void settle_lost_node(eval_state& st, std::uint32_t k) {
  forget_finished(st);
  for (const auto& w : std::vector<std::weak_ptr<gathering>>{st.open}) {
    const auto g = w.lock();
    if (!g || g->settled[k] || g->awaiting[k] == 0)
      continue;
    g->settled[k] = true;
    if (g->worker_awaited[k])
      g->models[k] = retired_only(st, k);
    g->pending -= g->awaiting[k];
    g->awaiting[k] = 0;
    if (g->pending == 0)
      g->done(*g);
  }
}

}  // namespace atrain::eval
