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
///
/// Checkpoints (checkpoint.hpp): a node holds at its next gradient boundary
/// (at once when it is waiting for a message); the barrier saves (x, w), the
/// step count, the set of incoming seqs received and, SGP only, the messages
/// held for steps not completed yet. Restart (join_sgp_worker, sgp_restart.cpp): the
/// replacement takes half of a live in-neighbour's (x, w) and joins at the
/// dead worker's next step; messages sent to the node before the join are
/// lost with the dead worker (docs/RELIABILITY.md "Restart").
#include "algorithms/sgp/sgp.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/exceptions.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>
#include <utility>

#include "algorithms/gossip/gossip.hpp"
#include "algorithms/sgp/sgp_internal.hpp"
#include "atrain/actors/checkpoint.hpp"

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

namespace sgp_detail {
namespace {

/// Shortest wait between two gradients (run-clock seconds): a node that
/// never waits must not send to itself with no delay (see adpsgd.cpp).
constexpr double min_wait = 1e-6;

void begin_step(sgp_ptr self) {
  auto& st = self->state;
  const std::size_t dim = st.x.size();
  for (std::size_t k = 0; k < dim; ++k)  // 1
    st.x[k] = static_cast<float>(st.ps.x[k] / st.ps.w);
  st.computing = true;
  const double wait = std::max(st.cu->gradient(self, st.x.data(), st.g), min_wait);
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  self->delayed_send(caf::actor_cast<sgp_worker_actor>(self), to_timespan(wait), wake_atom::value,
                     st.ps.steps);
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

/// At a gradient boundary: starts the next step when it may, unless a
/// checkpoint barrier asked to hold (then the node holds there).
void try_start(sgp_ptr self) {
  auto& st = self->state;
  if (st.computing || st.members.frozen)  // frozen: a join is being decided (resume)
    return;
  if (st.hold.requested) {
    st.hold.held = true;
    return;
  }
  if (may_start(st))
    begin_step(self);
}

void on_wake(sgp_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  auto& ps = st.ps;
  const std::size_t dim = ps.x.size();
  const std::uint64_t k = ps.steps;
  const double gamma = gossip::step_size(st.gamma, st.decay, k);  // 2
  vec::axpy(-gamma, st.g.data(), ps.x.data(), dim);
  if (ps.record)
    ps.descents.push_back({k, gamma, st.g});
  const auto to = st.n > 1 ? pushsum_peer(id, k, st.n) : id;
  if (to != id && st.members[to]) {  // 3 (a peer not in the run: all stays here)
    vec::scale(0.5, ps.x.data(), dim);
    ps.w *= 0.5;
    packet p;
    p.from = id;
    p.kind = pushsum_mass;
    p.seq = k + 1;
    p.d = double_blob{ps.x};
    p.scalars = {ps.w};
    if (ps.record)
      ps.sent.push_back({to, k, p.d, ps.w});
    const auto slot = static_cast<std::size_t>(k % pushsum_period(st.n));
    ++st.sent_count[slot];
    st.sent_w[slot] += ps.w;
    gossip::send_to(self, ctx, st, to, std::move(p));
  }
  ++ps.steps;
  step_done(st, id);
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
  if (!well_formed(st, id, p) || from_the_future(p.seq, st.seq_rate, ctx.seconds(self)))
    return gossip::reject(self, ctx, st, id, p);
  if (!st.ps.fence.empty() && p.seq <= st.ps.fence[in_slot(st, p.seq)]) {
    // Sent to this node's dead incarnation before the join: lost with it.
    // Each dropped seq is traced once (key 1: a stream apart from the live one).
    if (st.seen.first_time(1, pushsum_mass, p.seq)) {
      ctx.events.record(ctx.ns(self), id, event_kind::fenced, p.from, p.seq);
      if (st.ps.record)
        st.ps.fenced.push_back({p.from, p.seq - 1, st.ps.steps});
    }
    return;
  }
  if (!st.seen.first_time(0, pushsum_mass, p.seq))
    return;  // a duplicate (retransmitted or duplicated by the link)
  st.highest_seen = std::max(st.highest_seen, p.seq);
  if (!st.overlap && p.seq > st.ps.steps)
    st.held.emplace(p.seq - 1, p);  // SGP: added once this node completes that step
  else
    add(st, p);  // 4
  try_start(self);
}

// ---- checkpoints: at a barrier no gradient is in flight and no packet on a
// link; SGP may hold messages of steps it has not completed (saved), OSGP
// has added everything it received.

std::string save_sgp(const sgp_state& st) {
  proto::NodeState s;
  const auto& ps = st.ps;
  for (double v : ps.x)
    s.add_params(static_cast<float>(v / ps.w));
  *s.mutable_pushsum()->mutable_x() = {ps.x.begin(), ps.x.end()};
  s.mutable_pushsum()->set_w(ps.w);
  s.set_wakes(ps.steps);
  save_worker_counters(st, s);
  for (const auto& [step, p] : st.held) {
    auto* h = s.mutable_pushsum()->add_held();
    h->set_from(p.from);
    h->set_seq(p.seq);
    *h->mutable_x() = {p.d.ptr(), p.d.ptr() + p.d.size()};
    h->set_w(p.scalars.at(0));
  }
  const auto first = st.seen.first_unseen(0, pushsum_mass);
  s.mutable_pushsum()->set_first_unseen(first);
  for (auto q = first + 1; q <= st.highest_seen; ++q)
    if (st.seen.seen(0, pushsum_mass, q))
      s.mutable_pushsum()->add_seen_above(q);
  *s.mutable_pushsum()->mutable_sent_count() = {st.sent_count.begin(), st.sent_count.end()};
  *s.mutable_pushsum()->mutable_sent_w() = {st.sent_w.begin(), st.sent_w.end()};
  return s.SerializeAsString();
}

void restore_sgp(sgp_state& st, std::uint32_t id, const proto::NodeState& s) {
  auto& ps = st.ps;
  ps.x.assign(s.pushsum().x().begin(), s.pushsum().x().end());
  ps.w = s.pushsum().w();
  ps.steps = s.wakes();
  restore_worker_counters(st, s);
  for (const auto& h : s.pushsum().held()) {
    packet p;
    p.from = h.from();
    p.to = id;
    p.kind = pushsum_mass;
    p.seq = h.seq();
    p.d = double_blob{std::vector<double>(h.x().begin(), h.x().end())};
    p.scalars = {h.w()};
    st.held.emplace(p.seq - 1, std::move(p));
  }
  for (std::uint64_t q = 1; q < s.pushsum().first_unseen(); ++q)
    (void)st.seen.first_time(0, pushsum_mass, q);
  st.highest_seen = s.pushsum().first_unseen() - 1;
  for (auto q : s.pushsum().seen_above()) {
    (void)st.seen.first_time(0, pushsum_mass, q);
    st.highest_seen = std::max(st.highest_seen, q);
  }
  if (static_cast<std::size_t>(s.pushsum().sent_count_size()) == st.sent_count.size() &&
      static_cast<std::size_t>(s.pushsum().sent_w_size()) == st.sent_w.size()) {
    st.sent_count.assign(s.pushsum().sent_count().begin(), s.pushsum().sent_count().end());
    st.sent_w.assign(s.pushsum().sent_w().begin(), s.pushsum().sent_w().end());
  }
  st.hold.requested = st.hold.held = true;  // until the supervisor's go
}

/// Loads node `id`'s start (or, resumed, its saved state: returned, else null).
const proto::NodeState* setup_sgp(sgp_ptr self, std::uint32_t id, const run_context& ctx,
                                  bool joining) {
  const auto& plan = *ctx.plan;
  const auto& algo = plan.config<push_sum_config>();
  auto& st = self->state;
  st.cu.emplace(ctx, id);
  st.seq_rate = future_seq_rate(plan);
  st.x = plan.x0;
  st.ps.x.assign(plan.x0.begin(), plan.x0.end());
  st.n = static_cast<std::uint32_t>(plan.nodes());
  st.overlap = algo.overlap;
  st.max_ahead = algo.max_ahead;
  st.gamma = algo.step_size;
  st.decay = algo.decay;
  for (std::uint32_t a = 0; a < pushsum_period(st.n); ++a)
    st.neighbours.push_back(pushsum_peer(id, a, st.n));
  st.sent_count.assign(st.neighbours.size(), 0);
  st.sent_w.assign(st.neighbours.size(), 0.0);
  st.members.start(plan);
  const auto* saved = joining ? nullptr : resumed_node(ctx, id);  // a replacement joins
  if (saved)
    restore_sgp(st, id, *saved);
  return saved;
}

/// The running worker (`restored`: resumed from a checkpoint, it holds
/// until the supervisor's go).
sgp_worker_actor::behavior_type sgp_running(sgp_ptr self, std::uint32_t id, context_ptr ctx,
                                            bool restored) {
  return compose<sgp_worker_actor::behavior_type>(
    gossip::start_handlers(self, restored, [=] { try_start(self); }),
    [=](wake_atom, std::uint64_t step) {
      ctx->events.record(ctx->ns(self), id, event_kind::wake, step);
      on_wake(self, *ctx, id);
    },
    [=](deliver_atom, const packet& p) { on_deliver(self, *ctx, id, p); },
    [=](ckpt_pause_atom) {
      auto& st = self->state;
      st.hold.requested = true;
      st.hold.held = !st.computing;  // idle at a boundary (waiting for a message): holds now
    },
    [=](restart_atom, std::uint32_t k) { return fence_for(self, *ctx, id, k); },
    [=](donate_atom, std::uint32_t k) { return donate(self, *ctx, id, k); },
    // Node k joins the run (join_sgp_node): no step begins until the
    // supervisor names the step k is in from, past every node's steps.
    [=](join_atom, std::uint32_t k) {
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), id, event_kind::restart, k, st.ps.steps);
      st.members.frozen = true;
      return st.ps.steps;
    },
    [=](resume_atom, std::uint64_t from, std::uint32_t k) {
      auto& st = self->state;
      st.members.due.emplace(from, k);
      st.members.frozen = false;
      step_done(st, id);  // takes k in if its step has come
      try_start(self);
    },
    [=](model_atom) {
      const auto& st = self->state;
      auto s = make_snapshot(id, *st.cu, st.out, st.staleness,
                             std::vector<float>(st.ps.x.begin(), st.ps.x.end()));
      s.weight = st.ps.w;
      return s;
    },
    [=](stats_atom) { return gossip::stats(self->state); },
    // A replacement's join after it started (never sent twice): nothing.
    [](start_atom, std::uint64_t, const double_blob&, double, const std::vector<std::uint64_t>&,
       const std::vector<caf::actor>&, std::uint32_t, const std::vector<std::uint32_t>&) {},
    ckpt_go_handler(self, [=] { try_start(self); }), ckpt_drain_handler(self),
    ckpt_state_handler([=] { return save_sgp(self->state); }));
}

/// Node `id`'s worker; a replacement (`joining`, after a crash) keeps every
/// message until the supervisor starts it (join_sgp_worker) and appears in
/// the probe only then.
sgp_worker_actor::behavior_type sgp_worker(sgp_ptr self, std::uint32_t id, context_ptr ctx,
                                           bool joining) {
  name_exceptions(self);
  auto show = [self, ctx, id] {
    if (!ctx->probe)
      return;
    self->state.ps.record = true;
    run_probe::show_state<pushsum_node>(ctx->probe, self, id, &self->state.ps);
  };
  const auto* saved = setup_sgp(self, id, *ctx, joining);
  if (!joining)
    show();
  auto running = sgp_running(self, id, ctx, saved != nullptr);
  if (!joining)
    return running;
  self->set_default_handler(caf::skip);
  return waiting_for<sgp_worker_actor>(
    [=](start_atom, std::uint64_t step, const double_blob& x, double w,
        const std::vector<std::uint64_t>& fence, const std::vector<caf::actor>& routes,
        std::uint32_t donor, const std::vector<std::uint32_t>& members) mutable {
      join(self, step, x, w, fence, donor);
      if (!members.empty())
        self->state.members.set(members);
      gossip::take_routes(self->state, routes);
      show();
      self->set_default_handler(caf::print_and_drop);
      self->become(std::move(running));
      try_start(self);
    });
}

}  // namespace

}  // namespace sgp_detail

node_actors spawn_sgp_node(caf::event_based_actor* parent, const context_ptr& ctx,
                           std::uint32_t i) {
  return gossip::one_actor_node(
    caf::actor_cast<caf::actor>(parent->spawn(sgp_detail::sgp_worker, i, ctx, false)));
}

caf::actor spawn_sgp_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                 std::uint32_t k) {
  return caf::actor_cast<caf::actor>(sup->spawn(sgp_detail::sgp_worker, k, ctx, true));
}

void wire_sgp(caf::event_based_actor* sup, const context_ptr& ctx, std::vector<node_actors>& nodes,
              link_list& links) {
  const auto n = static_cast<std::uint32_t>(nodes.size());
  std::vector<std::vector<std::uint32_t>> out(n);
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t a = 0; a < pushsum_period(n); ++a)
      out[i].push_back(pushsum_peer(i, a, n));
  gossip::wire_nodes(sup, ctx, nodes, links, out);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
namespace {

/// The push-sum numerator, weight and held messages against the model.
std::string pushsum_check_node(const proto::NodeState& s, std::uint32_t, const run_plan& plan) {
  const auto dim = plan.dim();
  if (static_cast<std::size_t>(s.pushsum().x_size()) != dim)
    return "the push-sum numerator does not have the model's dimension " + std::to_string(dim);
  if (!std::isfinite(s.pushsum().w()) || !(s.pushsum().w() > 0))
    return "the push-sum weight is not a positive number";
  for (const auto& h : s.pushsum().held())
    if (static_cast<std::size_t>(h.x_size()) != dim || !(h.w() > 0) || h.seq() == 0)
      return "a held push-sum message does not fit the model";
  return {};
}

/// What SGP and OSGP share; they differ in name and in what a lost node does.
algorithm_descriptor pushsum_descriptor() {
  algorithm_descriptor d;
  d.spawn_node = spawn_sgp_node;
  d.wire = wire_sgp;
  d.spawn_replacement = ignoring_incarnation<spawn_sgp_replacement>;
  d.join = join_sgp_worker;
  d.joins = "the schedule stays over every node id; a message whose peer is not in the run stays "
            "with its sender and nobody waits for one from a source not in the run; at a join "
            "every node stops beginning steps, the joiner takes half of a live node's (x, w) and "
            "is in everywhere from the step after the highest any node is in";
  d.check_node = pushsum_check_node;
  d.evaluation.average_label = "push-sum average (sum x / sum w)";
  return d;
}

}  // namespace

algorithm_descriptor sgp_algorithm() {
  auto d = pushsum_descriptor();
  d.kind = proto::AlgorithmSpec::kSgp;
  d.node_part = proto::NodeState::kPushsum;
  d.name = "sgp";
  d.check_block = sgp_check_block;
  d.parse = sgp_parse_block;
  d.needs_every_node = "every step waits for its in-neighbour's push-sum message";
  return d;
}

algorithm_descriptor osgp_algorithm() {
  auto d = pushsum_descriptor();
  d.kind = proto::AlgorithmSpec::kOsgp;
  d.node_part = proto::NodeState::kPushsum;
  d.name = "osgp";
  d.check_block = osgp_check_block;
  d.parse = osgp_parse_block;
  d.needs_every_node =
    "the push-sum mass sent to the lost node would vanish with it (the average diverges)";
  return d;
}

}  // namespace atrain
