/// Joins (faults.join): a node absent from the start joins the running job.
/// The supervisor stops its actors before the run's first event — a whole
/// node down, as a crash would leave it — and at its join restarts it as
/// after that crash, the algorithm's way: its recovery policy's join, else a
/// replacement worker handed its state by the algorithm's join_fn.
/// docs/RELIABILITY.md "Joining nodes".
#include <utility>

#include "atrain/actors/algorithm.hpp"
#include "supervisor_state.hpp"

namespace atrain {

std::optional<std::string> recovery_policy::absent(supervision& s,
                                                   const std::vector<std::uint32_t>&) {
  s.fail(s.ctx()->plan->algorithm_name() + " takes no nodes joining a running job");
  return std::nullopt;
}

void recovery_policy::join(supervision& s, int) {
  s.fail(s.ctx()->plan->algorithm_name() + " takes no nodes joining a running job");
}

}  // namespace atrain

namespace atrain::sup {

namespace {

/// Its fault record's index (fault_schedule::describe).
[[nodiscard]] std::uint64_t join_fault(const run_plan& plan, int j) {
  return static_cast<std::uint64_t>(plan.faults.join_index(j));
}

}  // namespace

void arm_joins(sup_ptr self) {
  auto& st = self->state;
  auto& ctx = *st.ctx;
  const auto& plan = *ctx.plan;
  if (plan.joins.empty())
    return;
  std::vector<std::uint32_t> absent;
  for (std::size_t j = 0; j < plan.joins.size(); ++j) {
    const auto& join = plan.joins[j];
    const auto k = join.node;
    absent.push_back(k);
    st.absent.insert(k);
    ctx.events.record(ctx.ns(self), k, event_kind::absent, j);
    auto& node = st.nodes.at(k);
    kill_child(self, node.worker);
    if (node.buffer && node.buffer != node.worker)
      kill_child(self, node.buffer);
    if (join.at_seconds > 0)
      self->delayed_send(self, to_timespan(join.at_seconds), join_atom::value, k, join.at_seconds);
  }
  std::string effect = "absent from the start";
  if (st.recovery) {
    auto view = st.recovery->absent(*st.side, absent);
    if (!view)
      return;  // the run ended saying why
    effect += *view;
  }
  for (std::size_t j = 0; j < plan.joins.size(); ++j)
    self->send(st.evaluator, crash_atom::value, plan.joins[j].node, true,
               join_fault(plan, static_cast<int>(j)), effect);
}

caf::expected<void> join_node(sup_ptr self, std::uint32_t k) {
  auto& st = self->state;
  const auto& plan = *st.ctx->plan;
  const auto j = plan.join_of(k);
  if (!j)
    return caf::make_error(caf::sec::invalid_argument,
                           "node " + std::to_string(k) +
                             " cannot join: only a node absent from the start joins "
                             "(faults.join lists the run's)");
  if (st.absent.erase(k) == 0)
    return caf::make_error(caf::sec::invalid_argument,
                           "node " + std::to_string(k) + " has joined already");
  if (st.stopping)
    return {};
  ++st.crashes_open;  // closed once it is in (crash_closed)
  if (st.recovery) {
    st.recovery->join(*st.side, *j);
    return {};
  }
  restart_order o;
  o.node = k;
  o.fault = join_fault(plan, *j);
  o.event = event_kind::join;
  o.arg = static_cast<std::uint64_t>(*j);
  o.before = "absent from the start";
  o.verb = "joined";
  replace_worker(self, std::move(o));
  return {};
}

}  // namespace atrain::sup
