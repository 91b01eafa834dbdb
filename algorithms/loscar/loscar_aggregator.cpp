/// LOSCAR-SGD's root aggregator (docs/ALGORITHMS.md §3, step 4): its round
/// collection, checkpoint part and the restart of a worker, apart from the worker.
/// Restart (docs/RELIABILITY.md "Restart"; only the worker: the spec refuses
/// the aggregator's node whole, elsewhere the worker is the whole node). The
/// aggregator keeps its last average A, dense:
/// x^0 at first, then A[S_r] = m_r as each round r completes (every
/// coordinate at the newest mean computed for it). The replacement of worker
/// k keeps every message until it starts. At the restart the supervisor
/// re-points the links to it and asks the aggregator, which is collecting
/// some round R: if y_k of R is not in (the dead worker had not sent it, or
/// it is still on the wire), k is DROPPED from R — R completes with the
/// others' vectors, m_R = their mean (traced as loscar_drop; a late y_k of
/// R from the dead worker is ignored); a y_k already in counts. When R
/// completes, the aggregator starts the replacement in round R + 1 with
/// x = A (m_R included). The other workers wait for m_R between the crash
/// and the restart (for restart_after_seconds, not for ever). A mean of R
/// or earlier reaching the replacement is ignored (an earlier round).
/// A node absent from the start (faults.join) counts in no round until it
/// joins, which is a restart of its worker: it starts in the round after the
/// one being collected, at the next round boundary.
#include <algorithm>
#include <map>
#include <tuple>

#include "algorithms/loscar/loscar.hpp"
#include "algorithms/loscar/loscar_internal.hpp"
#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/exceptions.hpp"

namespace atrain {

namespace loscar_detail {

namespace {

void aggregator_reject(aggregator_ptr self, run_context& ctx, const packet& p) {
  ++self->state.rejected;
  ctx.events.record(ctx.ns(self), self->state.node, event_kind::reject, p.from, p.seq);
}

void complete_round(aggregator_ptr self, run_context& ctx);

/// Step 4: a worker's y_i[S_r]; when round r is complete, m_r to everyone.
void on_snapshot(aggregator_ptr self, run_context& ctx, const packet& coded) {
  auto& st = self->state;
  const auto opened = open_values(coded, st.k);  // link.codec
  if (!opened)
    return aggregator_reject(self, ctx, coded);
  const packet& p = *opened;
  if (p.from >= st.n || !sparse_well_formed(p, loscar_up, st.k))
    return aggregator_reject(self, ctx, p);
  const std::uint64_t r = p.seq - 1;
  if (r < st.round || (r == st.round && (!st.got[p.from].empty() || st.dropped[p.from])))
    return;  // a duplicate of a vector already counted, or a dead worker's late one
  if (r > st.round)
    return aggregator_reject(self, ctx, p);  // nobody can be past an unfinished round
  st.got[p.from] = p.f.vec();
  ++st.count;
  complete_round(self, ctx);
}

/// Step 4 once every worker not dropped (nor absent) sent its vector of the round.
/// m_r over the vectors in: into A on S_r, and to every worker.
void send_mean(aggregator_ptr self, run_context& ctx) {
  auto& st = self->state;
  std::vector<double> sum(st.k, 0.0);
  for (const auto& v : st.got)
    for (std::size_t j = 0; j < v.size(); ++j)
      sum[j] += v[j];
  std::vector<float> mean(st.k);
  const double inv_n = 1.0 / static_cast<double>(st.count);
  for (std::size_t j = 0; j < st.k; ++j)
    mean[j] = static_cast<float>(sum[j] * inv_n);
  const auto sample = loscar_sample(st.seed, st.round, st.average.size(), st.k);
  for (std::size_t j = 0; j < st.k; ++j)
    st.average[sample[j]] = mean[j];
  packet m;
  m.from = st.node;
  m.kind = loscar_down;
  m.seq = st.round + 1;
  m.f = float_blob{std::move(mean)};
  st.out.broadcast(self, ctx, std::move(m));
  st.sent_since_drain = true;
}

void complete_round(aggregator_ptr self, run_context& ctx) {
  auto& st = self->state;
  if (st.count + st.dropped_count + st.absent_count < st.n)
    return;
  if (st.count > 0)  // (else every worker was dropped: no mean)
    send_mean(self, ctx);
  for (auto& v : st.got)
    v.clear();
  st.count = 0;
  st.dropped.assign(st.n, false);
  st.dropped_count = 0;
  ++st.round;
  for (const auto& [node, w] : std::exchange(st.joining, {}))
    self->send(caf::actor_cast<loscar_worker_actor>(w.first), start_atom::value, st.round,
               float_blob{st.average}, w.second);
}

/// Worker k's replacement `w` (route: its route to the aggregator) joins:
/// k is dropped from the round being collected unless its vector is in, and
/// `w` starts in the next round once this one completes. Returns that round
/// and whether k was dropped.
std::tuple<std::uint64_t, bool> rejoin(aggregator_ptr self, run_context& ctx, std::uint32_t k,
                                       const caf::actor_addr& dead, const caf::actor& w,
                                       const caf::actor& route) {
  auto& st = self->state;
  for (auto& r : st.out.routes)  // worker a's direct route
    if (r.second.address() == dead)
      r.second = w;
  if (st.absent[k]) {  // a join: counted from the round it joins
    st.absent[k] = false;
    --st.absent_count;
  }
  const std::uint64_t round = st.round;
  const bool drop = st.got[k].empty();
  if (drop && !st.dropped[k]) {
    st.dropped[k] = true;
    ++st.dropped_count;
    ctx.events.record(ctx.ns(self), st.node, event_kind::round_drop, k, round);
  }
  st.joining[k] = {w, route};
  complete_round(self, ctx);
  return {round + 1, drop};
}

std::string save_aggregator(const loscar_aggregator_state& st) {
  proto::NodeState s;
  auto& a = *s.mutable_loscar()->mutable_aggregator();
  a.set_round(st.round);
  for (std::uint32_t i = 0; i < st.n; ++i)
    if (!st.got[i].empty()) {
      a.add_got_from(i);
      a.mutable_got()->Add(st.got[i].begin(), st.got[i].end());
    }
  a.set_messages(st.out.messages);
  a.set_bytes(st.out.bytes);
  a.set_rejected(st.rejected);
  *a.mutable_average() = {st.average.begin(), st.average.end()};
  save_coder(st.out, s);
  return s.SerializeAsString();
}

void restore_aggregator(loscar_aggregator_state& st, const proto::NodeState& s) {
  const auto& a = s.loscar().aggregator();
  restore_coder(st.out, s);
  st.round = a.round();
  st.count = static_cast<std::size_t>(a.got_from_size());
  for (int j = 0; j < a.got_from_size(); ++j) {
    const auto* v = a.got().data() + static_cast<std::size_t>(j) * st.k;
    st.got.at(a.got_from(j)).assign(v, v + st.k);
  }
  st.out.messages = a.messages();
  st.out.bytes = a.bytes();
  st.rejected = a.rejected();
  st.average.assign(a.average().begin(), a.average().end());
}

}  // namespace

loscar_aggregator_actor::behavior_type loscar_aggregator(aggregator_ptr self, context_ptr ctx) {
  name_exceptions(self);
  const auto& plan = *ctx->plan;
  const auto& algo = plan.config<loscar_config>();
  auto& st = self->state;
  st.node = algo.aggregator;
  st.n = plan.nodes();
  st.k = loscar_k(algo.sparsity, plan.dim());
  st.got.resize(st.n);
  st.seed = plan.seed;
  st.average = plan.x0;
  st.dropped.assign(st.n, false);
  st.absent.assign(st.n, false);
  for (const auto& j : plan.joins) {
    st.absent.at(j.node) = true;
    ++st.absent_count;
  }
  st.out.coder = coder_for(plan, [](std::uint32_t kind) { return kind == loscar_down; });
  if (const auto* saved = resumed_node(*ctx, st.node))
    restore_aggregator(st, *saved);
  return {
    [=](init_atom, const std::vector<caf::actor>& routes) {
      for (std::size_t i = 0; i < routes.size(); ++i)
        self->state.out.routes.emplace_back(static_cast<std::uint32_t>(i), routes[i]);
    },
    [=](deliver_atom, const packet& p) {
      ctx->events.record(ctx->ns(self), self->state.node, event_kind::receive, p.from, p.seq);
      on_snapshot(self, *ctx, p);
    },
    [=](stats_atom) {
      const auto& st = self->state;
      return std::make_tuple(st.out.messages, st.out.bytes, st.rejected);
    },
    [=](wire_atom) { return self->state.out.wire_report(); },
    // Asked by worker a during a checkpoint's drain: busy once after means went out.
    [=](ckpt_drain_atom) {
      return std::exchange(self->state.sent_since_drain, false) ? 0.0 : -1.0;
    },
    [=](ckpt_state_atom) { return save_aggregator(self->state); },
    [=](restart_atom, std::uint32_t k, const caf::actor_addr& dead, const caf::actor& w,
        const caf::actor& route) -> caf::result<std::uint64_t, bool> {
      if (k >= self->state.n)
        return caf::make_error(caf::sec::invalid_argument, "no worker " + std::to_string(k));
      auto [round, dropped] = rejoin(self, *ctx, k, dead, w, route);
      return {round, dropped};
    },
  };
}

}  // namespace loscar_detail

void join_loscar_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                        const worker_restart& r, restart_started started) {
  const auto a = ctx->plan->config<loscar_config>().aggregator;
  const auto& hub = r.nodes.at(a).hub;
  const auto route = r.nodes.at(r.node).worker_routes.at(0);
  sup
    ->request(caf::actor_cast<loscar_aggregator_actor>(hub), ctx->reply_timeout(),
              restart_atom::value, r.node, r.dead, r.replacement, route)
    .then([=](std::uint64_t round, bool dropped) {
      std::string how = "the aggregator's average after round " + std::to_string(round - 1) +
                        ", joining round " + std::to_string(round);
      if (dropped)
        how += " (dropped from round " + std::to_string(round - 1) + ": its vector was not in)";
      started(how);
    });
}

}  // namespace atrain
