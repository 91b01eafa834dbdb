/// R-FAST's gradient buffer (docs/ALGORITHMS.md §1, steps 3-5): one actor per
/// node holding its tracker (rfast_tracker.cpp), the newest model of each G_R
/// in-neighbour, and its G_C outbox; the worker asks it for each step's direction.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "algorithms/rfast/rfast.hpp"
#include "algorithms/rfast/rfast_internal.hpp"
#include "atrain/actors/blob_checks.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/exceptions.hpp"
#include "atrain/actors/link_codec.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain::rfast_detail {

// set_routes is declared in rfast_internal.hpp (the worker uses it too).
void set_routes(outbox& out, const rfast_epoch& e) {
  std::vector<std::pair<std::uint32_t, caf::actor>> fresh;
  for (std::size_t k = 0; k < e.out.size(); ++k)
    fresh.emplace_back(e.out[k], e.routes.at(k));
  out.reroute(std::move(fresh));
}

namespace {

struct buffer_state {
  std::optional<rfast_tracker> tracker;
  outbox out_c;
  std::vector<std::uint32_t> in_r;
  /// Pull weights (r_ii first, then r_ij aligned with in_r): handed to the
  /// worker with every step, so a new epoch's weights come with its models.
  std::vector<double> r_weights;
  /// Newest model per G_R in-neighbour; empty = none yet in this epoch (the
  /// worker uses its own x instead).
  std::vector<float_blob> v_hat;
  std::vector<std::uint64_t> v_seq;
  std::vector<std::uint64_t> v_age;  // own wakes since v^_j was refreshed
  std::uint64_t rejected = 0;
  std::uint64_t old_epoch = 0;  // packets dropped for another tracking epoch
  std::uint64_t tracks = 0;     // wakes served (a restarted worker resumes from it)
  double seq_rate = 0;          // see future_seq_rate
  blob_pool<float> d_pool;      // the directions handed to the worker
  /// Gradients folded since the last step (their sum), their count, and
  /// every wake that folded instead of stepping (all checkpointed).
  std::vector<float> folded;
  std::uint32_t folded_n = 0;
  std::uint64_t folded_total = 0;
  /// link.codec: the G_C in-neighbours' running sums as decoded so far.
  std::optional<sum_decoder> decoder;
  static inline const char* name = "atrain_rfast_buffer";
};

using buffer_ptr = rfast_buffer_actor::stateful_pointer<buffer_state>;

/// Step 5's send: the running sums `rho` just pushed, to the G_C out-neighbours.
void send_mass(buffer_ptr self, std::uint32_t id, run_context& ctx, double_blob rho) {
  auto& st = self->state;
  auto& tr = *st.tracker;
  packet p;
  p.from = id;
  p.kind = rfast_mass;
  p.d = std::move(rho);
  p.seq = tr.pushes();
  p.scalars = {tr.sigma_sent()};
  p.epoch = tr.epoch();
  st.out_c.broadcast(self, ctx, std::move(p));
}

/// Step 5: push the tracker's running sums to the G_C out-neighbours.
void push_mass(buffer_ptr self, std::uint32_t id, run_context& ctx) {
  send_mass(self, id, ctx, self->state.tracker->push());
}

// ---- checkpoints: the buffer's part of NodeState

void save_buffer(const buffer_state& st, proto::NodeState& s) {
  auto& r = *s.mutable_rfast();
  st.tracker->save(r);
  for (std::size_t k = 0; k < st.in_r.size(); ++k) {
    auto* m = r.add_model_in();
    m->set_node(st.in_r[k]);
    m->set_seq(st.v_seq[k]);
    m->set_age(st.v_age[k]);
    *m->mutable_params() = {st.v_hat[k].vec().begin(), st.v_hat[k].vec().end()};
  }
  r.set_buffer_messages(st.out_c.messages);
  r.set_buffer_bytes(st.out_c.bytes);
  s.set_rejected(st.rejected);
  r.set_tracks(st.tracks);
  if (st.folded_n > 0)  // (the sum's buffer outlives it)
    r.mutable_folded()->Assign(st.folded.begin(), st.folded.end());
  r.set_folded_n(st.folded_n);
  r.set_folded_total(st.folded_total);
  save_coder(st.out_c, s);
  if (st.decoder)
    st.decoder->save(*s.mutable_codec());
}

void restore_buffer(buffer_state& st, const proto::NodeState& s) {
  const auto& r = s.rfast();
  st.tracker->restore(r);
  for (std::size_t k = 0; k < st.in_r.size(); ++k) {
    const auto& m = r.model_in(static_cast<int>(k));
    st.v_seq[k] = m.seq();
    st.v_age[k] = m.age();
    st.v_hat[k] = float_blob{{m.params().begin(), m.params().end()}};
  }
  st.out_c.messages = r.buffer_messages();
  st.out_c.bytes = r.buffer_bytes();
  st.rejected = s.rejected();
  st.tracks = r.tracks();
  st.folded.assign(r.folded().begin(), r.folded().end());
  st.folded_n = r.folded_n();
  st.folded_total = r.folded_total();
  restore_coder(st.out_c, s);
  if (st.decoder)
    st.decoder->restore(s.codec());
}

/// The buffer at its spawn: the spec's graph pair (epoch 0), x^0 as every
/// G_R in-neighbour's model, or a resumed run's saved state (not `fresh`).
void init_buffer(buffer_state& st, std::uint32_t id, const run_context& ctx, bool fresh) {
  const auto& plan = *ctx.plan;
  const auto& topo = *plan.topo;
  const auto& algo = plan.config<rfast_config>();
  std::vector<rfast_tracker::in_neighbour> in_c;
  for (auto j : topo.g_c.in(id))
    in_c.push_back({j, topo.c(id, j), 0, {}, 0, {}, 0});  // blobs set by the tracker
  st.tracker.emplace(id, plan.dim(), topo.c(id, id), std::move(in_c), algo.phi_scaled,
                     algo.phi_min);
  st.in_r = topo.g_r.in(id);
  st.r_weights = {topo.r(id, id)};
  for (auto j : st.in_r)
    st.r_weights.push_back(topo.r(id, j));
  st.v_hat.assign(st.in_r.size(), float_blob{plan.x0});
  st.v_seq.assign(st.in_r.size(), 0);
  st.v_age.assign(st.in_r.size(), 0);
  st.seq_rate = future_seq_rate(plan);
  st.out_c.coder = coder_for(plan, [](std::uint32_t kind) { return kind == rfast_mass; });
  if (st.out_c.coder)
    st.decoder.emplace(plan.dim());
  if (const auto* saved = fresh ? nullptr : resumed_node(ctx, id))
    restore_buffer(st, *saved);
}

/// A G_R in-neighbour's model, kept when newer than the one held. False:
/// not an in-neighbour's, or not a finite model of the model's size.
[[nodiscard]] bool take_model(buffer_state& st, const packet& coded_or_raw, std::size_t dim,
                              bool replicas) {
  // Coded values are opened here; a replica is applied to the decoder below.
  const auto opened =
    replicas ? std::optional<packet>{coded_or_raw} : open_values(coded_or_raw, dim);
  if (!opened)
    return false;
  const packet& p = *opened;
  auto it = std::find(st.in_r.begin(), st.in_r.end(), p.from);
  const bool coded = !p.coded.empty();
  if (it == st.in_r.end() ||
      (coded ? !st.decoder || !p.f.empty() : p.f.size() != dim || !all_finite(p.f)))
    return false;
  auto k = static_cast<std::size_t>(it - st.in_r.begin());
  if (!coded) {
    if (p.seq > st.v_seq[k]) {
      st.v_seq[k] = p.seq;
      st.v_hat[k] = p.f;
      st.v_age[k] = 0;
    }
    return true;
  }
  // link.codec: the decoder's copy of the sender's model, once this packet
  // extends it (a stale one, or one whose base was lost, changes nothing).
  const auto r = st.decoder->receive(p);
  if (r.outcome == codec::receive_outcome::malformed)
    return false;
  const bool applied = r.outcome == codec::receive_outcome::applied_increment ||
                       r.outcome == codec::receive_outcome::applied_full;
  if (applied && p.seq > st.v_seq[k]) {
    const auto& copy = st.decoder->sum(p.from, p.kind);
    std::vector<float> x(copy.begin(), copy.end());
    if (!vec::all_finite(x.data(), dim)) {  // a copy past float's range
      st.decoder->forget(p.from, p.kind);
      return false;
    }
    st.v_seq[k] = p.seq;
    st.v_hat[k] = float_blob{std::move(x)};
    st.v_age[k] = 0;
  }
  return true;
}

/// A G_C in-neighbour's running sums, to the tracker (which keeps the
/// newest). False: malformed, or not from a G_C in-neighbour.
[[nodiscard]] bool take_mass(buffer_state& st, const packet& p, std::size_t dim) {
  const bool coded = !p.coded.empty();
  if (p.scalars.size() != 1 || !std::isfinite(p.scalars[0]) ||
      (coded ? !st.decoder || !p.d.empty() : p.d.size() != dim || !all_finite(p.d)))
    return false;
  bool known = false;
  for (const auto& nb : st.tracker->in_c())
    known = known || nb.node == p.from;
  if (!known)
    return false;
  if (!coded) {
    st.tracker->receive(p.from, p.seq, p.d, p.scalars[0]);
    return true;
  }
  // The decoder's sum is the sender's as of this packet once it applies;
  // a stale one or one whose base was lost waits for the next exact sum.
  const auto r = st.decoder->receive(p);
  if (r.outcome == codec::receive_outcome::malformed)
    return false;
  if (r.outcome == codec::receive_outcome::applied_increment ||
      r.outcome == codec::receive_outcome::applied_full)
    st.tracker->receive(p.from, p.seq, double_blob{st.decoder->sum(p.from, p.kind)}, p.scalars[0]);
  return true;
}

/// A packet from a link: another epoch's is dropped, a rejected one
/// counted and traced, a model or mass packet taken.
void buffer_deliver(buffer_ptr self, std::uint32_t id, run_context& ctx, const packet& p) {
  auto& st = self->state;
  auto reject = [&] {
    ++st.rejected;
    ctx.events.record(ctx.ns(self), id, event_kind::reject, p.from, p.seq);
  };
  ctx.events.record(ctx.ns(self), id, event_kind::receive, p.from, p.seq);
  if (p.epoch != st.tracker->epoch()) {
    // Sent before a re-rooting (or, briefly, after it by a node that
    // switched first): its sums and models belong to another graph.
    ++st.old_epoch;
    ctx.events.record(ctx.ns(self), id, event_kind::old_epoch, p.from, p.epoch);
    return;
  }
  if (from_the_future(p.seq, st.seq_rate, ctx.seconds(self)))
    return reject();
  const std::size_t dim = ctx.plan->dim();
  const bool replicas = models_as_replicas(ctx.plan->link.codec);
  const bool taken = p.kind == rfast_model  ? take_model(st, p, dim, replicas)
                     : p.kind == rfast_mass ? take_mass(st, p, dim)
                                            : false;
  if (!taken)
    reject();
}

/// Adds `g` to the folded sum; true while the sum is still being built:
/// without limit while a route is busy, up to late_folded while the only
/// unanswered routes are late.
[[nodiscard]] bool fold(buffer_state& st, const float_blob& g, route_gate gate) {
  if (gate == route_gate::free && st.folded_n == 0)
    return false;  // the common case: no copy
  const std::size_t dim = g.size();
  if (st.folded_n == 0)
    st.folded.assign(g.ptr(), g.ptr() + dim);
  else
    vec::axpy(1.0f, g.ptr(), st.folded.data(), dim);
  ++st.folded_n;
  const auto cap = gate == route_gate::busy   ? max_folded
                   : gate == route_gate::late ? late_folded
                                              : 0U;
  if (st.folded_n < cap) {
    ++st.folded_total;
    return true;
  }
  // The step's gradient: the mean of the folded minibatches, all taken at
  // the same x (the worker's model moves only with a step).
  vec::scale(1.0f / static_cast<float>(st.folded_n), st.folded.data(), dim);
  st.folded_n = 0;
  return false;
}

/// The buffer's answer to a wake's gradient `g`: steps 4, 5 and 3, and what
/// the worker needs for 1 and 2 (direction, models, their ages, weights).
/// While the worker's routes (`worker_gate`) or the buffer's are busy the
/// gradient is folded instead and the direction comes back empty.
std::tuple<float_blob, std::vector<float_blob>, std::vector<std::uint64_t>, std::vector<double>>
buffer_track(buffer_ptr self, std::uint32_t id, run_context& ctx, const float_blob& g,
             route_gate worker_gate) {
  auto& st = self->state;
  const bool folded_before = st.folded_n > 0;
  const auto gate = std::max(worker_gate, st.out_c.gate(fold_in_flight, ctx.ns(self)));
  if (fold(st, g, gate))
    return {};
  const float* grad = folded_before ? st.folded.data() : g.ptr();
  auto& tr = *st.tracker;
  ++st.tracks;
  auto d = st.d_pool.take(ctx.plan->dim());
  send_mass(self, id, ctx, tr.wake(grad, d->data()));  // 4, 5 (and 1's d), then 3
  std::vector<std::uint64_t> ages = st.v_age;
  for (auto& a : st.v_age)
    ++a;
  return {st.d_pool.publish(std::move(d)), st.v_hat, std::move(ages), st.r_weights};
}

/// A re-rooting: new neighbours, weights and routes; the tracker starts
/// the epoch from z = g_prev (the model stays with the worker).
void buffer_adopt_epoch(buffer_ptr self, std::uint32_t id, run_context& ctx, const rfast_epoch& e) {
  auto& st = self->state;
  std::vector<rfast_tracker::in_neighbour> in_c;
  for (std::size_t k = 0; k < e.in_c.size(); ++k)
    in_c.push_back({e.in_c[k], e.c_in[k], 0, {}, 0, {}, 0});
  st.tracker->reset_epoch(e.epoch, e.c_self, std::move(in_c));
  st.in_r = e.in_r;
  st.r_weights = {e.r_self};
  st.r_weights.insert(st.r_weights.end(), e.r_in.begin(), e.r_in.end());
  st.v_hat.assign(st.in_r.size(), float_blob{});
  st.v_seq.assign(st.in_r.size(), 0);
  st.v_age.assign(st.in_r.size(), 0);
  set_routes(st.out_c, e);
  if (st.out_c.coder)  // every running sum starts again from 0
    st.out_c.coder->reset();
  if (st.decoder)
    st.decoder->reset();
  ctx.events.record(ctx.ns(self), id, event_kind::reroot, e.epoch, e.in_c.size());
}

/// `fresh`: a whole node restarted (respawn_rfast_node): never from a
/// checkpoint, whatever the run resumed from.
rfast_buffer_actor::behavior_type rfast_buffer(buffer_ptr self, std::uint32_t id, context_ptr ctx,
                                               bool fresh) {
  name_exceptions(self);
  init_buffer(self->state, id, *ctx, fresh);
  run_probe::show_state<rfast_tracker>(ctx->probe, self, id, &*self->state.tracker);
  return {
    [=](start_atom, const std::vector<caf::actor>& out) {
      const auto& targets = ctx->plan->topo->g_c.out(id);
      for (std::size_t k = 0; k < targets.size(); ++k)
        self->state.out_c.routes.emplace_back(targets[k], out.at(k));
    },
    [=](init_atom, const float_blob& g0) { self->state.tracker->init(g0.ptr()); },
    [=](deliver_atom, const packet& p) { buffer_deliver(self, id, *ctx, p); },
    [=](track_atom, const float_blob& g, std::uint8_t gate) {
      const auto worker_gate =
        gate <= static_cast<std::uint8_t>(route_gate::late) ? route_gate{gate} : route_gate::late;
      return buffer_track(self, id, *ctx, g, worker_gate);
    },
    [=](epoch_atom, const rfast_epoch& e) { buffer_adopt_epoch(self, id, *ctx, e); },
    [=](mass_atom) { return self->state.tracker->account(); },
    [=](wire_atom) { return self->state.out_c.wire_report(); },
    [=](resume_atom) { return std::make_tuple(self->state.tracks, self->state.tracker->epoch()); },
    // The worker is lost for good: withdraw this node's gradient from the
    // tracked sum (correct with g = 0, so the others track the remaining
    // nodes' objective) and keep relaying tracker mass every tau, so the mass
    // that reaches this buffer is not stuck here.
    [=](retire_atom) {
      const std::vector<float> zero(ctx->plan->dim(), 0.0f);
      self->state.tracker->correct(zero.data());
      self->send(caf::actor_cast<rfast_buffer_actor>(self), relay_atom::value);
    },
    [=](relay_atom) {
      push_mass(self, id, *ctx);
      self->state.tracker->absorb();
      send_after(self, caf::actor_cast<rfast_buffer_actor>(self), ctx->plan->tau.at(id),
                 relay_atom::value);
    },
    [=](stats_atom, epoch_atom) {
      return std::make_tuple(self->state.out_c.messages, self->state.out_c.bytes,
                             self->state.rejected, self->state.old_epoch);
    },
    [=](ckpt_state_atom) {
      proto::NodeState s;
      save_buffer(self->state, s);
      return s.SerializeAsString();
    },
  };
}

}  // namespace

rfast_buffer_actor spawn_rfast_buffer(caf::event_based_actor* parent, const context_ptr& ctx,
                                      std::uint32_t id, bool fresh) {
  return parent->spawn(rfast_buffer, id, ctx, fresh);
}

}  // namespace atrain::rfast_detail
