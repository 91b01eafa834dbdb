/// Local SGD (ALGORITHMS.md §8), one worker actor per node.
///
/// Round of node i (H = local_steps):
///   1. H times: g = minibatch gradient at x (takes tau_i; the wake),
///               x -= gamma_k g,  gamma_k = gamma / (1 + decay k), k = local steps so far
///   2. S = sum_j x_j by the ring all-reduce of the MODELS (waits for the slowest)
///   3. x = S / n
/// then the next round. After each average all models are equal bit for bit.
#include "atrain/actors/local_sgd.hpp"

#include <algorithm>

#include "atrain/actors/ring.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

namespace {

struct local_sgd_state : ring_worker_state {
  std::uint32_t since_average = 0;
  static inline const char* name = "atrain_local_sgd_worker";
};

caf::behavior local_sgd_worker(caf::stateful_actor<local_sgd_state>* self, std::uint32_t id,
                               context_ptr ctx) {
  const auto& algo = ctx->plan->spec.algorithm().local_sgd();
  const double gamma0 = algo.step_size();
  const double decay = algo.decay();
  const std::uint32_t local_steps = std::max<std::uint32_t>(1, algo.local_steps());
  const auto inv_n = static_cast<float>(1.0 / static_cast<double>(ctx->plan->nodes()));
  auto average = [=] {                                       // 3.
    auto& st = self->state;
    const auto& sum = st.ring->sum();
    std::transform(sum.begin(), sum.end(), st.x.begin(), [=](float v) { return v * inv_n; });
    ring_compute_next(self);
  };
  auto local_step = [=] {                                    // 1.
    auto& st = self->state;
    const double gamma = gamma0 / (1.0 + decay * static_cast<double>(st.steps++));
    vec::axpy(static_cast<float>(-gamma), st.g.data(), st.x.data(), st.x.size());
    if (++st.since_average < local_steps)
      return ring_compute_next(self);
    st.since_average = 0;                                    // 2.
    if (st.ring->begin(self, *ctx, st.x.data()))
      average();
  };
  return ring_worker(self, id, ctx, local_step, average);
}

} // namespace

node_actors spawn_local_sgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                 std::uint32_t i) {
  node_actors node;
  node.worker = parent->spawn(local_sgd_worker, i, ctx);
  return node;
}

} // namespace atrain
