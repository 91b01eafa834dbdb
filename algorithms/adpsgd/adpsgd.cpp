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
///
/// Checkpoints: a node holds after its gradient step (step 3), so an active
/// node holds only once its exchange is complete; a held passive node goes on
/// serving requests. The drain ends when every node holds and no request or
/// reply is in flight: every exchange begun is then applied on both sides,
/// and the saved state is x, the step and exchange counts, the served marks,
/// the partner generator and the compute unit.
#include "algorithms/adpsgd/adpsgd.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/exceptions.hpp"

#include <tuple>
#include <utility>

#include "algorithms/gossip/gossip.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/kernels/rng.hpp"
#include "atrain/topology/weights.hpp"

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
  // active side: per neighbour, absent from the start and not joined yet (faults.join)
  std::vector<bool> absent;
  double seq_rate = 0;                     // see future_seq_rate
  std::vector<std::uint64_t> restarts_of;  // per node: restarts the spec schedules
  bool record = false;                     // keep the exchange ledger (test probe only)
  std::vector<adpsgd_exchange> ledger;
  barrier_hold hold;  // checkpoints
  static inline const char* name = "atrain_adpsgd_worker";
};
using adpsgd_ptr = adpsgd_worker_actor::stateful_pointer<adpsgd_state>;

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

/// Step 2's random neighbour, among those present (a node absent from the
/// start never answers before its join); false when none is.
bool pick_partner(adpsgd_state& st) {
  if (st.absent.empty()) {  // no joins: the draw as ever
    st.partner = st.neighbours[st.gen.below(st.neighbours.size())];
    return true;
  }
  std::vector<std::uint32_t> present;
  for (std::size_t n = 0; n < st.neighbours.size(); ++n)
    if (!st.absent[n])
      present.push_back(st.neighbours[n]);
  if (present.empty())
    return false;
  st.partner = present[st.gen.below(present.size())];
  return true;
}

void begin_cycle(adpsgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  st.woke = false;
  st.exchanged_since_read = 0;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);  // 1
  // Never a plain send to itself: a passive node waits for nobody, and CAF
  // keeps running an actor whose mailbox never empties (the real clock's
  // zero wait would starve every other actor on that thread).
  const auto delay = to_timespan(std::max(wait, min_wait));
  st.hold.wake_due = self->clock().now() + delay;
  self->delayed_send(caf::actor_cast<adpsgd_worker_actor>(self), delay, wake_atom::value, st.steps);
  if (!st.active || st.neighbours.empty())
    return;
  if (!pick_partner(st))
    return;  // every neighbour is absent until its join
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
  if (!st.hold.stop_here())
    begin_cycle(self, ctx, id);
}

// ---- checkpoints (at rest: no gradient in flight, no exchange outstanding)

std::string save_adpsgd(const adpsgd_state& st) {
  proto::NodeState s;
  save_worker_basics(st, st.steps, s);
  auto& a = *s.mutable_adpsgd();
  save_rng(st.gen, a.mutable_rng());
  a.set_exchange_seq(st.exchange_seq);
  *a.mutable_served() = {st.served.begin(), st.served.end()};
  return s.SerializeAsString();
}

void restore_adpsgd(adpsgd_state& st, const proto::NodeState& s) {
  st.steps = restore_worker_basics(st, s);
  st.gen = load_rng(s.adpsgd().rng());
  st.exchange_seq = s.adpsgd().exchange_seq();
  st.served.assign(s.adpsgd().served().begin(), s.adpsgd().served().end());
  st.hold.requested = st.hold.held = true;  // until the supervisor's go
}

/// A request numbered from the future: its exchange count (the low 40 bits)
/// above what any sender can have reached by now, or its incarnation (the
/// high bits: a replacement numbers above incarnation << 40) above the
/// restarts the spec schedules for the sender.
[[nodiscard]] bool request_from_the_future(adpsgd_ptr self, run_context& ctx, const packet& p) {
  const auto& st = self->state;
  const std::uint64_t incarnation = p.seq >> 40;
  const std::uint64_t count = p.seq & ((std::uint64_t{1} << 40) - 1);
  return incarnation > st.restarts_of.at(p.from) ||
         from_the_future(count, st.seq_rate, ctx.seconds(self));
}

/// Passive side of step 2: reply with the current x_j, then average.
void serve(adpsgd_ptr self, run_context& ctx, std::uint32_t id, const packet& p) {
  auto& st = self->state;
  if (request_from_the_future(self, ctx, p))
    return gossip::reject(self, ctx, st, id, p);
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

/// Neighbour `k` was restarted (supervision): the fence. Answers with this
/// node's model (a donor for the replacement), its exchange count (the
/// replacement serves only this node's later requests) and its step count.
/// An ACTIVE node waiting on k gives that exchange up: the dead incarnation
/// applied it or not, either way with it; a reply still in flight is then a
/// duplicate. A PASSIVE node serves k's requests only above `fence`, where
/// the replacement numbers its exchanges: a request of the dead incarnation
/// still in flight is never served.
std::tuple<float_blob, std::uint64_t, std::uint64_t> fence_off(adpsgd_ptr self, run_context& ctx,
                                                               std::uint32_t id, std::uint32_t k,
                                                               std::uint64_t fence) {
  auto& st = self->state;
  ctx.events.record(ctx.ns(self), id, event_kind::restart, k, fence);
  std::tuple<float_blob, std::uint64_t, std::uint64_t> out{float_blob{st.x}, st.exchange_seq,
                                                           st.steps};
  if (const auto at = gossip::neighbour_index(st, k); at && !st.active)
    st.served[*at] = std::max(st.served[*at], fence);
  if (const auto at = gossip::neighbour_index(st, k); at && !st.absent.empty())
    st.absent[*at] = false;  // joined
  if (st.active && st.waiting && st.partner == k) {
    st.waiting = false;
    st.sent = float_blob{};
    try_step(self, ctx, id);
  }
  return out;
}

/// An exchange packet: a passive node serves requests, an active one takes
/// the reply to its outstanding exchange; anything else is rejected.
void on_deliver(adpsgd_ptr self, run_context& ctx, std::uint32_t id, const packet& coded) {
  auto& st = self->state;
  ctx.events.record(ctx.ns(self), id, event_kind::receive, coded.from, coded.seq);
  const auto opened = open_values(coded, st.x.size());  // link.codec
  if (!opened)
    return gossip::reject(self, ctx, st, id, coded);
  const packet& p = *opened;
  if (!st.active && gossip::well_formed(st, p, adpsgd_request))
    return serve(self, ctx, id, p);
  if (st.active && gossip::well_formed(st, p, adpsgd_reply))
    return complete(self, ctx, id, p);
  gossip::reject(self, ctx, st, id, p);
}

/// Loads node `id`'s start (or, resumed, its saved state: returned, else null).
const proto::NodeState* setup_adpsgd(adpsgd_ptr self, std::uint32_t id, bool active,
                                     const run_context& ctx, std::uint64_t incarnation) {
  const auto& plan = *ctx.plan;
  const auto& algo = plan.config<adpsgd_config>();
  auto& st = self->state;
  gossip::init(st, ctx, id);
  st.active = active;
  st.gen.reseed(derive_seed(plan.seed, 0x41445053ULL + id + (incarnation << 32)));
  st.gamma = algo.step_size;
  st.decay = algo.decay;
  st.served.assign(st.neighbours.size(), 0);
  st.seq_rate = future_seq_rate(plan);
  st.restarts_of.assign(plan.nodes(), 0);
  for (const auto& c : plan.crashes)
    if (c.restart_after_seconds)
      ++st.restarts_of.at(c.node);
  for (const auto& j : plan.joins) {  // a join is a restart of a node absent since the start
    ++st.restarts_of.at(j.node);
    if (const auto at = gossip::neighbour_index(st, j.node); at && active) {
      st.absent.resize(st.neighbours.size(), false);
      st.absent[*at] = true;
    }
  }
  st.record = ctx.probe != nullptr;
  const auto* saved = incarnation == 0 ? resumed_node(ctx, id) : nullptr;
  if (saved)
    restore_adpsgd(st, *saved);
  return saved;
}

/// The running worker (`restored`: resumed from a checkpoint, it holds
/// until the supervisor's go).
adpsgd_worker_actor::behavior_type adpsgd_running(adpsgd_ptr self, std::uint32_t id,
                                                  context_ptr ctx, bool restored) {
  return compose<adpsgd_worker_actor::behavior_type>(
    gossip::start_handlers(self, restored, [=] { begin_cycle(self, *ctx, id); }),
    [=](restart_atom, std::uint32_t k, std::uint64_t fence) {
      return fence_off(self, *ctx, id, k, fence);
    },
    [=](wake_atom, std::uint64_t step) {
      ctx->events.record(ctx->ns(self), id, event_kind::wake, step);
      self->state.woke = true;
      try_step(self, *ctx, id);  // 3
    },
    [=](deliver_atom, const packet& p) { on_deliver(self, *ctx, id, p); },
    [=](model_atom) { return gossip::snapshot(self->state, id); },
    [=](stats_atom) { return gossip::stats(self->state); },
    // A replacement's join after it started (never sent twice): nothing.
    [](start_atom, const float_blob&, std::uint64_t, const std::vector<std::uint64_t>&,
       std::uint64_t, const std::vector<caf::actor>&) {},
    checkpoint_handlers(
      self, [=] { begin_cycle(self, *ctx, id); }, [=] { return save_adpsgd(self->state); }));
}

/// Node `id`'s worker. `incarnation` 0 is the first; a replacement
/// (incarnation >= 1, after a crash) keeps every message until the
/// supervisor starts it with a neighbour's model, the neighbours' fences and
/// its routes.
adpsgd_worker_actor::behavior_type adpsgd_worker(adpsgd_ptr self, std::uint32_t id, bool active,
                                                 context_ptr ctx, std::uint64_t incarnation) {
  name_exceptions(self);
  const auto* saved = setup_adpsgd(self, id, active, *ctx, incarnation);
  auto running = adpsgd_running(self, id, ctx, saved != nullptr);
  if (incarnation == 0)
    return running;
  self->set_default_handler(caf::skip);
  return waiting_for<adpsgd_worker_actor>([=](start_atom, const float_blob& x, std::uint64_t steps,
                                              const std::vector<std::uint64_t>& marks,
                                              std::uint64_t fence,
                                              const std::vector<caf::actor>& routes) mutable {
    auto& st = self->state;
    st.x = x.vec();
    st.steps = steps;
    if (st.active) {
      st.exchange_seq = fence;
      for (std::size_t n = 0; n < st.absent.size() && n < marks.size(); ++n)
        st.absent[n] = st.absent[n] && marks[n] == 0;  // a joiner that answered has joined
    } else {
      st.served = marks;
    }
    gossip::take_routes(st, routes);
    self->set_default_handler(caf::print_and_drop);
    self->become(std::move(running));
    begin_cycle(self, *ctx, id);
  });
}

}  // namespace

std::vector<adpsgd_exchange> adpsgd_take_exchanges(const caf::actor_addr& worker) {
  return gossip::take_from_worker<adpsgd_worker_actor>(worker, &adpsgd_state::ledger);
}

namespace {

[[nodiscard]] bool is_active(const context_ptr& ctx, std::uint32_t i) {
  const auto split = process_shared<std::vector<bool>>(*ctx, "adpsgd.split", [&] {
    auto s = bipartite_split(ctx->plan->topo->g_r);
    if (!s)
      throw topology_error("AD-PSGD needs a bipartite graph (active/passive split)");
    return std::make_shared<std::vector<bool>>(std::move(*s));
  });
  return split->at(i);
}

}  // namespace

node_actors spawn_adpsgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                              std::uint32_t i) {
  return gossip::one_actor_node(caf::actor_cast<caf::actor>(
    parent->spawn(adpsgd_worker, i, is_active(ctx, i), ctx, std::uint64_t{0})));
}

caf::actor spawn_adpsgd_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                    std::uint32_t k, std::uint64_t incarnation) {
  return caf::actor_cast<caf::actor>(
    sup->spawn(adpsgd_worker, k, is_active(ctx, k), ctx, incarnation));
}

void join_adpsgd_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                        const worker_restart& r, restart_started started) {
  const auto& neighbours = ctx->plan->topo->g_r.out(r.node);
  // The replacement numbers its exchanges from here: far above anything the
  // dead incarnations can have used (one exchange per gradient).
  const std::uint64_t fence = r.incarnation << 40;
  const bool active = is_active(ctx, r.node);
  using ask = gossip::ask_neighbours<std::tuple<float_blob, std::uint64_t, std::uint64_t>,
                                     adpsgd_worker_actor>;
  ask::run(
    sup, ctx, r,
    [=](const ask::answers& got) {
      std::vector<std::uint64_t> marks(neighbours.size(), 0);
      float_blob x{ctx->plan->x0};
      std::uint64_t steps = 0;
      std::string source = "x^0 (no neighbour answered)";
      bool donor = false;  // the first neighbour that answered
      for (std::size_t j = 0; j < neighbours.size(); ++j) {
        if (!got[j])
          continue;
        // A passive replacement serves each neighbour above its mark; an
        // active one reads a mark as "present" (1: answered).
        marks[j] = active ? 1 : std::get<1>(*got[j]);
        if (std::exchange(donor, true))
          continue;
        x = std::get<0>(*got[j]);
        steps = std::get<2>(*got[j]);
        source = "node " + std::to_string(neighbours[j]) + "'s model";
      }
      sup->send(caf::actor_cast<adpsgd_worker_actor>(r.replacement), start_atom::value, x, steps,
                marks, fence, r.nodes.at(r.node).worker_routes);
      started(source);
    },
    fence);
}

void wire_adpsgd(caf::event_based_actor* sup, const context_ptr& ctx,
                 std::vector<node_actors>& nodes, link_list& links) {
  gossip::wire_nodes(sup, ctx, nodes, links);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
namespace {

/// AD-PSGD gossips over G_R taken as undirected, split active/passive.
void adpsgd_check_topology(const loaded_spec& ls, const topology& topo) {
  gossip::check_undirected(ls, topo, "adpsgd");
  if (!bipartite_split(topo.g_r))
    throw spec_error(ls.where("topology") +
                     ": adpsgd needs a bipartite graph for its active/passive split "
                     "(e.g. RING with an even number of nodes); this one is not");
}

/// The partner generator and served marks against the topology.
std::string adpsgd_check_node(const proto::NodeState& s, std::uint32_t i, const run_plan& plan) {
  const auto& a = s.adpsgd();
  if (a.rng_size() != 4)
    return "the partner generator's state is not 4 words";
  if (static_cast<std::size_t>(a.served_size()) != plan.topo->g_r.out(i).size())
    return "served marks do not match the topology";
  return {};
}

}  // namespace

algorithm_descriptor adpsgd_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kAdpsgd;
  d.node_part = proto::NodeState::kAdpsgd;
  d.name = "adpsgd";
  d.check_block = adpsgd_check_block;
  d.parse = adpsgd_parse_block;
  d.uses_topology = true;
  d.check_topology = adpsgd_check_topology;
  d.spawn_node = spawn_adpsgd_node;
  d.wire = wire_adpsgd;
  d.spawn_replacement = spawn_adpsgd_replacement;
  d.join = join_adpsgd_worker;
  d.check_node = adpsgd_check_node;
  d.links.coding = values_coding;
  d.joins = "a joining node takes a live neighbour's model and step count; active nodes pick "
            "their partners among the neighbours present, a joined one from its join on";
  return d;
}

}  // namespace atrain
