/// D-PSGD: decentralized parallel SGD, synchronous gossip (ALGORITHMS.md §5).
///
/// Form: the CONSENSUS form (the default of ALGORITHMS.md), not
/// adapt-then-combine. Round k of node i (straggler_policy WAIT, the default):
///   1. send x_i^k to every neighbour           (order OVERLAP, the default)
///   2. g = g_i(x_i^k)                         (takes tau_i: the wake), while
///      the models travel; order SEND_AFTER_GRADIENT sends x_i^k at the wake
///   3. when every neighbour's round-k model is in:
///        x_i^{k+1} = sum_j W_ij x_j^k - gamma_k g,  gamma_k = gamma / (1 + decay k)
///      with W = Metropolis-Hastings over the undirected graph g_r.
/// Every round waits for the slowest neighbour (synchronous by definition).
/// With OVERLAP a round costs max(compute, communication) (Lian et al.),
/// with SEND_AFTER_GRADIENT their sum.
///
/// straggler_policy SKIP (backup-worker style, issue 5; no timeouts; it
/// always sends after the gradient, whatever the order): when
/// every neighbour's round-k model is in but node i's gradient is not done,
/// node i sends x_i^k at once (its neighbours wait for nothing more) and does
/// a MIXING-ONLY round x_i^{k+1} = sum_j W_ij x_j^k. The gradient in flight
/// goes on; once done, x_i of the round it completes in is sent (step 2) and
/// the gradient is applied at the end of that round (3.), late by the rounds
/// since it read x (counted as a late contribution, staleness = those
/// rounds); the next gradient starts only then, at the freshest model. W
/// stays doubly stochastic, so the node average of round k+1 is that of
/// round k minus gamma_k/n times the gradients applied in round k: no
/// gradient is lost or applied twice. A neighbour's round-(k+1) model needs
/// our x_i^k first, so neighbours stay at most one round apart either way.
///
/// Checkpoints: a node holds at a round boundary, before its next gradient.
/// WAIT: a held node a neighbour calls into the next round computes and
/// joins it. SKIP: a held node goes on mixing (its neighbours need only its
/// model), so at rest it may keep a gradient done and not applied and
/// neighbours' models of its round and the next: both go into the file
/// (save_dpsgd).
///
/// Links may duplicate and reorder: models are keyed by (round, sender) and a
/// second copy is ignored. A neighbour is at most one round ahead (it needs
/// our round-k model to leave round k), so only rounds k and k+1 are kept;
/// anything further ahead breaks the protocol and is rejected. Lost packets
/// are sent again by the acknowledged links (network.hpp), so a round
/// completes over lossy links too.
///
/// Staleness: 0 for every neighbour model used, by construction (round k
/// mixes only round-k models); with SKIP also, for every gradient applied,
/// the rounds between its read of x and its use (always 0 with WAIT, so not
/// recorded there: the WAIT report stays as it was).
#include "algorithms/dpsgd/dpsgd.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/exceptions.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "algorithms/gossip/gossip.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/topology/mixing_row.hpp"

namespace atrain {

weight_matrix dpsgd_weights(const topology& topo) {
  return metropolis_hastings(topo.g_r);
}

std::string dpsgd_check_checkpoint(const proto::Checkpoint& ck, const run_plan& plan) {
  const auto& g_r = plan.topo->g_r;
  for (std::uint32_t i = 0; i < plan.nodes(); ++i) {
    const auto& s = ck.nodes(static_cast<int>(i));
    const auto& k = s.dpsgd();
    const std::string at = "node " + std::to_string(i) + ": dpsgd_skip.";
    if (k.woke() && static_cast<std::size_t>(k.g_size()) != plan.dim())
      return at + "g has " + std::to_string(k.g_size()) + " values, the model " +
             std::to_string(plan.dim());
    if (k.read_round() > s.wakes())
      return at + "read_round " + std::to_string(k.read_round()) + " is after the node's round " +
             std::to_string(s.wakes());
    const auto& neighbours = g_r.out(i);
    std::set<std::pair<std::uint64_t, std::uint32_t>> seen;
    for (const auto& m : k.inbox()) {
      const std::string where = at + "inbox (round " + std::to_string(m.round()) + ", from " +
                                std::to_string(m.from()) + "): ";
      if (std::find(neighbours.begin(), neighbours.end(), m.from()) == neighbours.end())
        return where + "not a neighbour";
      if (m.round() != s.wakes() && m.round() != s.wakes() + 1)
        return where + "neither the node's round " + std::to_string(s.wakes()) + " nor the next";
      if (static_cast<std::size_t>(m.params_size()) != plan.dim())
        return where + "the model does not have the spec's dimension";
      if (!seen.emplace(m.round(), m.from()).second)
        return where + "held twice";
    }
  }
  return {};
}

namespace {

struct dpsgd_state : gossip::node_base {
  double w_self = 1;
  std::vector<double> w_in;  // aligned with neighbours
  double gamma = 0;
  double decay = 0;
  bool skip = false;    // straggler_policy SKIP
  bool overlap = true;  // order OVERLAP: x^round goes out when the round starts
  std::uint64_t round = 0;
  bool woke = false;             // a gradient is done, not yet applied
  bool computing = false;        // a gradient is in flight
  bool sent = false;             // x^round was sent
  std::uint64_t read_round = 0;  // the round whose x the gradient read
  std::uint64_t late = 0;        // gradients applied in a later round than they read x
  /// Round -> the neighbours' models of that round (empty blob = not yet).
  std::map<std::uint64_t, std::vector<float_blob>> inbox;
  bool record = false;  // keep the ledger (test probe only)
  std::vector<dpsgd_round> ledger;
  barrier_hold hold;  // checkpoints
  // Joins (faults.join): who is in the run, the neighbours among them
  // (aligned with `neighbours`), and `parked`: a round would have begun
  // while a join was being decided.
  gossip::run_members members;
  std::vector<bool> present;
  bool parked = false;
  static inline const char* name = "atrain_dpsgd_worker";
};
using dpsgd_ptr = dpsgd_worker_actor::stateful_pointer<dpsgd_state>;

/// The node's mixing weights and present neighbours over `members`.
void set_mixing(dpsgd_state& st, const run_context& ctx, std::uint32_t id) {
  const auto row = metropolis_hastings_row(ctx.plan->topo->g_r, id, st.members.in);
  st.w_self = row.self;
  st.w_in = row.in;
  st.present.assign(st.neighbours.size(), true);
  for (std::size_t k = 0; k < st.neighbours.size(); ++k)
    st.present[k] = st.members[st.neighbours[k]];
}

/// Takes in the nodes whose join round has come.
void apply_joins(dpsgd_state& st, const run_context& ctx, std::uint32_t id) {
  if (st.members.take_due(st.round))
    set_mixing(st, ctx, id);
}

void send_model(dpsgd_ptr self, run_context& ctx, std::uint32_t id);

/// 1. and 2.: the round's model goes out first with OVERLAP, then the gradient starts.
void begin_round(dpsgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  if (st.overlap && !st.sent)
    send_model(self, ctx, id);
  st.woke = false;
  st.computing = true;
  st.read_round = st.round;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  send_after(self, caf::actor_cast<dpsgd_worker_actor>(self), wait, wake_atom::value, st.round);
}

/// Sends x^round to every neighbour (1., or at the wake with SEND_AFTER_GRADIENT).
void send_model(dpsgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  packet p;
  p.from = id;
  p.kind = dpsgd_model;
  p.seq = st.round;
  p.f = float_blob{st.x};
  for (std::size_t k = 0; k < st.out.routes.size(); ++k)
    if (st.present[k])  // not to a node that has not joined yet
      st.out.send(self, ctx, k, p);
  st.sent = true;
}

/// Step 3 once all round-k models are in and the gradient is done (WAIT), or
/// without the gradient when it is not (SKIP). False when the round waits.
bool finish_round(dpsgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  if (!st.woke && !st.skip)
    return false;
  auto it = st.inbox.find(st.round);
  const std::size_t n = st.neighbours.size();
  for (std::size_t k = 0; k < n; ++k)
    if (st.present[k] && (it == st.inbox.end() || it->second[k].empty()))
      return false;
  if (!st.sent)  // SKIP, mixing only: the neighbours need x^k to leave round k
    send_model(self, ctx, id);
  const std::size_t dim = st.x.size();
  std::vector<const float*> parts{st.x.data()};
  std::vector<double> weights{st.w_self};
  for (std::size_t k = 0; k < n; ++k) {
    if (!st.present[k])
      continue;
    parts.push_back(it->second[k].ptr());
    weights.push_back(st.w_in[k]);
    st.staleness.add(0.0);
  }
  std::vector<float> next(dim);
  vec::weighted_sum(parts, weights, next.data(), dim);
  const double gamma = gossip::step_size(st.gamma, st.decay, st.round);
  if (st.woke) {
    vec::axpy(static_cast<float>(-gamma), st.g.data(), next.data(), dim);
    const auto stale = st.round - st.read_round;
    if (st.skip)
      st.staleness.add(static_cast<double>(stale));
    if (stale > 0)
      ++st.late;
  }
  if (st.record)
    st.ledger.push_back({st.round, st.x, next, st.woke ? st.g : std::vector<float>{}, gamma});
  st.woke = false;
  st.x = std::move(next);
  if (it != st.inbox.end())
    st.inbox.erase(it);
  ++st.round;
  st.sent = false;
  apply_joins(st, ctx, id);
  if (st.members.frozen) {  // a join is being decided: begin once it is (resume)
    st.parked = true;
    return true;
  }
  // A checkpoint holds the node here, at a round boundary, unless a
  // neighbour's model of the new round is in already (WAIT: it waits for
  // ours). SKIP: always (the neighbours go on mixing without our gradient).
  const bool hold =
    st.hold.requested && (st.skip || st.inbox.count(st.round) == 0) && st.hold.stop_here();
  if (!st.computing && !hold)
    begin_round(self, ctx, id);
  return true;
}

// ---- checkpoints
//
// WAIT: at rest no gradient is in flight and no model waits. SKIP: no
// gradient is in flight either (the barrier waits for it), but a node may
// rest with its gradient done and not applied (woke: its round waits for a
// neighbour held by the barrier) and with neighbours' models of its round
// and the next one; both go into the file (DpsgdSkipState). A SKIP node at
// rest without such a gradient is the one the barrier held from starting
// its next one.

std::string save_dpsgd(const dpsgd_state& st) {
  proto::NodeState s;
  save_worker_basics(st, st.round, s);
  s.set_late(st.late);
  if (st.skip) {
    auto& k = *s.mutable_dpsgd();
    k.set_woke(st.woke);
    if (st.woke)
      *k.mutable_g() = {st.g.begin(), st.g.end()};
    k.set_read_round(st.read_round);
    k.set_sent(st.sent);
    for (const auto& [round, models] : st.inbox)
      for (std::size_t j = 0; j < models.size(); ++j) {
        if (models[j].empty())
          continue;
        auto& m = *k.add_inbox();
        m.set_round(round);
        m.set_from(st.neighbours[j]);
        *m.mutable_params() = {models[j].vec().begin(), models[j].vec().end()};
      }
  }
  return s.SerializeAsString();
}

void restore_dpsgd(dpsgd_state& st, const proto::NodeState& s) {
  st.round = restore_worker_basics(st, s);
  st.late = s.late();
  st.hold.requested = st.hold.held = true;  // until the supervisor's go
  if (!st.skip)
    return;
  const auto& k = s.dpsgd();
  st.woke = k.woke();
  if (st.woke)
    st.g.assign(k.g().begin(), k.g().end());
  st.read_round = k.read_round();
  st.sent = k.sent();
  for (const auto& m : k.inbox()) {  // dpsgd_check_checkpoint checked sender and size
    auto& slots = st.inbox[m.round()];
    slots.resize(st.neighbours.size());
    slots[*gossip::neighbour_index(st, m.from())] =
      float_blob{std::vector<float>(m.params().begin(), m.params().end())};
  }
}

/// ckpt_go: the next gradient starts now (WAIT: the held node; SKIP: a node
/// at rest without a gradient waiting for its round to end).
void dpsgd_go(dpsgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  const bool held = st.hold.go();
  if (st.skip ? !st.computing && !st.woke : held)
    begin_round(self, ctx, id);
}

/// Finishes rounds while they can finish (SKIP: the neighbours may all have
/// sent the next round's model already).
void try_finish_round(dpsgd_ptr self, run_context& ctx, std::uint32_t id) {
  while (finish_round(self, ctx, id) && self->state.skip) {
  }
}

/// Whether a model of round `seq` > round + 1 from neighbour slot k is a
/// joiner's first (faults.join): it starts where the run is, perhaps ahead
/// of this node by more than a round. Kept if it is the only one from k
/// held ahead (a joiner sends no second model before this node's).
[[nodiscard]] bool early_joiner(const dpsgd_state& st, std::size_t k, std::uint64_t seq) {
  if (st.present[k])
    return false;
  for (const auto& [round, slots] : st.inbox)
    if (round > st.round + 1 && round != seq && k < slots.size() && !slots[k].empty())
      return false;
  return true;
}

/// A neighbour's model (WAIT or SKIP: kept per round and sender, once).
void on_deliver(dpsgd_ptr self, run_context& ctx, std::uint32_t id, const packet& coded) {
  auto& st = self->state;
  ctx.events.record(ctx.ns(self), id, event_kind::receive, coded.from, coded.seq);
  const auto opened = open_values(coded, st.x.size());  // link.codec
  if (!opened)
    return gossip::reject(self, ctx, st, id, coded);
  const packet& p = *opened;
  if (!gossip::well_formed(st, p, dpsgd_model))
    return gossip::reject(self, ctx, st, id, p);
  const auto from = *gossip::neighbour_index(st, p.from);
  if (p.seq > st.round + 1 && !early_joiner(st, from, p.seq))
    return gossip::reject(self, ctx, st, id, p);
  if (p.seq < st.round)
    return;  // a late duplicate of a round already mixed
  auto& slots = st.inbox[p.seq];
  slots.resize(st.neighbours.size());
  auto& slot = slots[from];
  if (!slot.empty())
    return;  // duplicate
  slot = p.f;
  if (p.seq == st.round && st.hold.held && !st.skip) {
    // A checkpoint held this node, but a neighbour began the round: it
    // waits for our model, so compute it (and hold after the round).
    st.hold.held = false;
    return begin_round(self, ctx, id);
  }
  if (p.seq == st.round)
    try_finish_round(self, ctx, id);
}

/// Loads node `id`'s start (or, resumed, its saved state: returned, else null).
const proto::NodeState* setup_dpsgd(dpsgd_ptr self, std::uint32_t id, const run_context& ctx,
                                    bool joining) {
  const auto& algo = ctx.plan->config<dpsgd_config>();
  auto& st = self->state;
  gossip::init(st, ctx, id);
  st.members.start(*ctx.plan);
  set_mixing(st, ctx, id);
  st.gamma = algo.step_size;
  st.decay = algo.decay;
  st.skip = algo.stragglers == straggler_policy::skip;
  // SKIP's rounds are paced by the neighbours' gradients (a node skips when
  // their models are in before its own gradient), so it sends after its own.
  st.overlap = algo.overlap && !st.skip;
  st.record = ctx.probe != nullptr;
  const auto* saved = joining ? nullptr : resumed_node(ctx, id);  // a replacement joins
  if (saved)
    restore_dpsgd(st, *saved);
  return saved;
}

/// The running worker (`restored`: resumed from a checkpoint, it holds
/// until the supervisor's go).
dpsgd_worker_actor::behavior_type dpsgd_running(dpsgd_ptr self, std::uint32_t id, context_ptr ctx,
                                                bool restored) {
  return compose<dpsgd_worker_actor::behavior_type>(
    gossip::start_handlers(self, restored, [=] { begin_round(self, *ctx, id); }),
    // Neighbour k is being restarted: this node's round, whether x^round
    // went out already (then it may have gone to the dead worker), and x.
    [=](restart_atom, std::uint32_t k) {
      const auto& st = self->state;
      ctx->events.record(ctx->ns(self), id, event_kind::restart, k, st.round);
      return std::make_tuple(st.round, st.sent, float_blob{st.x});
    },
    // Node k joins the run (join_dpsgd_worker): no round begins until the
    // supervisor names the round k is in from (every node then switches
    // its weights at that same round), which is past every node's round.
    [=](join_atom, std::uint32_t k) {
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), id, event_kind::restart, k, st.round);
      st.members.frozen = true;
      return std::make_tuple(st.round, float_blob{st.x});
    },
    [=](resume_atom, std::uint64_t from, std::uint32_t k) {
      auto& st = self->state;
      st.members.due.emplace(from, k);
      st.members.frozen = false;
      apply_joins(st, *ctx, id);
      if (std::exchange(st.parked, false))
        begin_round(self, *ctx, id);
    },
    [=](wake_atom, std::uint64_t round) {
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), id, event_kind::wake, round);
      st.woke = true;
      st.computing = false;
      if (!st.sent)  // 2
        send_model(self, *ctx, id);
      try_finish_round(self, *ctx, id);  // 3
    },
    [=](deliver_atom, const packet& p) { on_deliver(self, *ctx, id, p); },
    [=](ckpt_drain_atom) {
      const auto& st = self->state;
      if (st.skip)  // quiet unless computing: the inbox is saved
        return st.computing ? st.hold.busy_for(self, false) : -1.0;
      return st.hold.busy_for(self, st.inbox.empty());
    },
    [=](ckpt_go_atom) { dpsgd_go(self, *ctx, id); },
    [=](model_atom) {
      const auto& st = self->state;
      auto s = gossip::snapshot(st, id);
      s.late = st.late;
      return s;
    },
    [=](stats_atom) { return gossip::stats(self->state); },
    // A replacement's join after it started (never sent twice): nothing.
    [](start_atom, std::uint64_t, const float_blob&, const std::vector<float_blob>&,
       const std::vector<caf::actor>&, const std::vector<std::uint32_t>&) {},
    ckpt_pause_handler(self), ckpt_state_handler([=] { return save_dpsgd(self->state); }));
}

/// Node `id`'s worker; a replacement (`joining`, after a crash) keeps every
/// message until the supervisor starts it in the round its neighbours wait
/// in, with a neighbour's model and the neighbours' models of that round
/// that went to the dead worker.
dpsgd_worker_actor::behavior_type dpsgd_worker(dpsgd_ptr self, std::uint32_t id, context_ptr ctx,
                                               bool joining) {
  name_exceptions(self);
  const auto* saved = setup_dpsgd(self, id, *ctx, joining);
  auto running = dpsgd_running(self, id, ctx, saved != nullptr);
  if (!joining)
    return running;
  self->set_default_handler(caf::skip);
  return waiting_for<dpsgd_worker_actor>(
    [=](start_atom, std::uint64_t round, const float_blob& x, const std::vector<float_blob>& models,
        const std::vector<caf::actor>& routes, const std::vector<std::uint32_t>& members) mutable {
      auto& st = self->state;
      st.round = round;
      st.x = x.vec();
      if (!members.empty()) {  // a join: the nodes in the run from `round` on
        st.members.set(members);
        set_mixing(st, *ctx, id);
      }
      if (std::any_of(models.begin(), models.end(), [](const auto& m) { return !m.empty(); }))
        st.inbox[round] = models;
      gossip::take_routes(st, routes);
      self->set_default_handler(caf::print_and_drop);
      self->become(std::move(running));
      begin_round(self, *ctx, id);
    });
}

}  // namespace

std::vector<dpsgd_round> dpsgd_take_rounds(const caf::actor_addr& worker) {
  return gossip::take_from_worker<dpsgd_worker_actor>(worker, &dpsgd_state::ledger);
}

node_actors spawn_dpsgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                             std::uint32_t i) {
  return gossip::one_actor_node(
    caf::actor_cast<caf::actor>(parent->spawn(dpsgd_worker, i, ctx, false)));
}

caf::actor spawn_dpsgd_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                   std::uint32_t k) {
  return caf::actor_cast<caf::actor>(sup->spawn(dpsgd_worker, k, ctx, true));
}

void join_dpsgd_worker(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                       restart_started started) {
  if (ctx->plan->join_of(r.node) && r.incarnation == 1)
    return join_dpsgd_node(sup, ctx, r, std::move(started));
  // The round the neighbours wait in: one past the last model the dead
  // worker handed to its links (they deliver it, whatever happens to the
  // sender), or 0. Every link the dead worker sent on has seen the same
  // rounds (a model goes to all neighbours at once).
  struct last_sent {
    std::size_t pending = 0;
    bool any = false;
    std::uint64_t round = 0;
  };
  auto last = std::make_shared<last_sent>();
  auto with_round = [=](std::uint64_t round) {
    const auto& neighbours = ctx->plan->topo->g_r.out(r.node);
    using ask =
      gossip::ask_neighbours<std::tuple<std::uint64_t, bool, float_blob>, dpsgd_worker_actor>;
    ask::run(sup, ctx, r, [=](const ask::answers& got) {
      std::vector<float_blob> models(neighbours.size());
      float_blob x{ctx->plan->x0};
      std::string source = "x^0 (no neighbour answered)";
      bool donor = false;  // the first neighbour that answered
      for (std::size_t j = 0; j < neighbours.size(); ++j) {
        if (!got[j])
          continue;
        const auto& [their_round, sent, their_x] = *got[j];
        if (their_round == round && sent)  // x^round went out, perhaps to the dead worker
          models[j] = their_x;
        if (std::exchange(donor, true))
          continue;
        x = their_x;
        source = "node " + std::to_string(neighbours[j]) + "'s model";
      }
      sup->send(caf::actor_cast<dpsgd_worker_actor>(r.replacement), start_atom::value, round, x,
                models, r.nodes.at(r.node).worker_routes, std::vector<std::uint32_t>{});
      started(source + ", joining round " + std::to_string(round));
    });
  };
  last->pending = r.links.size();
  if (r.links.empty())
    return with_round(0);
  for (const auto& link : r.links)
    sup->request(link, ctx->reply_timeout(), resume_atom::value)
      .then(
        [=](std::uint32_t from, bool any, std::uint64_t seq) {
          if (from == r.node && any) {
            last->round = last->any ? std::max(last->round, seq) : seq;
            last->any = true;
          }
          if (--last->pending == 0)
            with_round(last->any ? last->round + 1 : 0);
        },
        [=](const caf::error&) {
          if (--last->pending == 0)
            with_round(last->any ? last->round + 1 : 0);
        });
}

void wire_dpsgd(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, link_list& links) {
  gossip::wire_nodes(sup, ctx, nodes, links);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
algorithm_descriptor dpsgd_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kDpsgd;
  d.node_part = proto::NodeState::kDpsgd;
  d.name = "dpsgd";
  d.check_block = dpsgd_check_block;
  d.parse = dpsgd_parse_block;
  d.uses_topology = true;
  d.check_topology = [](const loaded_spec& ls, const topology& topo) {
    gossip::check_undirected(ls, topo, "dpsgd");
  };
  d.spawn_node = spawn_dpsgd_node;
  d.wire = wire_dpsgd;
  d.needs_every_node = "every round waits for every neighbour's model";
  d.spawn_replacement = ignoring_incarnation<spawn_dpsgd_replacement>;
  d.join = join_dpsgd_worker;
  d.joins = "every node mixes over the nodes in the run (Metropolis-Hastings among them), so "
            "nobody waits on a node not there yet; at a join every node stops beginning rounds, "
            "and from the round after the highest any is in, all mix with the joiner in, which "
            "starts there with a live neighbour's model (straggler_policy WAIT)";
  d.check_checkpoint = dpsgd_check_checkpoint;
  d.links.replay_on_restart = true;
  d.links.coding = values_coding;
  return d;
}

}  // namespace atrain
