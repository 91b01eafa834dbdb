/// Ring-AllReduce SGD (ALGORITHMS.md §4), one worker actor per node.
///
/// Step k of node i:
///   1. g_i = minibatch gradient at x (takes tau_i; the wake)
///   2. S = sum_j g_j by the ring all-reduce (every node waits for the slowest)
///   3. x -= gamma_k / n * S,  gamma_k = gamma / (1 + decay k)
/// then the next gradient at x. All nodes get the same S bit for bit, so the
/// models never drift apart (consensus error 0).
#include "atrain/actors/allreduce.hpp"

#include "atrain/actors/ring.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

namespace {

struct allreduce_state : ring_worker_state {
  static inline const char* name = "atrain_allreduce_worker";
};

caf::behavior allreduce_worker(caf::stateful_actor<allreduce_state>* self, std::uint32_t id,
                               context_ptr ctx) {
  const auto& algo = ctx->plan->spec.algorithm().allreduce();
  const double gamma0 = algo.step_size();
  const double decay = algo.decay();
  const auto n = static_cast<double>(ctx->plan->nodes());
  auto descend = [=] {                                       // 3.
    auto& st = self->state;
    const double gamma = gamma0 / (1.0 + decay * static_cast<double>(st.steps++));
    vec::axpy(static_cast<float>(-gamma / n), st.ring->sum().data(), st.x.data(), st.x.size());
    ring_compute_next(self);                                 // 1.
  };
  auto sum_gradient = [=] {                                  // 2.
    auto& st = self->state;
    if (st.ring->begin(self, *ctx, st.g.data()))
      descend();
  };
  return ring_worker(self, id, ctx, sum_gradient, descend);
}

} // namespace

node_actors spawn_allreduce_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                 std::uint32_t i) {
  node_actors node;
  node.worker = parent->spawn(allreduce_worker, i, ctx);
  return node;
}

} // namespace atrain
