/// AD-PSGD: asynchronous decentralized parallel SGD, pairwise gossip
/// (ALGORITHMS.md §6).
///
/// The undirected graph g_r is split into ACTIVE and PASSIVE nodes
/// (bipartite_split: every neighbour of an active node is passive). A cycle
/// of node i:
///   1. read x_i and compute g = g_i(x_i)           (takes tau_i: the wake)
///   2. meanwhile, an ACTIVE node picks a random neighbour j and exchanges:
///        i sends s = x_i; j replies with its current x_j and at that instant
///        sets x_j = (s + x_j)/2; on the reply i sets x_i = (s + x_j)/2 with
///        the very x_j that j used. x_i does not change between the request
///        and the reply (only its own exchange and step touch it), so both
///        hold the same average and x_i + x_j is preserved when the exchange
///        completes.
///   3. once the gradient is done (and an active node's exchange complete):
///        x_i -= gamma_k g,  gamma_k = gamma / (1 + decay k)
/// A PASSIVE node never initiates: it answers requests whenever they arrive,
/// also in the middle of its own gradient (it averages its current x; the
/// gradient read stays the one it started from). An active node waits only
/// for a passive one, which never waits: no deadlock.
///
/// Links may duplicate and reorder: a passive node serves request (i, seq)
/// once (seq increases per active node, one exchange outstanding at a time),
/// an active node takes only the reply to its outstanding exchange. A lost
/// request or reply would half-apply an exchange: prepare_run refuses
/// link.loss > 0 (acknowledged links are not built yet).
///
/// Staleness of a gradient step: the number of exchanges applied to x_i
/// between the read the gradient was computed on and the step (exactly 1
/// for an active node, any number for a passive one).
#include "atrain/actors/adpsgd.hpp"

#include "atrain/kernels/rng.hpp"
#include "atrain/topology/weights.hpp"
#include "gossip.hpp"

namespace atrain {

namespace {

struct adpsgd_state : gossip::node_base {
  bool active = false;
  rng gen;
  double gamma = 0;
  double decay = 0;
  std::uint64_t steps = 0;
  std::uint64_t exchanged_since_read = 0;
  bool woke = false;
  // active side: the outstanding exchange
  bool waiting = false;
  std::uint32_t partner = 0;
  std::uint64_t exchange_seq = 0;
  float_blob sent;
  // passive side: the newest exchange served per neighbour
  std::vector<std::uint64_t> served;
  bool record = false;  // keep the exchange ledger (test probe only)
  std::vector<adpsgd_exchange> ledger;
  static inline const char* name = "atrain_adpsgd_worker";
};
using adpsgd_ptr = caf::stateful_actor<adpsgd_state>*;

/// Shortest wait between two gradients of one node (run-clock seconds).
constexpr double min_wait = 1e-6;

/// x = (s + x_other)/2, element by element, the same float operations on both
/// sides of an exchange; records what it did to x when the ledger is on.
void average_into(adpsgd_state& st, const float* s, const float* other, std::uint32_t active,
                  std::uint32_t passive, std::uint64_t seq) {
  const std::size_t dim = st.x.size();
  std::vector<double> delta;
  if (st.record)
    delta.resize(dim);
  for (std::size_t k = 0; k < dim; ++k) {
    const float avg = (s[k] + other[k]) * 0.5f;
    if (st.record)
      delta[k] = static_cast<double>(avg) - static_cast<double>(st.x[k]);
    st.x[k] = avg;
  }
  ++st.exchanged_since_read;
  if (st.record)
    st.ledger.push_back({active, passive, seq, std::move(delta)});
}

void begin_cycle(adpsgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  st.woke = false;
  st.exchanged_since_read = 0;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);       // 1
  // Never a plain send to itself: a passive node waits for nobody, and CAF
  // keeps running an actor whose mailbox never empties (the real clock's
  // zero wait would starve every other actor on that thread).
  self->delayed_send(self, to_timespan(std::max(wait, min_wait)), wake_atom::value, st.steps);
  if (!st.active || st.neighbours.empty())
    return;
  st.partner = st.neighbours[st.gen.below(st.neighbours.size())];     // 2
  st.waiting = true;
  st.sent = float_blob{st.x};
  packet p;
  p.from = id;
  p.kind = adpsgd_request;
  p.seq = ++st.exchange_seq;
  p.f = st.sent;
  gossip::send_to(self, ctx, st, st.partner, std::move(p));
}

/// Step 3 once the gradient is done and no exchange is outstanding.
void try_step(adpsgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  if (!st.woke || st.waiting)
    return;
  const double gamma = gossip::step_size(st.gamma, st.decay, st.steps++);
  vec::axpy(static_cast<float>(-gamma), st.g.data(), st.x.data(), st.x.size());
  st.staleness.add(static_cast<double>(st.exchanged_since_read));
  begin_cycle(self, ctx, id);
}

/// Passive side of step 2: reply with the current x_j, then average.
void serve(adpsgd_ptr self, run_context& ctx, std::uint32_t id, const packet& p) {
  auto& st = self->state;
  auto& last = st.served[*gossip::neighbour_index(st, p.from)];
  if (p.seq <= last)
    return;  // a duplicate of an exchange already served
  last = p.seq;
  packet reply;
  reply.from = id;
  reply.kind = adpsgd_reply;
  reply.seq = p.seq;
  reply.f = float_blob{st.x};
  const float_blob before = reply.f;
  gossip::send_to(self, ctx, st, p.from, std::move(reply));
  average_into(st, p.f.ptr(), before.ptr(), p.from, id, p.seq);
}

/// Active side of step 2: the reply completes the outstanding exchange.
void complete(adpsgd_ptr self, run_context& ctx, std::uint32_t id, const packet& p) {
  auto& st = self->state;
  if (p.seq < st.exchange_seq || (p.seq == st.exchange_seq && !st.waiting))
    return;  // a duplicate of a reply already applied
  if (p.seq > st.exchange_seq || p.from != st.partner)
    return gossip::reject(self, ctx, st, id, p);
  st.waiting = false;
  average_into(st, st.sent.ptr(), p.f.ptr(), id, p.from, p.seq);
  st.sent = float_blob{};
  try_step(self, ctx, id);
}

caf::behavior adpsgd_worker(adpsgd_ptr self, std::uint32_t id, bool active, context_ptr ctx) {
  const auto& plan = *ctx->plan;
  const auto& algo = plan.spec.algorithm().adpsgd();
  auto& st = self->state;
  gossip::init(st, *ctx, id);
  st.active = active;
  st.gen.reseed(derive_seed(plan.spec.seed(), 0x41445053ULL + id));
  st.gamma = algo.step_size();
  st.decay = algo.decay();
  st.served.assign(st.neighbours.size(), 0);
  st.record = ctx->probe != nullptr;
  return {
    [=](init_atom, const std::vector<caf::actor>& routes) {
      gossip::take_routes(self->state, routes);
    },
    [=](start_atom) { begin_cycle(self, *ctx, id); },
    [=](wake_atom, std::uint64_t step) {
      ctx->events.record(ctx->ns(self), id, event_kind::wake, step);
      self->state.woke = true;
      try_step(self, *ctx, id);                                       // 3
    },
    [=](deliver_atom, const packet& p) {
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), id, event_kind::receive, p.from, p.seq);
      if (!st.active && gossip::well_formed(st, p, adpsgd_request))
        return serve(self, *ctx, id, p);
      if (st.active && gossip::well_formed(st, p, adpsgd_reply))
        return complete(self, *ctx, id, p);
      gossip::reject(self, *ctx, st, id, p);
    },
    [=](model_atom) { return gossip::snapshot(self->state, id); },
    [=](stats_atom) { return gossip::stats(self->state); },
  };
}

} // namespace

std::vector<adpsgd_exchange> adpsgd_take_exchanges(const caf::actor_addr& worker) {
  return gossip::take_from_worker(worker, &adpsgd_state::ledger);
}

node_actors spawn_adpsgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                              std::uint32_t i) {
  const auto split = process_shared<std::vector<bool>>(*ctx, "adpsgd.split", [&] {
    auto s = bipartite_split(ctx->plan->topo->g_r);
    if (!s)
      throw topology_error("AD-PSGD needs a bipartite graph (active/passive split)");
    return std::make_shared<std::vector<bool>>(std::move(*s));
  });
  return gossip::one_actor_node(
    parent->spawn(adpsgd_worker, i, static_cast<bool>(split->at(i)), ctx));
}

void wire_adpsgd(caf::event_based_actor* sup, const context_ptr& ctx,
                 std::vector<node_actors>& nodes, std::vector<caf::actor>& links) {
  gossip::wire_nodes(sup, ctx, nodes, links);
}

} // namespace atrain
