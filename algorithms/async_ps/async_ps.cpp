/// Asynchronous parameter server (ALGORITHMS.md §9): one worker actor per
/// node and one server actor (the root aggregator) at node s =
/// algorithm.async_ps.server.
///
/// Worker i, holding the model x it last received and its version v
/// (initially x^0, v = 0):
///   1. g = g_i(x)                                   (takes tau_i: the wake)
///   2. send (seq, g, v) to the server, seq = 1, 2, 3, ... per worker
///   3. wait for the server's reply to request seq: x = x_server, v = its
///      version; record the staleness of g; go to 1.
/// Server, on each arriving gradient (worker i, seq, g, v):
///   x_s -= gamma_k g,  gamma_k = gamma / (1 + decay k),  k = updates so far;
///   k += 1; reply (seq, x_s, k) to worker i only.
/// Staleness of g = server updates since the worker read its model
/// = (server version when g is applied) - v = k_reply - 1 - v, recorded by
/// the worker that computed g when the reply arrives (make_snapshot).
///
/// Choices:
/// - The server keeps its model in float64 (the master copy; each gradient
///   is applied once, so rounding would otherwise accumulate over the whole
///   run) and sends a float32 copy.
/// - The evaluated model is the server's (evaluator: "parameter server
///   (node s)"); the consensus error is (1/n) sum_i |x_i - x_s|^2, the
///   workers' copies around the server's model.
/// - The worker on node s shares its machine with the server: they talk by
///   direct actor messages, no link (no latency, no loss). Every other
///   worker i talks over the link pair i -> s, s -> i. Those direct packets
///   are counted in messages and bytes like any other.
/// - The server's messages and bytes count towards node s in the report.
///
/// Links are acknowledged: every packet arrives at least once, perhaps
/// duplicated and reordered. A worker has one request outstanding, so the
/// server keeps per worker the last seq applied: seq = last + 1 is applied
/// (exactly once), seq <= last is a duplicate and ignored, anything else
/// (seq = 0, a seq further ahead, a version stamp other than the version the
/// server last returned to that worker) is impossible and rejected. A worker
/// takes only the reply to its outstanding request: older seqs (or a second
/// copy) are ignored, newer ones, other senders and versions that do not
/// move forward are rejected. Rejected packets are counted, traced
/// (event_kind::reject) and never applied.
///
/// Checkpoints: a worker holds when the reply to its request is in (a
/// gradient boundary: none in flight, none outstanding). Every gradient
/// sent before the barrier is then applied and answered, so the server is
/// at rest too: its float64 model, version, per-worker ledger marks and
/// counters go into its node's NodeState (async_ps_server), the workers'
/// models, versions and request counts into theirs.
#include "algorithms/async_ps/async_ps.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/blob_checks.hpp"
#include "atrain/actors/exceptions.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/compute.hpp"
#include "atrain/actors/network.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

namespace {

/// A model or gradient packet of stream `kind`: `dim` finite floats and one
/// finite, integral, non-negative version stamp.
[[nodiscard]] bool well_formed(const packet& p, std::uint32_t kind, std::size_t dim) {
  if (p.kind != kind || p.f.size() != dim || !p.d.empty() || p.scalars.size() != 1)
    return false;
  const double v = p.scalars.front();
  return std::isfinite(v) && v >= 0 && v == std::floor(v) && all_finite(p.f);
}

/// Counts and traces a rejected packet.
void reject(caf::local_actor* self, run_context& ctx, std::uint32_t node, std::uint64_t& rejected,
            const packet& p) {
  ++rejected;
  ctx.events.record(ctx.ns(self), node, event_kind::reject, p.from, p.seq);
}

// ------------------------------------------------------------------ server

struct server_state {
  std::uint32_t node = 0;
  std::vector<double> x;
  std::uint64_t version = 0;  // updates applied so far
  double gamma = 0;
  double decay = 0;
  std::vector<std::uint64_t> applied;       // per worker: last seq applied
  std::vector<std::uint64_t> sent_version;  // per worker: version last returned
  outbox out;                               // routes[i] reaches worker i
  std::uint64_t rejected = 0;
  std::uint64_t duplicates = 0;
  bool record = false;  // keep the ledger (test probe only)
  std::vector<async_ps_applied> ledger;
  static inline const char* name = "atrain_async_ps_server";
};
using server_ptr = async_ps_server_actor::stateful_pointer<server_state>;

void apply(server_ptr self, run_context& ctx, const packet& p) {
  auto& st = self->state;
  const double gamma = st.gamma / (1.0 + st.decay * static_cast<double>(st.version));
  const float* g = p.f.ptr();
  for (std::size_t k = 0; k < st.x.size(); ++k)
    st.x[k] -= gamma * static_cast<double>(g[k]);
  if (st.record)
    st.ledger.push_back({p.from, p.seq, st.sent_version[p.from], st.version, p.f});
  ++st.version;
  st.applied[p.from] = p.seq;
  st.sent_version[p.from] = st.version;
  packet reply;
  reply.from = st.node;
  reply.kind = async_ps_model;
  reply.seq = p.seq;
  reply.f = float_blob{std::vector<float>(st.x.begin(), st.x.end())};
  reply.scalars = {static_cast<double>(st.version)};
  st.out.send(self, ctx, p.from, std::move(reply));
}

std::string save_server(const server_state& st) {
  proto::NodeState s;
  auto& ps = *s.mutable_async_ps()->mutable_server();
  *ps.mutable_params() = {st.x.begin(), st.x.end()};
  ps.set_version(st.version);
  *ps.mutable_applied() = {st.applied.begin(), st.applied.end()};
  *ps.mutable_sent_version() = {st.sent_version.begin(), st.sent_version.end()};
  ps.set_messages_sent(st.out.messages);
  ps.set_bytes_sent(st.out.bytes);
  ps.set_rejected(st.rejected);
  ps.set_duplicates(st.duplicates);
  save_coder(st.out, s);
  return s.SerializeAsString();
}

void restore_server(server_state& st, const proto::NodeState& s) {
  const auto& ps = s.async_ps().server();
  restore_coder(st.out, s);
  st.x.assign(ps.params().begin(), ps.params().end());
  st.version = ps.version();
  st.applied.assign(ps.applied().begin(), ps.applied().end());
  st.sent_version.assign(ps.sent_version().begin(), ps.sent_version().end());
  st.out.messages = ps.messages_sent();
  st.out.bytes = ps.bytes_sent();
  st.rejected = ps.rejected();
  st.duplicates = ps.duplicates();
}

async_ps_server_actor::behavior_type server_actor(server_ptr self, std::uint32_t node,
                                                  context_ptr ctx) {
  name_exceptions(self);
  const auto& plan = *ctx->plan;
  const auto& algo = plan.config<async_ps_config>();
  auto& st = self->state;
  st.node = node;
  st.x.assign(plan.x0.begin(), plan.x0.end());
  st.gamma = algo.step_size;
  st.decay = algo.decay;
  st.applied.assign(plan.nodes(), 0);
  st.sent_version.assign(plan.nodes(), 0);
  st.record = ctx->probe != nullptr;
  st.out.coder = coder_for(plan, [](std::uint32_t kind) { return kind == async_ps_model; });
  if (const auto* saved = resumed_node(*ctx, node))
    restore_server(st, *saved);
  const std::size_t dim = plan.dim();
  return {
    [=](init_atom, const std::vector<caf::actor>& routes) {
      for (std::uint32_t i = 0; i < routes.size(); ++i)
        self->state.out.routes.emplace_back(i, routes[i]);
    },
    [=](deliver_atom, const packet& coded) {
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), st.node, event_kind::receive, coded.from, coded.seq);
      const auto opened = open_values(coded, dim);  // link.codec
      if (!opened)
        return reject(self, *ctx, st.node, st.rejected, coded);
      const packet& p = *opened;
      if (!well_formed(p, async_ps_gradient, dim) || p.from >= st.applied.size() || p.seq == 0)
        return reject(self, *ctx, st.node, st.rejected, p);
      if (p.seq <= st.applied[p.from]) {
        ++st.duplicates;  // applied already
        return;
      }
      if (p.seq != st.applied[p.from] + 1 ||
          p.scalars.front() != static_cast<double>(st.sent_version[p.from]))
        return reject(self, *ctx, st.node, st.rejected, p);
      apply(self, *ctx, p);
    },
    // Worker k was restarted (supervision): the replacement reads the
    // model now and continues after a fence. The crashed worker had at most
    // one gradient outstanding, numbered applied[k] + 1 at most; skipping
    // that number makes it a duplicate should it still arrive, so nothing
    // from the dead incarnation is applied from now on (and the replacement's
    // version stamp is the version returned here). A direct route to the
    // dead worker (worker k shares node s with the server) is re-pointed.
    [=](restart_atom, std::uint32_t k, const caf::actor_addr& dead,
        const caf::actor& w) -> caf::result<float_blob, std::uint64_t, std::uint64_t> {
      auto& st = self->state;
      if (k >= st.applied.size())
        return caf::make_error(caf::sec::invalid_argument, "no worker " + std::to_string(k));
      for (auto& route : st.out.routes)
        if (route.second.address() == dead)
          route.second = w;
      st.applied[k] += 1;
      st.sent_version[k] = st.version;
      if (st.out.coder)  // the replacement holds no copy of the model: the next reply is exact
        st.out.coder->reset(k);
      ctx->events.record(ctx->ns(self), st.node, event_kind::restart, k, st.version);
      return {float_blob{std::vector<float>(st.x.begin(), st.x.end())}, st.version, st.applied[k]};
    },
    [=](ckpt_state_atom) { return save_server(self->state); },
    [=](model_atom) {
      const auto& st = self->state;
      model_snapshot s;
      s.node = st.node;
      s.messages_sent = st.out.messages;
      s.bytes_sent = st.out.bytes;
      s.wire = st.out.wire_report();
      s.rejected = st.rejected;
      s.params = float_blob{std::vector<float>(st.x.begin(), st.x.end())};
      return s;
    },
  };
}

// ------------------------------------------------------------------ worker

struct worker_state {
  std::optional<compute_unit> cu;
  std::vector<float> x;  // the model last received
  std::vector<float> g;
  std::uint64_t version = 0;  // of x
  std::uint64_t seq = 0;      // requests sent
  bool waiting = false;       // request `seq` is outstanding
  std::uint32_t server = 0;   // the server's node
  outbox out;                 // one route: the server
  /// link.codec under TOPK: the server's models arrive as replicas (changes
  /// from this worker's copy); nullopt otherwise (values, or raw).
  std::optional<sum_decoder> decoder;
  std::uint64_t rejected = 0;
  staleness_stats staleness;
  barrier_hold hold;  // checkpoints
  static inline const char* name = "atrain_async_ps_worker";
};
using worker_ptr = async_ps_worker_actor::stateful_pointer<worker_state>;

void compute(worker_ptr self) {
  auto& st = self->state;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);  // 1
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  send_after(self, caf::actor_cast<async_ps_worker_actor>(self), wait, wake_atom::value);
}

std::string save_worker(const worker_state& st) {
  proto::NodeState s;
  save_worker_basics(st, st.seq, s);
  s.mutable_async_ps()->set_version(st.version);
  if (st.decoder)
    st.decoder->save(*s.mutable_codec());
  return s.SerializeAsString();
}

void restore_worker(worker_state& st, const proto::NodeState& s) {
  st.seq = restore_worker_basics(st, s);
  st.version = s.async_ps().version();
  if (st.decoder)
    st.decoder->restore(s.codec());
  st.hold.requested = st.hold.held = true;  // until the supervisor's go
}

/// A reply from the server to the outstanding request, or to an earlier one
/// (a duplicate); anything else is malformed.
[[nodiscard]] bool fits_request(const worker_state& st, const packet& p) {
  const double v = p.scalars.size() == 1 ? p.scalars.front() : -1.0;
  if (!(std::isfinite(v) && v >= 0 && v == std::floor(v) && v < 0x1p63))
    return false;  // a version stamp must be a whole number a counter can hold
  return p.from == st.server && p.seq <= st.seq &&
         !(p.seq == st.seq && st.waiting &&
           p.scalars.front() < static_cast<double>(st.version + 1));
}

/// Step 3's bookkeeping of the reply to the outstanding request.
void take_reply(worker_state& st, const packet& p) {
  const auto version = static_cast<std::uint64_t>(p.scalars.front());
  st.staleness.add(static_cast<double>(version - 1 - st.version));
  st.version = version;
}

/// Step 3 under top-k: the server's model as a replica. Only the reply to
/// the outstanding request reaches the decoder (one coded message per
/// request, in order on the acknowledged link), so a duplicate, or a reply
/// to a dead incarnation delivered to its replacement, never breaks the chain.
void take_replica(worker_ptr self, run_context& ctx, std::uint32_t id, const packet& p) {
  auto& st = self->state;
  const std::size_t dim = st.x.size();
  if (p.kind != async_ps_model || p.coded.empty() || !p.f.empty() || !fits_request(st, p))
    return reject(self, ctx, id, st.rejected, p);
  if (p.seq < st.seq || !st.waiting)
    return;  // a duplicate of a reply already taken
  const auto r = st.decoder->receive(p);
  if (r.outcome == codec::receive_outcome::malformed)
    return reject(self, ctx, id, st.rejected, p);
  if (r.outcome != codec::receive_outcome::applied_increment &&
      r.outcome != codec::receive_outcome::applied_full)
    return;  // no base to apply it to: the server's next exact reply restores it
  const auto& copy = st.decoder->sum(p.from, p.kind);
  std::vector<float> x(copy.begin(), copy.end());
  if (!vec::all_finite(x.data(), dim)) {  // a copy past float's range
    st.decoder->forget(p.from, p.kind);
    return reject(self, ctx, id, st.rejected, p);
  }
  take_reply(st, p);
  st.x = std::move(x);
  st.waiting = false;
  if (!st.hold.stop_here())
    compute(self);
}

/// Worker `id`; a replacement (`joining`) keeps every message until the
/// supervisor starts it with the server's model, version and the seq to go
/// on from, and its route to the server.
async_ps_worker_actor::behavior_type worker_actor(worker_ptr self, std::uint32_t id,
                                                  std::uint32_t server, context_ptr ctx,
                                                  bool joining) {
  name_exceptions(self);
  const auto& plan = *ctx->plan;
  auto& st = self->state;
  st.cu.emplace(*ctx, id);
  st.x = plan.x0;
  st.server = server;
  const std::size_t dim = plan.dim();
  st.out.coder = coder_for(plan, [](std::uint32_t kind) { return kind == async_ps_gradient; });
  if (st.out.coder && models_as_replicas(plan.link.codec))
    st.decoder.emplace(dim);
  const auto* saved = joining ? nullptr : resumed_node(*ctx, id);
  if (saved)
    restore_worker(st, *saved);
  if (!joining)
    run_probe::show_model(ctx->probe, self, id, &self->state.x);
  auto running = compose<async_ps_worker_actor::behavior_type>(
    [=](init_atom, const caf::actor& route) {
      self->state.out.routes.emplace_back(self->state.server, route);
    },
    [=](start_atom) {
      if (!saved)  // restored: holds until the supervisor's go
        compute(self);
    },
    [=](wake_atom) {
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), id, event_kind::wake, st.seq);
      packet p;  // 2
      p.from = id;
      p.kind = async_ps_gradient;
      p.seq = ++st.seq;
      p.f = float_blob{st.g};
      p.scalars = {static_cast<double>(st.version)};
      st.waiting = true;
      st.out.send(self, *ctx, 0, std::move(p));
    },
    [=](deliver_atom, const packet& coded) {  // 3
      auto& st = self->state;
      ctx->events.record(ctx->ns(self), id, event_kind::receive, coded.from, coded.seq);
      if (st.decoder)
        return take_replica(self, *ctx, id, coded);
      const auto opened = open_values(coded, dim);  // link.codec
      if (!opened)
        return reject(self, *ctx, id, st.rejected, coded);
      const packet& p = *opened;
      if (!well_formed(p, async_ps_model, dim) || !fits_request(st, p))
        return reject(self, *ctx, id, st.rejected, p);
      if (p.seq < st.seq || !st.waiting)
        return;  // a duplicate of a reply already taken
      take_reply(st, p);
      st.x = p.f.vec();
      st.waiting = false;
      if (!st.hold.stop_here())
        compute(self);
    },
    [=](ckpt_drain_atom) { return self->state.hold.busy_for(self, !self->state.waiting); },
    [=](model_atom) {
      const auto& st = self->state;
      auto s = make_snapshot(id, *st.cu, st.out, st.staleness, st.x);
      s.rejected = st.rejected;
      return s;
    },
    // A replacement's join after it started (never sent twice): nothing.
    [](start_atom, const float_blob&, std::uint64_t, std::uint64_t, const caf::actor&) {},
    ckpt_go_handler(self, [=] { compute(self); }), ckpt_pause_handler(self),
    ckpt_state_handler([=] { return save_worker(self->state); }));
  if (!joining)
    return running;
  self->set_default_handler(caf::skip);
  return waiting_for<async_ps_worker_actor>([=](start_atom, const float_blob& x,
                                                std::uint64_t version, std::uint64_t seq,
                                                const caf::actor& route) mutable {
    auto& st = self->state;
    st.x = x.vec();
    st.version = version;
    st.seq = seq;
    st.out.routes.emplace_back(st.server, route);
    self->set_default_handler(caf::print_and_drop);
    self->become(std::move(running));
    run_probe::show_model(ctx->probe, self, id, &self->state.x);
    compute(self);
  });
}

}  // namespace

std::optional<async_ps_view> async_ps_take(const caf::actor_addr& server) {
  auto handle = caf::actor_cast<caf::actor>(server);
  if (!handle)
    return std::nullopt;
  auto* s = dynamic_cast<server_ptr>(caf::actor_cast<caf::abstract_actor*>(handle));
  // Its state exists only between the behaviour's start and the exit.
  using flags = caf::abstract_actor;
  if (s == nullptr || !s->getf(flags::is_initialized_flag) ||
      s->getf(flags::is_terminated_flag | flags::is_cleaned_up_flag))
    return std::nullopt;
  async_ps_view v;
  v.applied = std::exchange(s->state.ledger, {});
  v.x = s->state.x;
  v.version = s->state.version;
  v.duplicates = s->state.duplicates;
  return v;
}

node_actors spawn_async_ps_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                std::uint32_t i) {
  const std::uint32_t s = ctx->plan->config<async_ps_config>().server;
  node_actors node;
  if (i == s)
    node.hub = caf::actor_cast<caf::actor>(parent->spawn(server_actor, s, ctx));
  node.worker = caf::actor_cast<caf::actor>(parent->spawn(worker_actor, i, s, ctx, false));
  return node;
}

caf::actor spawn_async_ps_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                      std::uint32_t k) {
  return caf::actor_cast<caf::actor>(
    sup->spawn(worker_actor, k, ctx->plan->config<async_ps_config>().server, ctx, true));
}

void join_async_ps_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                          const worker_restart& r, restart_started started) {
  const auto s = ctx->plan->config<async_ps_config>().server;
  const auto& server = r.nodes.at(s).hub;
  const auto route = r.nodes.at(r.node).worker_routes.at(0);
  const auto w = caf::actor_cast<async_ps_worker_actor>(r.replacement);
  sup
    ->request(caf::actor_cast<async_ps_server_actor>(server), ctx->reply_timeout(),
              restart_atom::value, r.node, r.dead, r.replacement)
    .then([=](const float_blob& x, std::uint64_t version, std::uint64_t seq) {
      sup->send(w, start_atom::value, x, version, seq, route);
      started("the parameter server's model (version " + std::to_string(version) + ")");
    });
}

void wire_async_ps(caf::event_based_actor* sup, const context_ptr& ctx,
                   std::vector<node_actors>& nodes, link_list& links) {
  wire_star(sup, ctx, links, ctx->plan->config<async_ps_config>().server, nodes);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
namespace {

std::optional<std::uint32_t> server_of(const algorithm_config& c) {
  return config_as<async_ps_config>(c).server;
}

/// The server's model and ledger (on the server's node only).
std::string async_ps_check_node(const proto::NodeState& s, std::uint32_t i, const run_plan& plan) {
  if (i != plan.config<async_ps_config>().server)
    return {};
  const auto& ps = s.async_ps().server();
  if (!s.async_ps().has_server() || static_cast<std::size_t>(ps.params_size()) != plan.dim())
    return "the parameter server's model is missing or not of the model's dimension";
  if (static_cast<std::size_t>(ps.applied_size()) != plan.nodes() ||
      static_cast<std::size_t>(ps.sent_version_size()) != plan.nodes())
    return "the parameter server's ledger does not have one entry per worker";
  return {};
}

}  // namespace

algorithm_descriptor async_ps_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kAsyncPs;
  d.node_part = proto::NodeState::kAsyncPs;
  d.name = "async_ps";
  d.check_block = async_ps_check_block;
  d.parse = async_ps_parse_block;
  d.spawn_node = spawn_async_ps_node;
  d.wire = wire_async_ps;
  d.critical_node = server_of;
  d.critical_role = "the parameter server";
  d.whole_restart_refusal = [](const algorithm_config& c, std::uint32_t k) {
    if (k != config_as<async_ps_config>(c).server)
      return std::string{};
    return "node " + std::to_string(k) +
           " holds the parameter server (algorithm.async_ps.server): the model it serves "
           "lives nowhere else (crash only the worker to restart it)";
  };
  d.spawn_replacement = ignoring_incarnation<spawn_async_ps_replacement>;
  d.joins = "a new worker: it takes the server's current model and version and sends its "
            "gradients from there";
  d.join = join_async_ps_worker;
  d.check_node = async_ps_check_node;
  d.evaluation.evaluated_hub = server_of;
  d.evaluation.hub_label = "parameter server";
  d.links.coding = [](std::uint32_t kind) {
    // The server's replies are models (replicas under top-k), the workers' gradients values.
    return kind == async_ps_model ? stream_coding::model : stream_coding::values;
  };
  return d;
}

}  // namespace atrain
