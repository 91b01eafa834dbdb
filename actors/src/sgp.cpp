/// SGP and OSGP: stochastic gradient push, push-sum gossip (ALGORITHMS.md §7).
/// One file for both: OSGP is SGP that does not wait (a flag).
///
/// Node i keeps a numerator x_i (x_i^0 = x^0) and a weight w_i (w_i^0 = 1),
/// both in float64 so that push-sum mass is moved exactly (halving is exact,
/// the sums round only at the last bit). Step k of node i:
///   1. z_i = x_i / w_i; g = g_i(z_i)              (takes tau_i: the wake)
///   2. x_i -= gamma_k g,  gamma_k = gamma / (1 + decay k)
///   3. keep (x_i/2, w_i/2) and send (x_i/2, w_i/2) to ONE out-neighbour, the
///      one-peer directed exponential graph rotating each step:
///        peer(i, k) = (i + 2^(k mod m)) mod n,  m = ceil(log2 n)
///      (the mixing matrix of a step is column stochastic with p = 1/2;
///      n = 1: no messages, plain SGD on z = x).
///   4. add (x_j/2, w_j/2) to (x_i, w_i) whenever a message arrives.
/// The sender of a step-s message to i is named by the schedule:
/// source(i, s) = (i - 2^(s mod m)) mod n, so every node receives exactly one
/// message per step index s.
///
/// SGP (synchronous): before step k+1, node i waits until the step-k message
/// from source(i, k) has been added. A message of a step this node has not
/// completed yet (its sender is ahead) is held and added right after this
/// node's own send of that step, so every node computes exactly
///   (x, w)^{k+1} = P^k ((x, w)^k - gamma_k (g(z^k), 0))
/// whatever the timing: the run equals the matrix recursion (tested).
/// OSGP (overlap): messages are added the instant they arrive, and node i
/// starts step k as long as k - o <= tau, where o is the oldest step whose
/// incoming message it has not received and tau = max_staleness (0 means 1).
///
/// Links are acknowledged (every packet arrives at least once), so no
/// push-sum mass is lost; duplicates are dropped with exactly_once. Packets
/// carry seq = s + 1 (s the sender's step); since the schedule names the
/// sender of each step, the receiver's incoming seqs count 1, 2, 3, ... over
/// all its senders together and one exactly_once stream keyed by the
/// receiver de-duplicates (sender, seq) with small memory; its first unseen
/// seq gives OSGP's oldest missing step. Malformed packets (wrong stream or
/// size, unknown sender, seq 0 or a step at which the schedule does not
/// send from that sender to this node, non-finite or non-positive weight,
/// non-finite numerator) are rejected, counted and traced, never added.
///
/// Staleness of an added message: the receiver's completed steps minus the
/// sender's (s + 1), clamped at 0 (a message from a sender ahead is fresh):
/// 0 for SGP by construction, up to about tau for OSGP.
///
/// The evaluated model is the push-sum average sum_i x_i / sum_i w_i: each
/// snapshot carries the numerator x_i as params and w_i as weight.
#include "atrain/actors/sgp.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "gossip.hpp"

namespace atrain {

std::uint32_t pushsum_period(std::uint32_t n) {
  std::uint32_t m = 0;
  while ((std::uint64_t{1} << m) < n)
    ++m;
  return m;
}

std::uint32_t pushsum_peer(std::uint32_t i, std::uint64_t k, std::uint32_t n) {
  const std::uint64_t hop = std::uint64_t{1} << (k % pushsum_period(n));
  return static_cast<std::uint32_t>((i + hop) % n);
}

std::uint32_t pushsum_source(std::uint32_t i, std::uint64_t k, std::uint32_t n) {
  const std::uint64_t hop = std::uint64_t{1} << (k % pushsum_period(n));
  return static_cast<std::uint32_t>((i + n - hop % n) % n);
}

namespace {

/// node_base::x holds z_i = x_i / w_i in float (the gradient's read point);
/// node_base::neighbours the distinct out-neighbours, aligned with the routes.
struct sgp_state : gossip::node_base {
  pushsum_node ps;
  std::uint32_t n = 1;
  bool overlap = false;        // OSGP
  std::uint64_t max_ahead = 0; // OSGP: tau; SGP: 0
  double gamma = 0;
  double decay = 0;
  bool computing = false;      // a gradient is in progress
  exactly_once seen;           // incoming seqs (one stream per receiver)
  std::map<std::uint64_t, packet> held;  // SGP: messages of steps not completed yet
  static inline const char* name = "atrain_sgp_worker";
};
using sgp_ptr = caf::stateful_actor<sgp_state>*;

/// Shortest wait between two gradients (run-clock seconds): a node that
/// never waits must not send to itself with no delay (see adpsgd.cpp).
constexpr double min_wait = 1e-6;

void begin_step(sgp_ptr self) {
  auto& st = self->state;
  const std::size_t dim = st.x.size();
  for (std::size_t k = 0; k < dim; ++k)                                 // 1
    st.x[k] = static_cast<float>(st.ps.x[k] / st.ps.w);
  st.computing = true;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);
  self->delayed_send(self, to_timespan(std::max(wait, min_wait)), wake_atom::value, st.ps.steps);
}

/// Whether step `steps` may start: SGP once every earlier step's message is
/// in, OSGP while no more than tau steps ahead of the oldest missing one.
[[nodiscard]] bool may_start(const sgp_state& st) {
  if (st.computing)
    return false;
  if (st.n == 1)
    return true;
  const std::uint64_t oldest_missing = st.seen.first_unseen(0, pushsum_mass) - 1;
  return st.ps.steps <= oldest_missing + st.max_ahead;
}

/// Step 4: (x_i, w_i) += the packet's half.
void add(sgp_state& st, const packet& p) {
  vec::axpy(1.0, p.d.ptr(), st.ps.x.data(), st.ps.x.size());
  st.ps.w += p.scalars[0];
  st.staleness.add(st.ps.steps > p.seq ? static_cast<double>(st.ps.steps - p.seq) : 0.0);
  if (st.ps.record)
    st.ps.added.push_back({p.from, p.seq - 1, st.ps.steps});
}

void try_start(sgp_ptr self) {
  if (may_start(self->state))
    begin_step(self);
}

void on_wake(sgp_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  auto& ps = st.ps;
  const std::size_t dim = ps.x.size();
  const std::uint64_t k = ps.steps;
  const double gamma = gossip::step_size(st.gamma, st.decay, k);        // 2
  vec::axpy(-gamma, st.g.data(), ps.x.data(), dim);
  if (ps.record)
    ps.descents.push_back({k, gamma, st.g});
  if (st.n > 1) {                                                       // 3
    vec::scale(0.5, ps.x.data(), dim);
    ps.w *= 0.5;
    packet p;
    p.from = id;
    p.kind = pushsum_mass;
    p.seq = k + 1;
    p.d = double_blob{ps.x};
    p.scalars = {ps.w};
    const auto to = pushsum_peer(id, k, st.n);
    if (ps.record)
      ps.sent.push_back({to, k, p.d, ps.w});
    gossip::send_to(self, ctx, st, to, std::move(p));
  }
  ++ps.steps;
  st.computing = false;
  auto it = st.held.find(k);  // SGP: this step's message arrived early
  if (it != st.held.end()) {
    add(st, it->second);
    st.held.erase(it);
  }
  try_start(self);
}

[[nodiscard]] bool well_formed(const sgp_state& st, std::uint32_t id, const packet& p) {
  const std::size_t dim = st.ps.x.size();
  if (p.kind != pushsum_mass || st.n == 1 || p.from >= st.n || p.seq == 0 ||
      pushsum_source(id, p.seq - 1, st.n) != p.from || p.d.size() != dim || !p.f.empty() ||
      p.scalars.size() != 1 || !std::isfinite(p.scalars[0]) || p.scalars[0] <= 0)
    return false;
  return std::all_of(p.d.ptr(), p.d.ptr() + dim, [](double v) { return std::isfinite(v); });
}

void on_deliver(sgp_ptr self, run_context& ctx, std::uint32_t id, const packet& p) {
  auto& st = self->state;
  ctx.events.record(ctx.ns(self), id, event_kind::receive, p.from, p.seq);
  if (!well_formed(st, id, p))
    return gossip::reject(self, ctx, st, id, p);
  if (!st.seen.first_time(0, pushsum_mass, p.seq))
    return;  // a duplicate (retransmitted or duplicated by the link)
  if (!st.overlap && p.seq > st.ps.steps)
    st.held.emplace(p.seq - 1, p);  // SGP: added once this node completes that step
  else
    add(st, p);                                                         // 4
  try_start(self);
}

caf::behavior sgp_worker(sgp_ptr self, std::uint32_t id, context_ptr ctx) {
  const auto& plan = *ctx->plan;
  const auto& spec = plan.spec.algorithm();
  const bool overlap = spec.has_osgp();
  const auto& algo = overlap ? spec.osgp() : spec.sgp();
  auto& st = self->state;
  st.cu.emplace(*ctx, id);
  st.x = plan.x0;
  st.ps.x.assign(plan.x0.begin(), plan.x0.end());
  st.n = static_cast<std::uint32_t>(plan.nodes());
  st.overlap = overlap;
  st.max_ahead = overlap ? std::max<std::uint32_t>(1, algo.max_staleness()) : 0;
  st.gamma = algo.step_size();
  st.decay = algo.decay();
  for (std::uint32_t a = 0; a < pushsum_period(st.n); ++a)
    st.neighbours.push_back(pushsum_peer(id, a, st.n));
  if (ctx->probe) {
    st.ps.record = true;
    ctx->probe->pushsum.at(id) = &st.ps;
    self->attach_functor([probe = ctx->probe, id] { probe->pushsum.at(id) = nullptr; });
  }
  return {
    [=](init_atom, const std::vector<caf::actor>& routes) {
      gossip::take_routes(self->state, routes);
    },
    [=](start_atom) { try_start(self); },
    [=](wake_atom, std::uint64_t step) {
      ctx->events.record(ctx->ns(self), id, event_kind::wake, step);
      on_wake(self, *ctx, id);
    },
    [=](deliver_atom, const packet& p) { on_deliver(self, *ctx, id, p); },
    [=](model_atom) {
      const auto& st = self->state;
      auto s = make_snapshot(id, *st.cu, st.out, st.staleness,
                             std::vector<float>(st.ps.x.begin(), st.ps.x.end()));
      s.weight = st.ps.w;
      return s;
    },
    [=](stats_atom) { return gossip::stats(self->state); },
  };
}

} // namespace

node_actors spawn_sgp_node(caf::event_based_actor* parent, const context_ptr& ctx,
                           std::uint32_t i) {
  return gossip::one_actor_node(parent->spawn(sgp_worker, i, ctx));
}

void wire_sgp(caf::event_based_actor* sup, const context_ptr& ctx,
              std::vector<node_actors>& nodes, std::vector<caf::actor>& links) {
  const auto n = static_cast<std::uint32_t>(nodes.size());
  std::vector<std::vector<std::uint32_t>> out(n);
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t a = 0; a < pushsum_period(n); ++a)
      out[i].push_back(pushsum_peer(i, a, n));
  gossip::wire_nodes(sup, ctx, nodes, links, out);
}

} // namespace atrain
