/// DASGD's checkpoints: a worker's part of NodeState (saved at a barrier,
/// restored on resume) and the check of a loaded checkpoint, apart from the actors.
#include "algorithms/dasgd/dasgd.hpp"
#include "algorithms/dasgd/dasgd_internal.hpp"
#include "atrain/actors/checkpoint.hpp"

namespace atrain {

namespace dasgd_detail {

std::string save_dasgd(const dasgd_state& st, std::uint32_t id) {
  proto::NodeState s;
  save_worker_basics(st, st.steps, s);
  auto& d = *s.mutable_dasgd();
  d.set_applied(st.applied);
  d.set_instant_ns(st.instant_ns);
  d.set_applied_now(st.applied_now);
  for (std::uint32_t j = 0; j < st.n; ++j)
    d.add_applied_from(j == id ? st.steps : st.dedup.first_unseen(j, dasgd_gradients) - 1);
  *d.mutable_batch() = {st.batch.begin(), st.batch.end()};
  d.set_batch_count(st.batch_count);
  for (std::uint32_t j = 0; j < st.n; ++j)
    for (auto lost : st.lost[j]) {
      s.mutable_dasgd()->add_lost(j);
      s.mutable_dasgd()->add_lost(lost);
    }
  if (st.created) {
    const auto [last, before_last, total] = st.created->totals();
    d.set_created_last_ns(last);
    d.set_created_before_last(before_last);
    d.set_created_total(total);
    for (auto ns : st.created->since(id, st.steps - st.batch_count + 1))
      d.add_batch_created_ns(ns);
  }
  return s.SerializeAsString();
}

void restore_dasgd(dasgd_state& st, std::uint32_t id, const proto::NodeState& s) {
  st.steps = restore_worker_basics(st, s);
  const auto& d = s.dasgd();
  st.applied = d.applied();
  st.instant_ns = d.instant_ns();
  st.applied_now = d.applied_now();
  st.used_total = d.applied();
  // The drained links delivered every gradient sent: 1..k of each origin.
  for (std::uint32_t j = 0; j < st.n; ++j) {
    st.highest[j] = d.applied_from(static_cast<int>(j));
    if (j != id)
      for (std::uint64_t k = 1; k <= d.applied_from(static_cast<int>(j)); ++k)
        static_cast<void>(st.dedup.first_time(j, dasgd_gradients, k));
  }
  for (int e = 0; e + 1 < s.dasgd().lost_size(); e += 2)
    if (s.dasgd().lost(e) < st.n)
      st.lost[s.dasgd().lost(e)].insert(s.dasgd().lost(e + 1));
  st.batch.assign(d.batch().begin(), d.batch().end());
  st.batch_count = d.batch_count();
  if (st.created)
    st.created->restore(id, d.created_last_ns(), d.created_before_last(), d.created_total(),
                        st.steps - st.batch_count + 1,
                        {d.batch_created_ns().begin(), d.batch_created_ns().end()});
  st.hold.requested = st.hold.held = true;  // until the supervisor's go
}

}  // namespace dasgd_detail

std::string dasgd_check_checkpoint(const proto::Checkpoint& ck, const run_plan& plan) {
  const auto n = static_cast<int>(plan.nodes());
  for (int i = 0; i < n; ++i) {
    const auto& s = ck.nodes(i);
    const auto& d = s.dasgd();
    const std::string at = "node " + std::to_string(i) + ": dasgd.";
    if (d.applied_from_size() != n)
      return at + "applied_from names " + std::to_string(d.applied_from_size()) +
             " nodes; the spec runs " + std::to_string(n);
    for (int j = 0; j < n; ++j)
      if (d.applied_from(j) > ck.nodes(j).wakes())
        return at + "applied_from[" + std::to_string(j) +
               "] = " + std::to_string(d.applied_from(j)) + " gradients, but node " +
               std::to_string(j) + " made " + std::to_string(ck.nodes(j).wakes());
    if (s.dasgd().lost_size() % 2 != 0)
      return "node " + std::to_string(i) + ": dasgd_lost holds an odd number of values";
    for (int e = 0; e + 1 < s.dasgd().lost_size(); e += 2)
      if (s.dasgd().lost(e) >= static_cast<std::uint64_t>(n) ||
          s.dasgd().lost(e + 1) > ck.nodes(static_cast<int>(s.dasgd().lost(e))).wakes())
        return "node " + std::to_string(i) + ": dasgd_lost claims gradient " +
               std::to_string(s.dasgd().lost(e + 1)) + " of node " +
               std::to_string(s.dasgd().lost(e)) + ", which it never made";
    if (d.batch_count() > s.wakes() ||
        (d.batch_count() > 0 && static_cast<std::size_t>(d.batch_size()) != plan.dim()) ||
        static_cast<std::uint64_t>(d.batch_created_ns_size()) != d.batch_count())
      return at + "batch does not match batch_count and the model's dimension";
  }
  return {};
}

}  // namespace atrain
