/// Local SGD (ALGORITHMS.md §8), one worker actor per node.
///
/// Round of node i (H = local_steps), straggler_policy WAIT (the default):
///   1. H times: g = minibatch gradient at x (takes tau_i; the wake),
///               x -= gamma_k g,  gamma_k = gamma / (1 + decay k), k = local steps so far
///   2. S = sum_j x_j by the ring all-reduce of the MODELS (waits for the slowest)
///   3. x = S / n
/// then the next round. After each average all models are equal bit for bit.
///
/// straggler_policy SKIP: every node has a model at any time, so the average
/// never needs to wait. A node still in its local steps when the
/// predecessor's first chunk of the average reaches it joins with its
/// CURRENT model (fewer local steps this round); the gradient in flight,
/// computed at the model it put in, is applied right after the average
/// (x = S/n - gamma_k g: one average stale, counted as a late contribution)
/// and counts as the first local step of the next round. Every round still
/// averages exactly n models (no counts needed), so right after the average
/// all models are equal; the rounds go at the pace of the first node to
/// finish its H steps.
///
/// Checkpoints (WAIT): a node holds after a local step (the gradient applied,
/// none in flight) or after an average, unless the ring has called it (the
/// predecessor began the average: it must take its remaining local steps
/// and join). A held node the average reaches later goes on the same way
/// (ring_worker) and holds after that average, so the ring is idle at the
/// barrier and the saved state is x, the counts and the compute unit.
/// SKIP: a held node does not start its next gradient; one the average
/// reaches joins at once with its model (as SKIP does), and a gradient done
/// during that average is applied when it ends, so the barrier saves the
/// same (nothing waits); at the go every node computes.
#include "algorithms/local_sgd/local_sgd.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/exceptions.hpp"

#include <algorithm>
#include <utility>

#include "algorithms/ring/ring.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

namespace {

struct local_sgd_state : ring_worker_state {
  bool late_gradient = false;  // SKIP: g was done during an average it joined early
  bool record = false;         // keep the ledger (test probe only)
  local_sgd_average open;      // the average in the ring, until its sum is in
  std::vector<local_sgd_average> ledger;
  static inline const char* name = "atrain_local_sgd_worker";
};

/// `joining`: a replacement after a crash (ring_joining).
ring_worker_actor::behavior_type
local_sgd_worker(ring_worker_actor::stateful_pointer<local_sgd_state> self, std::uint32_t id,
                 context_ptr ctx, bool joining) {
  name_exceptions(self);
  const auto& algo = ctx->plan->config<local_sgd_config>();
  const double gamma0 = algo.step_size;
  const double decay = algo.decay;
  const bool skip = algo.stragglers == straggler_policy::skip;
  self->state.skip = skip;
  const std::uint32_t local_steps = algo.local_steps;
  self->state.record = ctx->probe != nullptr;
  auto apply = [=] {  // x -= gamma_k g
    auto& st = self->state;
    const double gamma = gamma0 / (1.0 + decay * static_cast<double>(st.steps++));
    vec::axpy(static_cast<float>(-gamma), st.g.data(), st.x.data(), st.x.size());
  };
  auto join = [=] {  // 2.
    auto& st = self->state;
    if (st.record)
      st.open = {st.averages, st.x, st.since_average, {}};
    st.since_average = 0;
    return st.ring->begin(self, *ctx, st.x.data());
  };
  auto hold_here = [=] {  // at a gradient boundary with the ring idle (checkpoints)
    auto& st = self->state;
    return st.hold.requested && !st.ring->called() && st.hold.stop_here();
  };
  auto average = [=] {  // 3.
    auto& st = self->state;
    const auto& sum = st.ring->sum();
    const auto inv_n = static_cast<float>(1.0 / st.ring->count());  // the ring's members
    std::transform(sum.begin(), sum.end(), st.x.begin(), [=](float v) { return v * inv_n; });
    ++st.averages;
    if (st.record) {
      st.open.average = st.x;
      st.ledger.push_back(std::exchange(st.open, {}));
    }
    if (st.late_gradient) {  // SKIP: the gradient done meanwhile, one average stale
      st.late_gradient = false;
      apply();
      ++st.since_average;
      st.staleness.add(1.0);
      ++st.late;
    }
    if (!st.computing && !hold_here())
      ring_compute_next(self);
    if (skip && st.ring->called())
      (void)join();  // never done at once: the ring needs this rank's chunks (n > 1)
  };
  auto local_step = [=] {  // 1.
    auto& st = self->state;
    if (st.ring->active()) {  // SKIP: joined the average early, apply after it
      st.late_gradient = true;
      return;
    }
    apply();
    st.staleness.add(0.0);
    if (++st.since_average < local_steps) {
      if (!hold_here())
        ring_compute_next(self);
      return;
    }
    if (join())
      average();
  };
  auto on_called = [=] {  // SKIP: the average has begun: join with the current model
    if (skip && join())
      average();
  };
  auto running = ring_worker(self, id, ctx, false, joining, local_step, average, on_called);
  return joining ? ring_joining(self, id, ctx, std::move(running)) : running;
}

}  // namespace

std::vector<local_sgd_average> local_sgd_take_averages(const caf::actor_addr& worker) {
  return ring_take(worker, &local_sgd_state::ledger);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
algorithm_descriptor local_sgd_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kLocalSgd;
  d.node_part = proto::NodeState::kRing;
  d.name = "local_sgd";
  d.check_block = local_sgd_check_block;
  d.parse = local_sgd_parse_block;
  d.spawn_node = spawn_ring_node<local_sgd_worker>;
  d.wire = wire_ring;
  d.needs_every_node = "every step is a ring all-reduce over every node";
  d.spawn_replacement = spawn_ring_replacement<local_sgd_worker>;
  d.join = join_ring_worker;
  d.joins = "every average is over the ring of the nodes present (in id order), so nobody "
            "waits on a node not there yet; at a join the ring freezes at an average boundary "
            "(as for a restart), the joiner takes the model of the rank before it and the "
            "ring averages over the new members from the next round";
  d.links.coding = ring_coding;  // the ring codes its own chunks
  return d;
}

}  // namespace atrain
