/// Centralized SGD: on each wake, x -= gamma_k g(x); gamma_k = gamma / (1 + decay k).
///
/// Checkpoints: the worker holds after a step (no gradient in flight); its
/// state is x, the step count and the compute unit.
///
/// Restart (docs/RELIABILITY.md "Restart"): there is no other node to take
/// a model from, so a crashed worker's replacement restarts from the run's
/// last checkpoint — its model, its step count (the step-size schedule) and
/// its sampler where the checkpoint had them — and every step after that
/// checkpoint is lost with the dead worker (recomputed: with the virtual
/// clock the replacement repeats them exactly). Without a checkpoint yet it
/// starts again from x^0. Its counters start at zero (the evaluator keeps
/// the dead incarnation's).
#include "algorithms/centralized/centralized.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/exceptions.hpp"

#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/compute.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

namespace {

struct sgd_state {
  std::optional<compute_unit> cu;
  std::vector<float> x;
  std::vector<float> g;
  std::uint64_t steps = 0;
  barrier_hold hold;  // checkpoints
  static inline const char* name = "atrain_sgd_worker";
};

using sgd_ptr = centralized_worker_actor::stateful_pointer<sgd_state>;

void compute_next(sgd_ptr self) {
  auto& st = self->state;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  send_after(self, caf::actor_cast<centralized_worker_actor>(self), wait, wake_atom::value);
}

std::string save_sgd(const sgd_state& st) {
  proto::NodeState s;
  *s.mutable_params() = {st.x.begin(), st.x.end()};
  s.set_wakes(st.steps);
  st.cu->save(*s.mutable_compute());
  return s.SerializeAsString();
}

void restore_sgd(sgd_state& st, const proto::NodeState& s) {
  st.x.assign(s.params().begin(), s.params().end());
  st.steps = s.wakes();
  st.cu->restore(s.compute());
  st.hold.requested = st.hold.held = true;  // until the supervisor's go
}

/// `replacement`: a restarted worker, which keeps every message until the
/// supervisor starts it with a checkpoint's state (join_centralized_worker).
centralized_worker_actor::behavior_type sgd_worker(sgd_ptr self, context_ptr ctx,
                                                   bool replacement) {
  name_exceptions(self);
  const auto& plan = *ctx->plan;
  const auto& algo = plan.config<centralized_config>();
  self->state.cu.emplace(*ctx, 0);
  self->state.x = plan.x0;
  const auto* saved = replacement ? nullptr : resumed_node(*ctx, 0);
  if (saved)
    restore_sgd(self->state, *saved);
  const double gamma0 = algo.step_size;
  const double decay = algo.decay;
  auto running = compose<centralized_worker_actor::behavior_type>(
    [=](start_atom) {
      if (!saved)  // restored: holds until the supervisor's go
        compute_next(self);
    },
    [=](wake_atom) {
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), 0, event_kind::wake, st.steps);
      const double gamma = gamma0 / (1.0 + decay * static_cast<double>(st.steps++));
      vec::axpy(static_cast<float>(-gamma), st.g.data(), st.x.data(), st.x.size());
      if (!st.hold.stop_here())
        compute_next(self);
    },
    [=](model_atom) { return compute_snapshot(0, *self->state.cu, self->state.x); },
    // A replacement's join after it started (never sent twice): nothing.
    [](start_atom, const float_blob&, std::uint64_t, const std::string&) {},
    checkpoint_handlers(
      self, [=] { compute_next(self); }, [=] { return save_sgd(self->state); }));
  if (!replacement)
    return running;
  self->set_default_handler(caf::skip);
  return waiting_for<centralized_worker_actor>(
    [=](start_atom, const float_blob& x, std::uint64_t steps, const std::string& sampling) mutable {
      auto& st = self->state;
      st.x = x.vec();
      st.steps = steps;
      if (!sampling.empty()) {
        proto::ComputeState cs;
        if (cs.ParseFromString(sampling))
          st.cu->restore_sampling(cs);
      }
      self->set_default_handler(caf::print_and_drop);
      self->become(std::move(running));
      compute_next(self);
    });
}

}  // namespace

node_actors spawn_centralized_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                   std::uint32_t) {
  node_actors out;
  out.worker = caf::actor_cast<caf::actor>(parent->spawn(sgd_worker, ctx, false));
  return out;
}

caf::actor spawn_centralized_replacement(caf::event_based_actor* sup, const context_ptr& ctx) {
  return caf::actor_cast<caf::actor>(sup->spawn(sgd_worker, ctx, true));
}

void join_centralized_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                             const worker_restart& r, restart_started started) {
  if (!r.checkpoint) {
    sup->send(caf::actor_cast<centralized_worker_actor>(r.replacement), start_atom::value,
              float_blob{ctx->plan->x0}, std::uint64_t{0}, std::string{});
    started("x^0 (no checkpoint taken yet: every step before the crash is lost)");
    return;
  }
  const auto& ck = *r.checkpoint;
  const auto& s = ck.nodes(0);
  sup->send(caf::actor_cast<centralized_worker_actor>(r.replacement), start_atom::value,
            float_blob{std::vector<float>(s.params().begin(), s.params().end())}, s.wakes(),
            s.compute().SerializeAsString());
  started("checkpoint " + std::to_string(ck.number()) + " (taken at " +
          std::to_string(ck.time_seconds()) + " s: its model after " + std::to_string(s.wakes()) +
          " steps; the steps after it are lost)");
}

void wire_centralized(caf::event_based_actor* sup, const context_ptr&,
                      std::vector<node_actors>& nodes, link_list&) {
  sup->send(nodes.at(0).worker, start_atom::value);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
algorithm_descriptor centralized_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kCentralized;
  d.name = "centralized";
  d.check_block = centralized_check_block;
  d.parse = centralized_parse_block;
  d.single_node = true;
  d.spawn_node = spawn_centralized_node;
  d.wire = wire_centralized;
  d.needs_every_node = "it is the only node";
  d.spawn_replacement = [](caf::event_based_actor* sup, const context_ptr& ctx, std::uint32_t,
                           std::uint64_t) { return spawn_centralized_replacement(sup, ctx); };
  d.join = join_centralized_worker;
  return d;
}

}  // namespace atrain
