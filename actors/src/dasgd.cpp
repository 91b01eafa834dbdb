/// DASGD: decentralized asynchronous SGD (ALGORITHMS.md §2). No averaging:
/// every node applies every gradient produced anywhere, exactly once.
///
/// A cycle of node i. The gradient is the only thing that takes time (tau_i);
/// it is read at the start of the cycle and completes at the wake:
///   read:  g = g_i(x_i)                                      (takes tau_i)
///   wake:  1. apply, in arrival order, every remote packet that arrived since
///             the last wake:  x_i -= u  (u = the sender's sum gamma_k g_k)
///          2. x_i -= gamma_k g,  gamma_k = gamma / (1 + decay k), k = this
///             node's gradients so far
///          3. send u = gamma_k g to every other node — or, with
///             broadcast_every k, the sum of the last k local u every k-th
///             gradient; then read the next gradient at the new x_i.
/// Remote packets are buffered on arrival and applied at the next wake
/// (step 1), so a gradient is always computed on a model that holds
/// everything that had arrived when it was read.
///
/// Step size of a remote gradient: the SENDER's gamma_k, applied by the
/// sender before sending (the packet carries gamma_k g, not g). A replica
/// therefore subtracts exactly what the gradient's origin subtracted, sums
/// stay exact when gradients are batched (broadcast_every) or coalesced by a
/// link, and all replicas hold the same sum of steps up to float rounding.
///
/// Packets (stream dasgd_gradients): seq = the sender's local number of the
/// newest gradient inside, scalars = {count c}; the packet covers gradients
/// seq-c+1 .. seq. Without batching c = 1; broadcast_every k gives c = k;
/// a coalescing link (dasgd.coalesce, link.cpp) sums packets waiting for a
/// busy wire, adds their counts and keeps the newest seq — the ranges it
/// merges are consecutive, so the result covers a range again.
/// Delivery: links are acknowledged (retransmission until acked), so every
/// packet arrives at least once; duplicates are dropped by (sender, gradient
/// number) with `exactly_once`, marking every gradient of the range. A packet
/// whose range partly overlaps gradients already received is impossible and
/// rejected, as are unknown senders (or oneself), wrong sizes, non-finite
/// payloads, unknown streams and counts that are not 1 <= c <= seq.
///
/// Staleness of a gradient = the number of gradients created (completed)
/// anywhere STRICTLY BEFORE its read that node i had not applied at the read.
/// Gradients completing at the same instant as the read do not count (on the
/// virtual clock simultaneous events have no order in time), so with equal
/// taus and zero latency staleness is 0. Measured at the read, recorded in
/// staleness_stats when the gradient completes (one value per gradient made;
/// the snapshot reports mean and max per node). Counted with a creation
/// record shared by the workers of the run (`creation_record`): a
/// SINGLE-PROCESS measurement; on the real clock the order of two threads' gradients is
/// the order they took the record's lock.
#include "atrain/actors/dasgd.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "gossip.hpp"

namespace atrain {

namespace {

/// When every gradient of the run was created: shared by the run's workers.
class creation_record {
public:
  explicit creation_record(std::size_t n) : times_(n) {}

  /// Node `node` created its next gradient at `ns`.
  void add(std::uint32_t node, std::int64_t ns) {
    std::lock_guard<std::mutex> lock{mtx_};
    if (ns > last_ns_) {
      before_last_ = total_;
      last_ns_ = ns;
    }
    ++total_;
    times_.at(node).push_back(ns);
  }

  /// Gradients created strictly before `ns` (on the real clock, a time at
  /// or before the newest creation counts as that newest instant).
  [[nodiscard]] std::uint64_t before(std::int64_t ns) const {
    std::lock_guard<std::mutex> lock{mtx_};
    return ns > last_ns_ ? total_ : before_last_;
  }

  /// Creation time of gradient `index` (1, 2, ...) of `node`.
  [[nodiscard]] std::int64_t at(std::uint32_t node, std::uint64_t index) const {
    std::lock_guard<std::mutex> lock{mtx_};
    return times_.at(node).at(index - 1);
  }

private:
  mutable std::mutex mtx_;
  std::vector<std::vector<std::int64_t>> times_;
  std::int64_t last_ns_ = std::numeric_limits<std::int64_t>::min();
  std::uint64_t before_last_ = 0;
  std::uint64_t total_ = 0;
};

/// Largest gradient count one packet may claim (a hostile count must not
/// make the receiver loop for ever).
constexpr double max_packet_gradients = 1 << 24;

/// Shortest wait between two gradients of one node (run-clock seconds): a
/// zero wait would be a plain send to itself, and CAF keeps running an actor
/// whose mailbox never empties (the real clock would starve other actors).
constexpr double min_wait = 1e-6;

struct dasgd_state : gossip::node_base {
  std::shared_ptr<creation_record> created;  // null: staleness not measured (multi-process)
  std::uint32_t n = 0;
  double gamma = 0;
  double decay = 0;
  std::uint32_t every = 1;
  std::uint64_t steps = 0;              // local gradients completed
  std::int64_t read_ns = 0;             // when the running gradient was read
  double read_staleness = 0;            // the running gradient's staleness
  exactly_once dedup;
  std::vector<packet> inbox;            // arrived, applied at the next wake
  std::vector<float> batch;             // sum of gamma_k g not yet sent
  std::uint32_t batch_count = 0;
  std::uint64_t applied = 0;            // gradients applied to x (own + remote)
  std::int64_t instant_ns = -1;         // the instant of `applied_now`
  std::uint64_t applied_now = 0;        // applied ones created at instant_ns
  bool record = false;                  // keep the ledger (test probe only)
  dasgd_ledger ledger;
  std::size_t used_total = 0;           // ledger.used entries ever recorded
  std::size_t used_at_read = 0;
  static inline const char* name = "atrain_dasgd_worker";
};
using dasgd_ptr = caf::stateful_actor<dasgd_state>*;

/// Bookkeeping of one gradient (origin, index) applied at `now_ns`.
void note_applied(dasgd_state& st, std::uint32_t origin, std::uint64_t index,
                  std::int64_t now_ns) {
  ++st.applied;
  if (st.created && st.created->at(origin, index) == now_ns) {
    if (st.instant_ns != now_ns) {
      st.instant_ns = now_ns;
      st.applied_now = 0;
    }
    ++st.applied_now;
  }
  if (st.record)
    st.ledger.used.push_back({origin, index});
  ++st.used_total;
}

/// Reads x_i: measures the new gradient's staleness and starts it.
void begin_cycle(dasgd_ptr self, run_context& ctx) {
  auto& st = self->state;
  const std::int64_t now = ctx.ns(self);
  st.read_ns = now;
  const std::uint64_t same_instant = st.instant_ns == now ? st.applied_now : 0;
  const std::uint64_t applied_earlier = st.applied - same_instant;
  const std::uint64_t earlier = st.created ? st.created->before(now) : 0;
  st.read_staleness =
    earlier > applied_earlier ? static_cast<double>(earlier - applied_earlier) : 0.0;
  st.used_at_read = st.used_total;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);
  self->delayed_send(self, to_timespan(std::max(wait, min_wait)), wake_atom::value, st.steps);
}

void wake(dasgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  const std::int64_t now = ctx.ns(self);
  const std::size_t dim = st.x.size();
  for (const auto& p : st.inbox) {                                    // 1
    vec::axpy(-1.0f, p.f.ptr(), st.x.data(), dim);
    const auto count = static_cast<std::uint64_t>(p.scalars[0]);
    for (std::uint64_t s = p.seq - count + 1; s <= p.seq; ++s)
      note_applied(st, p.from, s, now);
    if (st.record)
      ++st.ledger.packets_applied;
  }
  st.inbox.clear();
  const double gamma = gossip::step_size(st.gamma, st.decay, st.steps++);  // 2
  if (st.created) {  // measured in one process only
    st.created->add(id, now);
    st.staleness.add(st.read_staleness);  // recorded once the gradient exists
  }
  vec::axpy(static_cast<float>(-gamma), st.g.data(), st.x.data(), dim);
  note_applied(st, id, st.steps, now);
  if (st.record)
    st.ledger.made.push_back({st.steps, st.read_ns, now, gamma, st.used_at_read, st.g});
  if (st.n > 1) {                                                     // 3
    if (st.batch_count == 0)
      st.batch.assign(dim, 0.0f);
    vec::axpy(static_cast<float>(gamma), st.g.data(), st.batch.data(), dim);
    if (++st.batch_count == st.every) {
      packet p;
      p.from = id;
      p.kind = dasgd_gradients;
      p.seq = st.steps;
      p.f = float_blob{std::move(st.batch)};
      p.scalars = {static_cast<double>(st.batch_count)};
      st.batch = {};
      st.batch_count = 0;
      st.out.broadcast(self, ctx, std::move(p));
    }
  }
  begin_cycle(self, ctx);
}

/// A well-formed gradient packet from another node (count checked too).
[[nodiscard]] bool well_formed(const dasgd_state& st, std::uint32_t id, const packet& p) {
  const std::size_t dim = st.x.size();
  if (p.kind != dasgd_gradients || p.from >= st.n || p.from == id || p.f.size() != dim ||
      !p.d.empty() || p.scalars.size() != 1 || !vec::all_finite(p.f.ptr(), dim))
    return false;
  const double c = p.scalars[0];
  return c >= 1 && c <= max_packet_gradients && c == std::floor(c) &&
         static_cast<std::uint64_t>(c) <= p.seq;
}

void deliver(dasgd_ptr self, run_context& ctx, std::uint32_t id, const packet& p) {
  auto& st = self->state;
  ctx.events.record(ctx.ns(self), id, event_kind::receive, p.from, p.seq);
  if (!well_formed(st, id, p))
    return gossip::reject(self, ctx, st, id, p);
  if (st.dedup.seen(p.from, p.kind, p.seq))
    return;  // a duplicate (retransmitted, or duplicated by the link)
  const auto first = p.seq - static_cast<std::uint64_t>(p.scalars[0]) + 1;
  for (auto s = first; s < p.seq; ++s)
    if (st.dedup.seen(p.from, p.kind, s))
      return gossip::reject(self, ctx, st, id, p);  // overlaps gradients already here
  for (auto s = first; s <= p.seq; ++s)
    static_cast<void>(st.dedup.first_time(p.from, p.kind, s));
  st.inbox.push_back(p);
}

caf::behavior dasgd_worker(dasgd_ptr self, std::uint32_t id, context_ptr ctx,
                           std::shared_ptr<creation_record> created) {
  const auto& plan = *ctx->plan;
  const auto& algo = plan.spec.algorithm().dasgd();
  auto& st = self->state;
  st.cu.emplace(*ctx, id);
  st.x = plan.x0;
  st.n = static_cast<std::uint32_t>(plan.nodes());
  st.created = std::move(created);
  st.gamma = algo.step_size();
  st.decay = algo.decay();
  st.every = std::max<std::uint32_t>(1, algo.broadcast_every());
  st.record = ctx->probe != nullptr;
  if (ctx->probe) {
    ctx->probe->models.at(id) = &st.x;
    self->attach_functor([probe = ctx->probe, id] { probe->models.at(id) = nullptr; });
  }
  return {
    [=](init_atom, const std::vector<caf::actor>& routes) {
      // routes: to every other node in increasing id order
      auto& st = self->state;
      for (std::uint32_t j = 0, k = 0; j < st.n; ++j)
        if (j != id)
          st.out.routes.emplace_back(j, routes.at(k++));
    },
    [=](start_atom) { begin_cycle(self, *ctx); },
    [=](wake_atom, std::uint64_t step) {
      ctx->events.record(ctx->ns(self), id, event_kind::wake, step);
      wake(self, *ctx, id);
    },
    [=](deliver_atom, const packet& p) { deliver(self, *ctx, id, p); },
    [=](model_atom) { return gossip::snapshot(self->state, id); },
    [=](stats_atom) { return gossip::stats(self->state); },
  };
}

} // namespace

dasgd_ledger dasgd_take_ledger(const caf::actor_addr& worker) {
  return gossip::take_from_worker(worker, &dasgd_state::ledger);
}

node_actors spawn_dasgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                             std::uint32_t i) {
  std::shared_ptr<creation_record> created;
  if (!ctx->spans_processes)
    created = process_shared<creation_record>(*ctx, "dasgd.created", [&] {
      return std::make_shared<creation_record>(ctx->plan->nodes());
    });
  node_actors node;
  node.worker = parent->spawn(dasgd_worker, i, ctx, std::move(created));
  node.buffer = node.worker;  // answers stats_atom with its rejected count
  return node;
}

void wire_dasgd(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, std::vector<caf::actor>& links) {
  const auto n = static_cast<std::uint32_t>(nodes.size());
  const auto workers = workers_of(nodes);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t j = 0; j < n; ++j)
      if (j != i)
        edges.emplace_back(i, j);
  network net{sup, ctx, edges, workers, links};
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<caf::actor> routes;
    for (std::uint32_t j = 0; j < n; ++j)
      if (j != i)
        routes.push_back(net.route(i, j));
    sup->send(workers[i], init_atom::value, std::move(routes));
  }
  // Every worker knows its routes before any starts (real clock: an early
  // starter may already send to one not yet started).
  for (const auto& w : workers)
    sup->send(w, start_atom::value);
}

} // namespace atrain
