/// DiLoCo (ALGORITHMS.md §10), one worker actor per node on the ring.
///
/// Node i keeps the outer model o and the outer momentum m (the same on
/// every node: they change only by averages every node receives) and its
/// inner model x. With H = inner_steps, F = fragments, every = H / F:
///   1. every inner step: g = minibatch gradient at x (the wake),
///      x -= gamma_k g, gamma_k = gamma / (1 + decay k) (inner: ADAMW: an
///      AdamW step with lr gamma_k on this node's own moments);
///   2. after `every` steps: the next fragment f (ring round k reduces
///      fragment k mod F) is averaged: the node puts in delta = o - x, the
///      ring sums it, avg = sum / n over f;
///   3. outer Nesterov step on f (as torch.optim.SGD(nesterov=True)):
///      m_f = mu m_f + avg, o_f -= eta (avg + mu m_f); then
///      x_f = o_f (waiting), or x_f = a x_f + (1 - a) o_f (overlap: the
///      inner steps went on while f travelled; a = mixing).
/// F = 1 without overlap is DiLoCo as published: after each average every
/// node restarts from the same outer model. With outer_step_size 1 and
/// momentum 0 it is Local SGD (o - avg = the models' mean).
///
/// Waiting (overlap false) holds checkpoints as Local SGD does: after an
/// average or after a step that is not the last before one. With overlap a
/// node holds at any step boundary with the ring idle (a sync falling due
/// there begins after the go, one step later in both the run and its
/// resumption).
#include "algorithms/diloco/diloco.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/exceptions.hpp"

#include <algorithm>
#include <utility>

#include "algorithms/ring/ring.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

namespace {

struct diloco_state : ring_worker_state {
  std::vector<float> outer;     // o
  std::vector<float> momentum;  // m
  std::vector<float> delta;     // o - x at the last sync's begin (every value)
  // inner AdamW: this node's moments and steps (empty / 0 with SGD)
  std::vector<float> adam_m;
  std::vector<float> adam_v;
  std::uint64_t adam_steps = 0;
  bool waiting = false;  // overlap: a sync fell due while the ring was busy
  bool record = false;   // keep the ledger (test probe only)
  std::vector<diloco_sync> ledger;
  static inline const char* name = "atrain_diloco_worker";

  /// A replacement takes o and m (x starts at o); x^0 alone when no rank answered.
  [[nodiscard]] float_blob donor_model() const override {
    std::vector<float> both(outer);
    both.insert(both.end(), momentum.begin(), momentum.end());
    return float_blob{std::move(both)};
  }
  void adopt_donor_model(const float_blob& b) override {
    const auto d = x.size();
    const float* p = b.ptr();
    outer.assign(p, p + d);
    if (b.size() == 2 * d)
      momentum.assign(p + d, p + 2 * d);
    else
      momentum.assign(d, 0.0F);
    x = outer;
    // A replacement's inner AdamW starts afresh: the dead node's moments are gone.
    std::fill(adam_m.begin(), adam_m.end(), 0.0F);
    std::fill(adam_v.begin(), adam_v.end(), 0.0F);
    adam_steps = 0;
  }
  void save_part(proto::RingNodeState& s) const override {
    auto& part = *s.mutable_diloco();
    *part.mutable_outer() = {outer.begin(), outer.end()};
    *part.mutable_momentum() = {momentum.begin(), momentum.end()};
    *part.mutable_adam_m() = {adam_m.begin(), adam_m.end()};
    *part.mutable_adam_v() = {adam_v.begin(), adam_v.end()};
    part.set_adam_steps(adam_steps);
  }
  void restore_part(const proto::RingNodeState& s) override {
    outer.assign(s.diloco().outer().begin(), s.diloco().outer().end());
    momentum.assign(s.diloco().momentum().begin(), s.diloco().momentum().end());
    adam_m.assign(s.diloco().adam_m().begin(), s.diloco().adam_m().end());
    adam_v.assign(s.diloco().adam_v().begin(), s.diloco().adam_v().end());
    adam_steps = s.diloco().adam_steps();
  }
};

using diloco_self = ring_worker_actor::stateful_pointer<diloco_state>;

/// Step 3 over the fragment [b, e) the ring just averaged.
void outer_step(diloco_state& st, const diloco_config& c) {
  const auto [b, e] = st.ring->state().last_fragment();
  const auto& sum = st.ring->sum();
  const auto inv_n = static_cast<float>(1.0 / st.ring->count());  // the ring's members
  const auto eta = static_cast<float>(c.outer_step);
  const auto mu = static_cast<float>(c.momentum);
  const auto keep = c.overlap ? static_cast<float>(c.mixing) : 0.0F;
  for (std::size_t k = b; k < e; ++k) {
    const float avg = sum[k] * inv_n;
    st.momentum[k] = mu * st.momentum[k] + avg;
    st.outer[k] -= eta * (avg + mu * st.momentum[k]);
    st.x[k] = keep * st.x[k] + (1.0F - keep) * st.outer[k];
  }
  ++st.averages;
  if (!st.record)
    return;
  diloco_sync s{st.ring->state().last_round(), b, e, {}, {}, st.outer, st.momentum};
  for (std::size_t k = b; k < e; ++k) {
    s.delta.push_back(st.delta[k]);
    s.average.push_back(sum[k] * inv_n);
  }
  st.ledger.push_back(std::move(s));
}

/// `joining`: a replacement after a crash (ring_joining).
ring_worker_actor::behavior_type diloco_worker(diloco_self self, std::uint32_t id, context_ptr ctx,
                                               bool joining) {
  name_exceptions(self);
  const auto& plan = *ctx->plan;
  const auto& algo = plan.config<diloco_config>();
  const std::uint32_t every = algo.inner_steps / algo.fragments;
  const bool overlap = algo.overlap;
  auto& init = self->state;
  init.record = ctx->probe != nullptr;
  init.outer = plan.x0;  // a checkpoint's part replaces both (ring_worker)
  init.momentum.assign(plan.dim(), 0.0F);
  init.delta.assign(plan.dim(), 0.0F);
  if (algo.adamw) {
    init.adam_m.assign(plan.dim(), 0.0F);
    init.adam_v.assign(plan.dim(), 0.0F);
  }
  auto apply = [=] {  // 1. x -= gamma_k g, or AdamW's step with lr gamma_k
    auto& st = self->state;
    const double gamma = algo.step_size / (1.0 + algo.decay * static_cast<double>(st.steps++));
    if (algo.adamw) {
      auto p = algo.adam;
      p.lr = gamma;
      adamw_step(st.x.data(), st.g.data(), st.adam_m.data(), st.adam_v.data(), st.x.size(),
                 ++st.adam_steps, p);
    } else {
      vec::axpy(static_cast<float>(-gamma), st.g.data(), st.x.data(), st.x.size());
    }
    st.staleness.add(0.0);
  };
  auto hold_here = [=] {  // a step boundary with the ring idle (checkpoints)
    auto& st = self->state;
    return st.hold.requested && !st.ring->active() && !st.ring->called() && st.hold.stop_here();
  };
  auto begin_sync = [=] {  // 2.; true when the sum is in at once (one node)
    auto& st = self->state;
    st.since_average = 0;
    // Every value, not only the fragment: a restart may begin the round
    // again as a later one, which reduces another fragment (ring_resume).
    for (std::size_t k = 0; k < st.x.size(); ++k)
      st.delta[k] = st.outer[k] - st.x[k];
    return st.ring->begin(self, *ctx, st.delta.data());
  };
  auto on_sum = [=] {  // 3.
    auto& st = self->state;
    outer_step(st, algo);
    if (st.waiting && !st.computing && !hold_here()) {
      st.waiting = false;
      (void)begin_sync();  // never done at once: one node never waits
    }
    st.waiting = false;  // held: the due sync begins one step after the go
    if (!st.computing && !hold_here())
      ring_compute_next(self);
  };
  auto on_wake = [=] {
    auto& st = self->state;
    apply();
    ++st.since_average;
    if (overlap) {
      if (hold_here())
        return;
      if (st.since_average < every) {
        ring_compute_next(self);
      } else if (st.ring->active()) {
        st.waiting = true;  // the previous fragment is still in the ring
      } else if (begin_sync()) {
        on_sum();
      } else {
        ring_compute_next(self);
      }
      return;
    }
    if (st.since_average < every) {
      if (!hold_here())
        ring_compute_next(self);
    } else if (begin_sync()) {
      on_sum();
    }
  };
  auto running = ring_worker(
    self, id, ctx, false, joining, on_wake, on_sum, [] {}, algo.fragments);
  return joining ? ring_joining(self, id, ctx, std::move(running)) : running;
}

/// A node's saved outer model and momentum against the model.
std::string diloco_check_node(const proto::NodeState& s, std::uint32_t, const run_plan& plan) {
  const auto& d = s.ring().diloco();
  if (static_cast<std::size_t>(d.outer_size()) != plan.dim() ||
      static_cast<std::size_t>(d.momentum_size()) != plan.dim())
    return "diloco: the outer model or momentum does not fit the model (" +
           std::to_string(d.outer_size()) + " and " + std::to_string(d.momentum_size()) +
           " values for " + std::to_string(plan.dim()) + ")";
  const auto adam = plan.config<diloco_config>().adamw ? plan.dim() : 0;
  if (static_cast<std::size_t>(d.adam_m_size()) != adam ||
      static_cast<std::size_t>(d.adam_v_size()) != adam || (adam == 0 && d.adam_steps() != 0))
    return "diloco: the inner AdamW moments do not fit the spec (" +
           std::to_string(d.adam_m_size()) + " and " + std::to_string(d.adam_v_size()) +
           " values for " + std::to_string(adam) + ")";
  return {};
}

}  // namespace

std::vector<diloco_sync> diloco_take_syncs(const caf::actor_addr& worker) {
  return ring_take(worker, &diloco_state::ledger);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
algorithm_descriptor diloco_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kDiloco;
  d.node_part = proto::NodeState::kRing;
  d.name = "diloco";
  d.check_block = diloco_check_block;
  d.parse = diloco_parse_block;
  d.spawn_node = spawn_ring_node<diloco_worker>;
  d.wire = wire_ring;
  d.needs_every_node = "every sync is a ring all-reduce over every node";
  d.spawn_replacement = spawn_ring_replacement<diloco_worker>;
  d.join = join_ring_worker;
  d.joins = "every sync averages over the ring of the nodes present (in id order), so nobody "
            "waits on a node not there yet; at a join the ring freezes at a sync boundary (as "
            "for a restart), the joiner takes the outer model and momentum of the rank before "
            "it and the ring averages over the new members from the next sync";
  d.check_node = diloco_check_node;
  d.links.coding = ring_coding;  // the ring codes its own chunks
  return d;
}

}  // namespace atrain
