/// Centralized SGD: on each wake, x -= gamma_k g(x); gamma_k = gamma / (1 + decay k).
///
/// Checkpoints: the worker holds after a step (no gradient in flight); its
/// state is x, the step count and the compute unit.
#include "atrain/actors/centralized.hpp"

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

void compute_next(caf::stateful_actor<sgd_state>* self) {
  auto& st = self->state;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  send_after(self, caf::actor_cast<caf::actor>(self), wait, wake_atom::value);
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

caf::behavior sgd_worker(caf::stateful_actor<sgd_state>* self, context_ptr ctx) {
  const auto& plan = *ctx->plan;
  const auto& algo = plan.spec.algorithm().centralized();
  self->state.cu.emplace(*ctx, 0);
  self->state.x = plan.x0;
  const auto* saved = resumed_node(*ctx, 0);
  if (saved)
    restore_sgd(self->state, *saved);
  const double gamma0 = algo.step_size();
  const double decay = algo.decay();
  return {
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
    [=](ckpt_pause_atom) { self->state.hold.requested = true; },
    [=](ckpt_drain_atom) { return self->state.hold.busy_for(self); },
    [=](ckpt_go_atom) {
      if (self->state.hold.go())
        compute_next(self);
    },
    [=](ckpt_state_atom) { return save_sgd(self->state); },
    [=](model_atom) {
      return compute_snapshot(0, *self->state.cu, self->state.x);
    },
  };
}

} // namespace

node_actors spawn_centralized_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                   std::uint32_t) {
  return {parent->spawn(sgd_worker, ctx)};
}

void wire_centralized(caf::event_based_actor* sup, const context_ptr&,
                      std::vector<node_actors>& nodes, std::vector<caf::actor>&) {
  sup->send(nodes.at(0).worker, start_atom::value);
}

} // namespace atrain
