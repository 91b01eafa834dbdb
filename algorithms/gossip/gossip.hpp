#pragma once
/// What the gossip baselines (D-PSGD, AD-PSGD, and SGP/OSGP over their own
/// peer schedule) share: one actor per node holding x_i, packets to single
/// neighbours, packet checks, the decaying step size and the model snapshot.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "atrain/actors/ask_nodes.hpp"
#include "atrain/actors/blob_checks.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/compute.hpp"
#include "atrain/actors/link_codec.hpp"
#include "atrain/actors/network.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain::gossip {

/// The part of a gossip node's state both algorithms keep.
struct node_base {
  std::optional<compute_unit> cu;
  std::vector<float> x;
  std::vector<float> g;
  std::vector<std::uint32_t> neighbours;  // g_r.out(i) == g_r.in(i): the graph is symmetric
  outbox out;                             // routes aligned with `neighbours`
  std::uint64_t rejected = 0;
  staleness_stats staleness;
};

/// gamma_k = gamma / (1 + decay k).
[[nodiscard]] inline double step_size(double gamma, double decay, std::uint64_t k) {
  return gamma / (1.0 + decay * static_cast<double>(k));
}

/// Index of `node` among the neighbours, or nullopt for a stranger.
[[nodiscard]] inline std::optional<std::size_t> neighbour_index(const node_base& st,
                                                                std::uint32_t node) {
  auto it = std::find(st.neighbours.begin(), st.neighbours.end(), node);
  if (it == st.neighbours.end())
    return std::nullopt;
  return static_cast<std::size_t>(it - st.neighbours.begin());
}

/// True for a packet of stream `kind` from a neighbour carrying a finite model
/// of the right size.
[[nodiscard]] inline bool well_formed(const node_base& st, const packet& p, std::uint32_t kind) {
  const std::size_t dim = st.x.size();
  return p.kind == kind && neighbour_index(st, p.from).has_value() && p.f.size() == dim &&
         p.d.empty() && p.scalars.empty() && all_finite(p.f);
}

/// Counts and traces a rejected packet.
inline void reject(caf::local_actor* self, run_context& ctx, node_base& st, std::uint32_t id,
                   const packet& p) {
  ++st.rejected;
  ctx.events.record(ctx.ns(self), id, event_kind::reject, p.from, p.seq);
}

/// Sends `p` to neighbour `to` only (counted like a broadcast). `Self`: the
/// sending actor, typed or not.
template <class Self>
void send_to(Self* self, run_context& ctx, node_base& st, std::uint32_t to, packet p) {
  st.out.send(self, ctx, *neighbour_index(st, to), std::move(p));
}

/// Loads the plan's start: compute unit, x^0, neighbours (init), and the
/// routes handed over with init_atom (take_routes).
inline void init(node_base& st, const run_context& ctx, std::uint32_t id) {
  st.cu.emplace(ctx, id);
  st.x = ctx.plan->x0;
  st.neighbours = ctx.plan->topo->g_r.out(id);
  st.out.coder = coder_for(*ctx.plan);  // link.codec (refused where not supported)
}

inline void take_routes(node_base& st, const std::vector<caf::actor>& routes) {
  for (std::size_t k = 0; k < st.neighbours.size(); ++k)
    st.out.routes.emplace_back(st.neighbours[k], routes.at(k));
}

/// The handlers every gossip node begins with, as a tuple for compose()
/// (node_actor.hpp): its routes (init_atom), and the start, which
/// `begin()`s its first cycle unless it was restored (then it holds until
/// the supervisor's go). `Self`: a stateful actor, typed or not, whose
/// state is a node_base.
template <class Self, class Begin>
[[nodiscard]] auto start_handlers(Self* self, bool restored, Begin begin) {
  return std::make_tuple(
    [=](init_atom, const std::vector<caf::actor>& routes) { take_routes(self->state, routes); },
    [=](start_atom) {
      if (!restored)
        begin();
    });
}

/// What wire_nodes sends every gossip worker (the subset of their
/// interfaces it needs): its routes, then its start.
using node_start =
  caf::typed_actor<caf::reacts_to<init_atom, std::vector<caf::actor>>, caf::reacts_to<start_atom>>;

[[nodiscard]] inline model_snapshot snapshot(const node_base& st, std::uint32_t id) {
  return make_snapshot(id, *st.cu, st.out, st.staleness, st.x);
}

/// The (stats_atom) answer of a node: its traffic is in its snapshot already.
[[nodiscard]] inline std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>
stats(const node_base& st) {
  return {0, 0, st.rejected};
}

namespace detail {

/// The actor type of a stateful worker: caf::stateful_actor<State> for a
/// dynamically typed one (`Interface` void), else the typed interface's.
template <class Interface, class State>
struct worker_impl {
  using type = typename Interface::template stateful_base<State>;
};

template <class State>
struct worker_impl<void, State> {
  using type = caf::stateful_actor<State>;
};

}  // namespace detail

/// Test hook body (virtual clock, between two scheduler steps): moves
/// `field` out of the state of the worker at `worker`; a default T when the
/// actor is gone or not of that type. `Interface`: the worker's typed
/// interface (take_from_worker<dpsgd_worker_actor>(...)), or void for a
/// dynamically typed caf::stateful_actor<State>.
template <class Interface = void, class State, class T>
[[nodiscard]] T take_from_worker(const caf::actor_addr& worker, T State::*field) {
  auto handle = caf::actor_cast<caf::actor>(worker);
  if (!handle)
    return {};
  using impl = typename detail::worker_impl<Interface, State>::type;
  auto* w = dynamic_cast<impl*>(caf::actor_cast<caf::abstract_actor*>(handle));
  if (w == nullptr)
    return {};
  return std::exchange(w->state.*field, T{});
}

/// Node i of a gossip algorithm: one worker, `worker`, which is also its
/// "buffer" for the evaluator: it answers (stats_atom) with (messages, bytes,
/// rejected) = (0, 0, rejected), its traffic being in its snapshot.
[[nodiscard]] inline node_actors one_actor_node(caf::actor worker) {
  node_actors node;
  node.worker = worker;
  node.buffer = std::move(worker);
  return node;
}

/// Wires the links i -> j for every j in out[i], sends every worker
/// (init_atom, routes to out[i] in that order), then every worker
/// (start_atom): with the real clock a node that starts early may already
/// send to one not yet started, which must know its routes to answer.
/// Each node's routes are kept in its worker_routes (for a restarted worker).
inline void wire_nodes(caf::event_based_actor* sup, const context_ptr& ctx,
                       std::vector<node_actors>& nodes, link_list& links,
                       const std::vector<std::vector<std::uint32_t>>& out) {
  const auto n = static_cast<std::uint32_t>(nodes.size());
  const auto workers = workers_of(nodes);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 0; i < n; ++i)
    for (auto j : out.at(i))
      edges.emplace_back(i, j);
  network net{sup, ctx, edges, workers, links};
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<caf::actor> routes;
    for (auto j : out[i])
      routes.push_back(net.route(i, j));
    nodes[i].worker_routes = routes;
    sup->send(caf::actor_cast<node_start>(workers[i]), init_atom::value, std::move(routes));
  }
  for (const auto& w : workers)
    sup->send(caf::actor_cast<node_start>(w), start_atom::value);
}

/// The same over the undirected graph g_r of the plan's topology.
inline void wire_nodes(caf::event_based_actor* sup, const context_ptr& ctx,
                       std::vector<node_actors>& nodes, link_list& links) {
  const auto& g = ctx->plan->topo->g_r;
  std::vector<std::vector<std::uint32_t>> out(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i)
    out[i] = g.out(i);
  wire_nodes(sup, ctx, nodes, links, out);
}

/// Restart (supervision): asks each neighbour of node r.node, in g_r order,
/// (restart_atom, r.node, xs...) and calls done(answers) once every one
/// answered or failed (a dead neighbour: nullopt). Answer is the reply as a
/// std::tuple. `Handle`: the workers' typed interface (the request and its
/// answer are checked against it), or caf::actor.
template <class Answer, class Handle = caf::actor>
struct ask_neighbours {
  using answers = typename ask_nodes<Answer, Handle>::answers;

  template <class Done, class... Xs>
  static void run(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                  Done done, Xs... xs) {
    std::vector<caf::actor> to;
    for (auto j : ctx->plan->topo->g_r.out(r.node))
      to.push_back(r.nodes.at(j).worker);
    ask_nodes<Answer, Handle>::run(sup, ctx, to, std::move(done), restart_atom::value, r.node,
                                   xs...);
  }
};

/// Who is in the run (faults.join), as a D-PSGD or SGP node sees it: per
/// node, from its current round on; the joins to come (round -> node); and
/// whether a join is being decided (no round begins meanwhile).
struct run_members {
  std::vector<bool> in;
  std::map<std::uint64_t, std::uint32_t> due;
  bool frozen = false;

  /// Every node but those absent from the start.
  void start(const run_plan& plan) {
    in.assign(plan.nodes(), true);
    for (const auto& j : plan.joins)
      in[j.node] = false;  // absent until its join
  }
  /// Exactly `members` (a joiner's start).
  void set(const std::vector<std::uint32_t>& members) {
    in.assign(in.size(), false);
    for (auto j : members)
      in.at(j) = true;
  }
  /// Takes in the nodes whose join round is `now` or before; true if any.
  bool take_due(std::uint64_t now) {
    bool changed = false;
    while (!due.empty() && due.begin()->first <= now) {
      in[due.begin()->second] = true;
      due.erase(due.begin());
      changed = true;
    }
    return changed;
  }
  [[nodiscard]] bool operator[](std::uint32_t j) const { return in[j]; }
};

/// A join decided from the live nodes' answers to the freeze (each answer's
/// first element: the round it is in; a missing one: not in the run): the
/// round every node takes joiner k in at, one past the highest so that none
/// has begun it, and the members from then on (those that answered, and k).
template <class Answers>
[[nodiscard]] std::pair<std::uint64_t, std::vector<std::uint32_t>> join_point(const Answers& got,
                                                                              std::uint32_t k) {
  std::uint64_t last = 0;
  std::vector<std::uint32_t> members;
  for (std::uint32_t j = 0; j < got.size(); ++j)
    if (got[j] || j == k) {
      members.push_back(j);
      if (got[j])
        last = std::max<std::uint64_t>(last, std::get<0>(*got[j]));
    }
  return {last + 1, std::move(members)};
}

/// D-PSGD and AD-PSGD gossip over G_R taken as an undirected graph.
inline void check_undirected(const loaded_spec& ls, const topology& topo, const std::string& name) {
  if (!topo.g_r.is_symmetric())
    throw spec_error(ls.where("topology") + ": " + name +
                     " gossips over an undirected graph; this one is not symmetric");
}

}  // namespace atrain::gossip
