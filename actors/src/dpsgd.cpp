/// D-PSGD: decentralized parallel SGD, synchronous gossip (ALGORITHMS.md §5).
///
/// Form: the CONSENSUS form (the default of ALGORITHMS.md), not
/// adapt-then-combine. Round k of node i:
///   1. g = g_i(x_i^k)                         (takes tau_i: the wake)
///   2. send x_i^k to every neighbour           (at the wake)
///   3. when every neighbour's round-k model is in:
///        x_i^{k+1} = sum_j W_ij x_j^k - gamma_k g,  gamma_k = gamma / (1 + decay k)
///      with W = Metropolis-Hastings over the undirected graph g_r.
/// Every round waits for the slowest neighbour (synchronous by definition).
///
/// Links may duplicate and reorder: models are keyed by (round, sender) and a
/// second copy is ignored. A neighbour is at most one round ahead (it needs
/// our round-k model to leave round k), so only rounds k and k+1 are kept;
/// anything further ahead breaks the protocol and is rejected. Lost packets
/// are sent again by the acknowledged links (network.hpp), so a round
/// completes over lossy links too.
///
/// Staleness: 0 for every neighbour model used, by construction (round k
/// mixes only round-k models); recorded so the report states it.
#include "atrain/actors/dpsgd.hpp"

#include <map>

#include "gossip.hpp"

namespace atrain {

weight_matrix dpsgd_weights(const topology& topo) {
  return metropolis_hastings(topo.g_r);
}

namespace {

struct dpsgd_state : gossip::node_base {
  double w_self = 1;
  std::vector<double> w_in;  // aligned with neighbours
  double gamma = 0;
  double decay = 0;
  std::uint64_t round = 0;
  bool woke = false;  // this round's gradient is done and x^k was sent
  /// Round -> the neighbours' models of that round (empty blob = not yet).
  std::map<std::uint64_t, std::vector<float_blob>> inbox;
  static inline const char* name = "atrain_dpsgd_worker";
};
using dpsgd_ptr = caf::stateful_actor<dpsgd_state>*;

void begin_round(dpsgd_ptr self) {
  auto& st = self->state;
  st.woke = false;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);       // 1
  send_after(self, caf::actor_cast<caf::actor>(self), wait, wake_atom::value, st.round);
}

/// Step 3 once the gradient is done and all round-k models are in.
void try_finish_round(dpsgd_ptr self) {
  auto& st = self->state;
  if (!st.woke)
    return;
  auto it = st.inbox.find(st.round);
  const std::size_t n = st.neighbours.size();
  if (n > 0) {
    if (it == st.inbox.end())
      return;
    for (const auto& m : it->second)
      if (m.empty())
        return;
  }
  const std::size_t dim = st.x.size();
  std::vector<const float*> parts{st.x.data()};
  std::vector<double> weights{st.w_self};
  for (std::size_t k = 0; k < n; ++k) {
    parts.push_back(it->second[k].ptr());
    weights.push_back(st.w_in[k]);
    st.staleness.add(0.0);
  }
  std::vector<float> next(dim);
  vec::weighted_sum(parts, weights, next.data(), dim);
  const double gamma = gossip::step_size(st.gamma, st.decay, st.round);
  vec::axpy(static_cast<float>(-gamma), st.g.data(), next.data(), dim);
  st.x = std::move(next);
  if (it != st.inbox.end())
    st.inbox.erase(it);
  ++st.round;
  begin_round(self);
}

caf::behavior dpsgd_worker(dpsgd_ptr self, std::uint32_t id, context_ptr ctx,
                           std::shared_ptr<const weight_matrix> mixing) {
  const auto& plan = *ctx->plan;
  const auto& algo = plan.spec.algorithm().dpsgd();
  auto& st = self->state;
  gossip::init(st, *ctx, id);
  const auto& w = *mixing;
  st.w_self = w(id, id);
  for (auto j : st.neighbours)
    st.w_in.push_back(w(id, j));
  st.gamma = algo.step_size();
  st.decay = algo.decay();
  return {
    [=](init_atom, const std::vector<caf::actor>& routes) {
      gossip::take_routes(self->state, routes);
    },
    [=](start_atom) { begin_round(self); },
    [=](wake_atom, std::uint64_t round) {
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), id, event_kind::wake, round);
      st.woke = true;
      packet p;                                                       // 2
      p.from = id;
      p.kind = dpsgd_model;
      p.seq = round;
      p.f = float_blob{st.x};
      st.out.broadcast(self, *ctx, std::move(p));
      try_finish_round(self);                                         // 3
    },
    [=](deliver_atom, const packet& p) {
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), id, event_kind::receive, p.from, p.seq);
      if (!gossip::well_formed(st, p, dpsgd_model) || p.seq > st.round + 1)
        return gossip::reject(self, *ctx, st, id, p);
      if (p.seq < st.round)
        return;  // a late duplicate of a round already mixed
      auto& slots = st.inbox[p.seq];
      slots.resize(st.neighbours.size());
      auto& slot = slots[*gossip::neighbour_index(st, p.from)];
      if (!slot.empty())
        return;  // duplicate
      slot = p.f;
      if (p.seq == st.round)
        try_finish_round(self);
    },
    [=](model_atom) { return gossip::snapshot(self->state, id); },
    [=](stats_atom) { return gossip::stats(self->state); },
  };
}

} // namespace

node_actors spawn_dpsgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                             std::uint32_t i) {
  std::shared_ptr<const weight_matrix> w =
    process_shared<weight_matrix>(*ctx, "dpsgd.weights", [&] {
      return std::make_shared<weight_matrix>(dpsgd_weights(*ctx->plan->topo));
    });
  return gossip::one_actor_node(parent->spawn(dpsgd_worker, i, ctx, std::move(w)));
}

void wire_dpsgd(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, std::vector<caf::actor>& links) {
  gossip::wire_nodes(sup, ctx, nodes, links);
}

} // namespace atrain
