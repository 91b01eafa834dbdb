/// Ring-AllReduce SGD (ALGORITHMS.md §4), one worker actor per node.
///
/// Step k of node i (straggler_policy WAIT, the default):
///   1. g_i = minibatch gradient at x (takes tau_i; the wake)
///   2. S = sum_j g_j by the ring all-reduce (every node waits for the slowest)
///   3. x -= gamma_k / n * S,  gamma_k = gamma / (1 + decay k)
/// then the next gradient at x. All nodes get the same S bit for bit, so the
/// models never drift apart (consensus error 0).
///
/// straggler_policy SKIP (backup-worker style, issue 5; decentralized, no
/// timeouts): the ring moves at the pace of the nodes whose gradients are
/// ready. A node joins step k
///   - on its own when a gradient is done and it is between steps, with the
///     gradients done so far (usually one), or
///   - when the predecessor's first chunk of step k reaches it first, with
///     whatever is done: nothing means a ZERO contribution (the gradient in
///     flight goes on and joins a later step, counted as late with its
///     staleness = steps since it read x).
/// The chunks carry contribution counts (ring.hpp), so every node ends the
/// step with the same S and the same count C and descends x -= gamma_k / C * S.
/// C >= 1: the first node to begin a step does so with a gradient.
/// A node starts its next gradient when a step ends and none is in flight
/// (a fast node: exactly the WAIT cycle). A node never begins a step early
/// with an old gradient while the others still compute: that would call its
/// successor before the successor's gradient could be ready, and every node
/// down the ring would join late in turn. Without a straggler SKIP therefore
/// changes little: a node whose gradient is a little late (jitter) joins
/// with zero and adds that gradient one step late; nothing is ever dropped.
/// WAIT packets and traces are exactly as before (no counts on the wire).
///
/// Checkpoints (ring.hpp ring_worker): a node holds after a step without
/// starting its next gradient. With SKIP a held node the next step reaches
/// joins it at once (with its pending gradients or zeros) and holds again
/// after it; at rest the ring is idle, and gradients done but not in a step
/// yet (pending) go into the file (RingSkipState).
#include "algorithms/allreduce/allreduce.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/exceptions.hpp"

#include <utility>

#include "algorithms/gossip/gossip.hpp"
#include "algorithms/ring/ring.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

namespace {

struct allreduce_state : ring_worker_state {
  double gamma0 = 0;
  double decay = 0;
  bool record = false;  // keep the ledger (test probe only)
  allreduce_step open;  // the step in the ring, until its sum is in
  std::vector<allreduce_step> ledger;
  static inline const char* name = "atrain_allreduce_worker";
};
using allreduce_ptr = ring_worker_actor::stateful_pointer<allreduce_state>;

void descend(allreduce_ptr self, run_context& ctx);

/// 2. Begins the ring's current step with `v` holding `count` gradients.
void begin_step(allreduce_ptr self, run_context& ctx, const float* v, double count) {
  auto& st = self->state;
  if (st.record) {
    st.open.step = st.steps;
    st.open.contributed.assign(v, v + st.x.size());
    st.open.count = count;
  }
  if (st.ring->begin(self, ctx, v, count))
    descend(self, ctx);  // one node: the step is done at once
}

/// SKIP: joins the current step with the gradients done so far (zeros if none).
void join(allreduce_ptr self, run_context& ctx) {
  auto& st = self->state;
  if (st.pending_read.empty())
    st.pending.assign(st.x.size(), 0.0F);
  for (auto read : st.pending_read)
    st.applied(read);
  const auto count = static_cast<double>(st.pending_read.size());
  st.pending_read.clear();
  begin_step(self, ctx, st.pending.data(), count);
}

/// 3. The step's sum is in: descend, then compute (and, SKIP, join the next
/// step if the predecessor has begun it already).
void descend(allreduce_ptr self, run_context& ctx) {
  auto& st = self->state;
  const double gamma = gossip::step_size(st.gamma0, st.decay, st.steps++);
  const double count = st.ring->count();  // n with WAIT
  if (count > 0)
    vec::axpy(static_cast<float>(-gamma / count), st.ring->sum().data(), st.x.data(), st.x.size());
  if (st.record) {
    st.open.sum = st.ring->sum();
    st.open.total = count;
    st.open.x = st.x;
    st.ledger.push_back(std::exchange(st.open, {}));
  }
  // A checkpoint holds the worker here, at a round boundary, unless the
  // next round has already reached it.
  const bool hold = st.hold.requested && !st.ring->called() && st.hold.stop_here();
  if (!st.computing && !hold)
    ring_compute_next(self);  // 1.
  if (st.skip && st.ring->called())
    join(self, ctx);
}

/// `joining`: a replacement after a crash (ring_joining).
ring_worker_actor::behavior_type allreduce_worker(allreduce_ptr self, std::uint32_t id,
                                                  context_ptr ctx, bool joining) {
  name_exceptions(self);
  const auto& algo = ctx->plan->config<allreduce_config>();
  auto& st = self->state;
  st.skip = algo.stragglers == straggler_policy::skip;
  st.gamma0 = algo.step_size;
  st.decay = algo.decay;
  st.record = ctx->probe != nullptr;
  auto on_wake = [=] {
    auto& st = self->state;
    if (!st.skip) {  // WAIT
      st.applied(st.read_at);
      return begin_step(self, *ctx, st.g.data(), 1);
    }
    if (st.pending_read.empty())
      st.pending = st.g;
    else
      vec::axpy(1.0F, st.g.data(), st.pending.data(), st.g.size());
    st.pending_read.push_back(st.read_at);
    if (!st.ring->active())
      join(self, *ctx);
  };
  auto on_called = [=] {
    if (self->state.skip)
      join(self, *ctx);
  };
  auto running = ring_worker(
    self, id, ctx, st.skip, joining, on_wake, [=] { descend(self, *ctx); }, on_called);
  return joining ? ring_joining(self, id, ctx, std::move(running)) : running;
}

}  // namespace

std::vector<allreduce_step> allreduce_take_steps(const caf::actor_addr& worker) {
  return ring_take(worker, &allreduce_state::ledger);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
namespace {

/// A SKIP ring's waiting gradients (ring_skip) against the model.
std::string allreduce_check_node(const proto::NodeState& s, std::uint32_t, const run_plan& plan) {
  const auto& k = s.ring().skip();
  if (k.pending_read_size() > 0 ? static_cast<std::size_t>(k.pending_size()) != plan.dim()
                                : k.pending_size() != 0)
    return "ring_skip: the waiting gradients' sum does not fit the model";
  for (auto read : k.pending_read())
    if (read > s.wakes())
      return "ring_skip: a waiting gradient read x after the node's step";
  return {};
}

}  // namespace

algorithm_descriptor allreduce_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kAllreduce;
  d.node_part = proto::NodeState::kRing;
  d.name = "allreduce";
  d.check_block = allreduce_check_block;
  d.parse = allreduce_parse_block;
  d.spawn_node = spawn_ring_node<allreduce_worker>;
  d.wire = wire_ring;
  d.needs_every_node = "every step is a ring all-reduce over every node";
  d.spawn_replacement = spawn_ring_replacement<allreduce_worker>;
  d.join = join_ring_worker;
  d.joins = "every step is an all-reduce over the ring of the nodes present (in id order), so "
            "nobody waits on a node not there yet; at a join the ring freezes at a step "
            "boundary (as for a restart), the joiner takes the model of the rank before it "
            "and the ring runs over the new members from the next round";
  d.check_node = allreduce_check_node;
  d.links.coding = ring_coding;  // the ring codes its own chunks
  return d;
}

}  // namespace atrain
