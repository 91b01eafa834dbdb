/// R-FAST: robust fully-asynchronous stochastic gradient tracking (docs/ALGORITHMS.md
/// §1, the cycle's steps 1-5), as a worker actor and a gradient-buffer actor per
/// node. This file: the worker (steps 1 and 2), spawning and wiring; the buffer
/// (steps 3-5) is in rfast_buffer.cpp, the tracker's arithmetic in rfast_tracker.cpp.
#include "algorithms/rfast/rfast.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/exceptions.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "algorithms/rfast/rfast_epoch.hpp"
#include "algorithms/rfast/rfast_internal.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/compute.hpp"
#include "atrain/actors/network.hpp"
#include "atrain/kernels/fused_ops.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

// ---------------------------------------------------------------- the worker

namespace {

struct worker_state {
  std::optional<compute_unit> cu;
  std::vector<float> x;
  std::vector<float> g;
  rfast_buffer_actor buffer;
  outbox out_r;
  std::uint32_t epoch = 0;  // stamped on every model packet
  double gamma = 0;
  double decay = 0;
  std::uint64_t seq = 0;
  std::uint64_t stale_limit = 0;  // wakes; 0 = keep every in-neighbour
  staleness_stats staleness;
  barrier_hold hold;  // checkpoints
  // Buffers of the gradients sent to the buffer and the models sent out,
  // reused once nothing holds them (no allocation per wake).
  blob_pool<float> g_pool;
  blob_pool<float> v_pool;
  std::vector<const float*> pull_parts;  // step 2's models and weights (kept: no allocation)
  std::vector<double> pull_weights;
  static inline const char* name = "atrain_rfast_worker";
};

using worker_ptr = rfast_worker_actor::stateful_pointer<worker_state>;

// ---- checkpoints: the worker's part of NodeState

void save_worker(const worker_state& st, proto::NodeState& s) {
  *s.mutable_params() = {st.x.begin(), st.x.end()};
  s.set_wakes(st.seq);
  st.cu->save(*s.mutable_compute());
  s.set_messages_sent(st.out_r.messages);
  s.set_bytes_sent(st.out_r.bytes);
  save_staleness(st.staleness, s);
  save_coder(st.out_r, s);
}

void restore_worker(worker_state& st, const proto::NodeState& s) {
  st.x.assign(s.params().begin(), s.params().end());
  st.seq = s.wakes();
  st.cu->restore(s.compute());
  st.out_r.messages = s.messages_sent();
  st.out_r.bytes = s.bytes_sent();
  restore_staleness(st.staleness, s);
  restore_coder(st.out_r, s);
  st.hold.requested = st.hold.held = true;  // until the supervisor's go
}

// ---- the worker

void schedule_next(worker_ptr self) {
  auto& st = self->state;
  auto g = st.g_pool.take(st.x.size());
  const double wait = st.cu->gradient(self, st.x.data(), *g);
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  send_after(self, caf::actor_cast<rfast_worker_actor>(self), wait, wake_atom::value,
             st.g_pool.publish(std::move(g)));
}

/// The worker at its spawn; returns its saved state in a resumed run (null
/// in a fresh run and for a restarted worker, which starts from `x_start`).
const proto::NodeState* init_worker(worker_ptr self, std::uint32_t id, const run_context& ctx,
                                    rfast_buffer_actor buffer, std::vector<float> x_start) {
  const auto& plan = *ctx.plan;
  const auto& algo = plan.config<rfast_config>();
  auto& st = self->state;
  st.cu.emplace(ctx, id);
  const bool restarted = !x_start.empty();
  st.x = restarted ? std::move(x_start) : plan.x0;
  const auto* saved = restarted ? nullptr : resumed_node(ctx, id);  // a replacement joins
  st.out_r.coder = coder_for(plan, [](std::uint32_t kind) { return kind == rfast_model; });
  if (saved)
    restore_worker(st, *saved);
  run_probe::show_model(ctx.probe, self, id, &st.x);
  st.buffer = std::move(buffer);
  st.gamma = algo.step_size;
  st.decay = algo.decay;
  st.stale_limit = algo.stale_model_wakes;
  return saved;
}

/// (start_atom, G_R out-routes): a restored worker holds until the
/// supervisor's go, a restarted one asks its buffer where to go on, a
/// fresh one initialises the tracker with g_i(x^0).
void worker_start(worker_ptr self, std::uint32_t id, const run_context& ctx,
                  const std::vector<caf::actor>& out, bool restored, bool restarted) {
  auto& st = self->state;
  const auto& targets = ctx.plan->topo->g_r.out(id);
  for (std::size_t k = 0; k < out.size(); ++k)  // none: an epoch view follows
    st.out_r.routes.emplace_back(targets.at(k), out[k]);
  if (restored)
    return;  // restored from a checkpoint: holds until the supervisor's go
  if (restarted) {
    // Receivers keep the newest model by sequence number: continue above
    // every number the crashed worker may have used.
    self->request(st.buffer, caf::infinite, resume_atom::value)
      .then([=](std::uint64_t tracks, std::uint32_t epoch) {
        self->state.seq = tracks;
        self->state.epoch = epoch;
        schedule_next(self);
      });
    return;
  }
  (void)st.cu->gradient(self, st.x.data(), st.g);  // g_i(x^0) initialises the tracker
  self->send(st.buffer, init_atom::value, float_blob{st.g});
  schedule_next(self);
}

/// Step 2's in-neighbours: the models kept (a stale one is left out and the
/// weights scaled back to a row sum of 1) into st.pull_parts, their weights
/// after r_ii into st.pull_weights. Returns the sum of the kept weights.
double plan_pull(worker_state& st, const std::vector<float_blob>& v_hat,
                 const std::vector<std::uint64_t>& ages, const std::vector<double>& r,
                 std::vector<float>& own) {
  auto& parts = st.pull_parts;
  auto& weights = st.pull_weights;
  parts.clear();
  weights.assign(1, r.at(0));
  double kept = r[0];
  for (std::size_t k = 0; k < v_hat.size(); ++k) {
    st.staleness.add(static_cast<double>(ages[k]));
    if (st.stale_limit > 0 && ages[k] > st.stale_limit)
      continue;  // silent in-neighbour: its model would only drag x back
    // A new epoch's in-neighbour that has sent nothing yet counts as this
    // node's own x (pre-descent; copied: x is overwritten).
    if (v_hat[k].empty() && own.empty())
      own = st.x;
    parts.push_back(v_hat[k].empty() ? own.data() : v_hat[k].ptr());
    weights.push_back(r.at(k + 1));
    kept += r[k + 1];
  }
  if (weights.size() < v_hat.size() + 1)
    for (auto& w : weights)
      w /= kept;  // row stochastic again over the neighbours kept
  return kept;
}

/// Steps 1 and 2 in one pass over x: the local descent v = x - gamma_k d,
/// then x = r_ii v + sum_j r_ij v^_j over the in-neighbours kept; v is sent
/// to the G_R out-neighbours.
void descend_and_pull(worker_ptr self, std::uint32_t id, run_context& ctx, const float_blob& d,
                      const std::vector<float_blob>& v_hat, const std::vector<std::uint64_t>& ages,
                      const std::vector<double>& r) {
  auto& st = self->state;
  const std::size_t dim = st.x.size();
  const double gamma = st.gamma / (1.0 + st.decay * static_cast<double>(st.seq));
  const auto step = static_cast<float>(gamma);
  std::vector<float> own;
  const double kept = plan_pull(st, v_hat, ages, r, own);
  auto v = st.v_pool.take(dim);
  auto known = finiteness::unknown;  // what the receivers would find (blob::all_finite)
  if (kept > 0) {
    const bool finite = vec::descend_weighted_sum(st.x.data(), d.ptr(), step, v->data(),
                                                  st.pull_parts, st.pull_weights, dim);
    known = finite ? finiteness::finite : finiteness::not_finite;
  } else {  // a tree child cut off from its parent keeps its model
    *v = st.x;
    vec::axpy(-step, d.ptr(), v->data(), dim);  // x + (-step d): x - step d's bits
    st.x = *v;
  }
  packet p;
  p.from = id;
  p.kind = rfast_model;
  p.seq = ++st.seq;
  p.f = st.v_pool.publish(std::move(v), known);
  p.epoch = st.epoch;
  st.out_r.broadcast(self, ctx, p);
}

/// `x_start` empty: a fresh worker (x = x^0, initialises the tracker);
/// otherwise a restarted one (see respawn_rfast_worker).
rfast_worker_actor::behavior_type rfast_worker(worker_ptr self, std::uint32_t id,
                                               rfast_buffer_actor buffer, context_ptr ctx,
                                               std::vector<float> x_start) {
  name_exceptions(self);
  const bool restarted = !x_start.empty();
  const auto* saved = init_worker(self, id, *ctx, std::move(buffer), std::move(x_start));
  return compose<rfast_worker_actor::behavior_type>(
    [=](start_atom, const std::vector<caf::actor>& out) {
      worker_start(self, id, *ctx, out, saved != nullptr, restarted);
    },
    [=](wake_atom, const float_blob& g) {
      ctx->events.record(ctx->ns(self), id, event_kind::wake, self->state.seq);
      const auto gate = self->state.out_r.gate(rfast_detail::fold_in_flight, ctx->ns(self));
      self
        ->request(self->state.buffer, caf::infinite, track_atom::value, g,
                  static_cast<std::uint8_t>(gate))
        .then([=](const float_blob& d, const std::vector<float_blob>& v_hat,
                  const std::vector<std::uint64_t>& ages, const std::vector<double>& r) {
          if (!d.empty())  // empty: folded into the next step (routes busy)
            descend_and_pull(self, id, *ctx, d, v_hat, ages, r);
          if (!self->state.hold.stop_here())  // (a checkpoint holds here)
            schedule_next(self);              // next gradient at x
        });
    },
    [=](model_atom) {
      const auto& st = self->state;
      return make_snapshot(id, *st.cu, st.out_r, st.staleness, st.x);
    },
    [=](epoch_atom, const rfast_epoch& e) {  // a re-rooting: new G_R out-neighbours
      auto& st = self->state;
      st.epoch = e.epoch;
      rfast_detail::set_routes(st.out_r, e);
    },
    checkpoint_handlers(
      self, [=] { schedule_next(self); },
      [=] {
        proto::NodeState s;
        save_worker(self->state, s);
        return s.SerializeAsString();
      }));
}

}  // namespace

node_actors spawn_rfast_node(caf::event_based_actor* parent, const context_ptr& ctx,
                             std::uint32_t i) {
  node_actors node;
  auto buffer = rfast_detail::spawn_rfast_buffer(parent, ctx, i, false);
  node.buffer = caf::actor_cast<caf::actor>(buffer);
  node.worker =
    caf::actor_cast<caf::actor>(parent->spawn(rfast_worker, i, buffer, ctx, std::vector<float>{}));
  return node;
}

void wire_rfast(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, link_list& links) {
  const auto& topo = *ctx->plan->topo;
  const auto n = static_cast<std::uint32_t>(nodes.size());
  std::vector<caf::actor> buffers(n);
  for (std::uint32_t i = 0; i < n; ++i)
    buffers[i] = nodes[i].buffer;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (const auto& e : topo.g_r.edges())
    edges.emplace_back(e.from, e.to);
  for (const auto& e : topo.g_c.edges())
    edges.emplace_back(e.from, e.to);
  network net{sup, ctx, edges, buffers, links};
  auto table = rfast_route_table(*ctx);
  for (const auto& [from, to] : edges)
    table->route[{from, to}] = net.route(from, to);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<caf::actor> out_c, out_r;
    for (auto j : topo.g_c.out(i))
      out_c.push_back(net.route(i, j));
    for (auto j : topo.g_r.out(i))
      out_r.push_back(net.route(i, j));
    sup->send(caf::actor_cast<rfast_buffer_actor>(nodes[i].buffer), start_atom::value,
              std::move(out_c));
    nodes[i].worker_routes = out_r;
    sup->send(caf::actor_cast<rfast_worker_actor>(nodes[i].worker), start_atom::value,
              std::move(out_r));
  }
}

caf::actor respawn_rfast_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                                std::uint32_t id, const node_actors& node, std::vector<float> x) {
  if (x.empty())
    x = ctx->plan->x0;
  auto w = sup->spawn(rfast_worker, id, caf::actor_cast<rfast_buffer_actor>(node.buffer), ctx,
                      std::move(x));
  const auto table = rfast_route_table(*ctx);
  if (auto view = table->worker_view.find(id); view != table->worker_view.end()) {
    // Re-rooted since the spec's graph pair: the current epoch's routes.
    sup->send(w, start_atom::value, std::vector<caf::actor>{});
    sup->send(w, epoch_atom::value, view->second);
  } else {
    sup->send(w, start_atom::value, node.worker_routes);
  }
  return caf::actor_cast<caf::actor>(w);
}

node_actors respawn_rfast_node(caf::event_based_actor* sup, const context_ptr& ctx,
                               std::uint32_t id, std::vector<float> x) {
  if (x.empty())
    x = ctx->plan->x0;
  node_actors node;
  auto buffer = rfast_detail::spawn_rfast_buffer(sup, ctx, id, true);
  node.buffer = caf::actor_cast<caf::actor>(buffer);
  node.worker =
    caf::actor_cast<caf::actor>(sup->spawn(rfast_worker, id, buffer, ctx, std::move(x)));
  return node;
}

void start_respawned_rfast_node(caf::event_based_actor* sup, const node_actors& node) {
  // No routes here: the epoch view sent before carries them.
  sup->send(caf::actor_cast<rfast_worker_actor>(node.worker), start_atom::value,
            std::vector<caf::actor>{});
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
namespace {

/// R-FAST's trackers and in-neighbour state against the plan's graphs.
std::string rfast_check_node(const proto::NodeState& node, std::uint32_t i, const run_plan& plan) {
  const auto dim = plan.dim();
  const auto& topo = *plan.topo;
  const auto in_c = topo.g_c.in(i);
  const auto in_r = topo.g_r.in(i);
  const auto& s = node.rfast();
  if (static_cast<std::size_t>(s.tracker_size()) != dim ||
      static_cast<std::size_t>(s.g_prev_size()) != dim ||
      static_cast<std::size_t>(s.rho_size()) != dim)
    return "tracker state does not have the model's dimension " + std::to_string(dim);
  // g_prev is kept in float (it is the last gradient): anything else would be
  // rounded on restore instead of refused.
  for (int k = 0; k < s.g_prev_size(); ++k)
    if (const double v = s.g_prev(k); !(std::abs(v) <= std::numeric_limits<float>::max()) ||
                                      static_cast<double>(static_cast<float>(v)) != v)
      return "g_prev[" + std::to_string(k) + "] = " + std::to_string(s.g_prev(k)) +
             " is not a gradient value (float)";
  if (static_cast<std::size_t>(s.mass_in_size()) != in_c.size() ||
      static_cast<std::size_t>(s.model_in_size()) != in_r.size())
    return "in-neighbour state does not match the topology";
  for (int k = 0; k < s.mass_in_size(); ++k) {
    const auto& m = s.mass_in(k);
    if (m.node() != in_c[static_cast<std::size_t>(k)] ||
        static_cast<std::size_t>(m.rho_hat_size()) != dim ||
        (!m.consumed_all() && static_cast<std::size_t>(m.rho_tilde_size()) != dim))
      return "mass_in[" + std::to_string(k) + "] does not match the topology";
  }
  for (int k = 0; k < s.model_in_size(); ++k) {
    const auto& m = s.model_in(k);
    if (m.node() != in_r[static_cast<std::size_t>(k)] ||
        static_cast<std::size_t>(m.params_size()) != dim)
      return "model_in[" + std::to_string(k) + "] does not match the topology";
  }
  if (s.folded_n() > rfast_detail::max_folded ||
      static_cast<std::size_t>(s.folded_size()) != (s.folded_n() ? dim : 0) ||
      s.folded_total() < s.folded_n())
    return "folded gradients (" + std::to_string(s.folded_n()) + ", " +
           std::to_string(s.folded_size()) + " values) do not match the model's dimension " +
           std::to_string(dim) + " or exceed " + std::to_string(rfast_detail::max_folded);
  return {};
}

/// link.codec: models as models (values, or replicas under top-k), the
/// tracker's running sums as coded increments.
stream_coding rfast_coding(std::uint32_t kind) {
  return kind == rfast_model  ? stream_coding::model
         : kind == rfast_mass ? stream_coding::running_sum
                              : stream_coding::raw;
}

}  // namespace

algorithm_descriptor rfast_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kRfast;
  d.node_part = proto::NodeState::kRfast;
  d.name = "rfast";
  d.check_block = rfast_check_block;
  d.parse = rfast_parse_block;
  d.uses_topology = true;
  d.spawn_node = spawn_rfast_node;
  d.wire = wire_rfast;
  d.check_node = rfast_check_node;
  d.recovery = make_rfast_recovery;
  d.whole_restart_unsaved =
    "R-FAST's whole-node restart starts new tracking epochs, which a checkpoint does not save "
    "yet: crash only the worker, or take no checkpoints";
  d.check_topology = [](const loaded_spec& ls, const topology&) {
    check_rfast_joins(ls, settings_of(ls.spec).topology);
  };
  d.joins = "the run starts with a tracking epoch over the nodes present; a joining node gets a "
            "live node's model and a fresh gradient buffer, and a new tracking epoch takes it "
            "into both graphs (the spec's pair with its common root once every node is in)";
  d.links.acknowledged = false;
  d.links.newest_wins = true;
  d.links.follow_restarts = false;
  d.links.coding = rfast_coding;
  d.evaluation.mass_residual = mass_residual;
  return d;
}

}  // namespace atrain
