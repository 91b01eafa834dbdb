/// DASGD: decentralized asynchronous SGD (docs/ALGORITHMS.md §2, cycle, packets
/// and staleness). This file: the worker's training cycle, spawning and wiring;
/// the restart hand-over is in dasgd_restart.cpp, checkpoints in dasgd_checkpoint.cpp.
#include "algorithms/dasgd/dasgd.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/blob_checks.hpp"
#include "atrain/actors/exceptions.hpp"

#include <algorithm>
#include <cmath>

#include "algorithms/dasgd/dasgd_internal.hpp"
#include "algorithms/gossip/gossip.hpp"
#include "atrain/actors/checkpoint.hpp"

namespace atrain {

namespace dasgd_detail {

namespace {

/// Largest gradient count one packet may claim (a hostile count must not
/// make the receiver loop for ever).
constexpr double max_packet_gradients = 1 << 24;

/// Shortest wait between two gradients of one node (run-clock seconds): a
/// zero wait would be a plain send to itself, and CAF keeps running an actor
/// whose mailbox never empties (the real clock would starve other actors).
constexpr double min_wait = 1e-6;

/// Bookkeeping of one gradient (origin, index) applied at `now_ns`.
void note_applied(dasgd_state& st, std::uint32_t origin, std::uint64_t index, std::int64_t now_ns) {
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

/// Step 1 for one remote packet: x_i -= u, every gradient inside noted.
void apply_packet(dasgd_state& st, const packet& p, std::int64_t now_ns) {
  vec::axpy(-1.0f, p.f.ptr(), st.x.data(), st.x.size());
  const auto count = static_cast<std::uint64_t>(p.scalars[0]);
  for (std::uint64_t s = p.seq - count + 1; s <= p.seq; ++s)
    note_applied(st, p.from, s, now_ns);
  if (st.record)
    ++st.ledger.packets_applied;
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
  const double wait = std::max(st.cu->gradient(self, st.x.data(), st.g), min_wait);
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  self->delayed_send(caf::actor_cast<dasgd_worker_actor>(self), to_timespan(wait), wake_atom::value,
                     st.steps);
}

void wake(dasgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  const std::int64_t now = ctx.ns(self);
  const std::size_t dim = st.x.size();
  for (const auto& p : st.inbox)  // 1
    apply_packet(st, p, now);
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
  if (st.n > 1) {  // 3
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
      if (st.fence_next)  // the first packet after a restart fence: merged into nothing earlier
        p.scalars.push_back(1);
      st.fence_next = false;
      st.batch = {};
      st.batch_count = 0;
      st.out.broadcast(self, ctx, std::move(p));
    }
  }
  if (!st.hold.stop_here())  // (a checkpoint holds here)
    begin_cycle(self, ctx);
}

/// A well-formed gradient packet (count and fence mark checked too): from
/// another node, or relayed by a restart donor (then also one of this
/// node's own dead incarnation's).
[[nodiscard]] bool well_formed(const dasgd_state& st, std::uint32_t id, const packet& p) {
  const std::size_t dim = st.x.size();
  if ((p.kind != dasgd_gradients && p.kind != dasgd_relayed) || p.from >= st.n ||
      (p.from == id && p.kind != dasgd_relayed) || p.f.size() != dim || !p.d.empty() ||
      p.scalars.empty() || p.scalars.size() > 2 || (p.scalars.size() == 2 && p.scalars[1] != 1) ||
      !all_finite(p.f))
    return false;
  const double c = p.scalars[0];
  return c >= 1 && c <= max_packet_gradients && c == std::floor(c) &&
         static_cast<std::uint64_t>(c) <= p.seq;
}

void deliver(dasgd_ptr self, run_context& ctx, std::uint32_t id, const packet& coded) {
  auto& st = self->state;
  ctx.events.record(ctx.ns(self), id, event_kind::receive, coded.from, coded.seq);
  const auto opened = open_values(coded, st.x.size());  // link.codec
  if (!opened)
    return gossip::reject(self, ctx, st, id, coded);
  const packet& p = *opened;
  if (!well_formed(st, id, p) || from_the_future(p.seq, st.seq_rate, ctx.seconds(self)))
    return gossip::reject(self, ctx, st, id, p);
  const auto first = first_of(p);
  // A replacement: up to the origin's fence only relayed packets, above it
  // only direct ones; no range crosses a fence (the origin fenced its stream).
  const auto fence = st.fence.empty() ? 0 : st.fence[p.from];
  if (p.kind == dasgd_relayed) {
    if (p.seq > fence)
      return gossip::reject(self, ctx, st, id, p);  // nobody relays beyond a fence
  } else if (p.seq <= fence) {
    if (st.record)
      ++st.ledger.covered;
    return;  // handed to the link before the fence: the donor's side covers it
  } else if (first <= fence) {
    return gossip::reject(self, ctx, st, id, p);  // crosses the fence
  }
  if (st.dedup.seen(p.from, dasgd_gradients, p.seq))
    return;  // a duplicate (retransmitted, or duplicated by the link)
  for (auto s = first; s < p.seq; ++s)
    if (st.dedup.seen(p.from, dasgd_gradients, s))
      return gossip::reject(self, ctx, st, id, p);  // overlaps gradients already here
  for (auto s = first; s <= p.seq; ++s)
    static_cast<void>(st.dedup.first_time(p.from, dasgd_gradients, s));
  st.highest[p.from] = std::max(st.highest[p.from], p.seq);
  relay_to_replacements(self, ctx, id, p);
  if (st.hold.held)
    return apply_packet(st, p, ctx.ns(self));  // no gradient in flight: the next read sees it
  st.inbox.push_back(p);
}

/// Node `id`'s worker; a replacement (`joining`, after a crash) keeps every
/// message until the supervisor starts it with a donor's state.
dasgd_worker_actor::behavior_type dasgd_worker(dasgd_ptr self, std::uint32_t id, context_ptr ctx,
                                               std::shared_ptr<creation_record> created,
                                               bool joining) {
  name_exceptions(self);
  const auto& plan = *ctx->plan;
  const auto& algo = plan.config<dasgd_config>();
  auto& st = self->state;
  st.cu.emplace(*ctx, id);
  st.seq_rate = future_seq_rate(plan);
  st.x = plan.x0;
  st.n = static_cast<std::uint32_t>(plan.nodes());
  st.created = std::move(created);
  st.gamma = algo.step_size;
  st.decay = algo.decay;
  st.every = algo.broadcast_every;
  st.record = ctx->probe != nullptr;
  st.highest.assign(st.n, 0);
  st.lost.resize(st.n);
  st.out.coder = coder_for(plan);                                  // link.codec
  const auto* saved = joining ? nullptr : resumed_node(*ctx, id);  // a replacement joins
  if (saved)
    restore_dasgd(st, id, *saved);
  auto show_model = [self, ctx, id] {
    run_probe::show_model(ctx->probe, self, id, &self->state.x);
  };
  if (!joining)
    show_model();
  auto running = compose<dasgd_worker_actor::behavior_type>(
    [=](init_atom, const std::vector<caf::actor>& routes) {
      // routes: to every other node in increasing id order
      auto& st = self->state;
      for (std::uint32_t j = 0, k = 0; j < st.n; ++j)
        if (j != id)
          st.out.routes.emplace_back(j, routes.at(k++));
    },
    [=](start_atom) {
      if (!saved)  // restored: holds until the supervisor's go
        begin_cycle(self, *ctx);
    },
    [=](wake_atom, std::uint64_t step) {
      ctx->events.record(ctx->ns(self), id, event_kind::wake, step);
      wake(self, *ctx, id);
    },
    [=](deliver_atom, const packet& p) { deliver(self, *ctx, id, p); },
    [=](model_atom) { return gossip::snapshot(self->state, id); },
    [=](stats_atom) { return gossip::stats(self->state); },
    // Node k is being restarted (its dead worker sent gradients up to
    // `sent`, made up to `made`): this node is its donor ...
    [=](restart_atom, std::uint32_t k, std::uint64_t sent, std::uint64_t made) {
      return donate(self, *ctx, id, k, sent, made);
    },
    // ... and relays up to these fences (per origin) ...
    [=](restart_atom, std::uint32_t k, std::vector<std::uint64_t> until) {
      relay_until(self, *ctx, id, k, std::move(until));
    },
    // ... or, not the donor, fences its own stream.
    [=](dasgd_fence_atom, std::uint32_t k, std::uint64_t sent, std::uint64_t made) {
      mark_lost(self->state, k, sent + 1, made);
      return fence_stream(self, *ctx, id, k);
    },
    // A replacement's join after it started (never sent twice): nothing.
    [](start_atom, const float_blob&, const dasgd_numbers&, const dasgd_numbers&,
       const std::vector<packet>&, std::uint64_t, const std::vector<caf::actor>&,
       const std::vector<std::uint64_t>&) {},
    checkpoint_handlers(
      self, [=] { begin_cycle(self, *ctx); }, [=] { return save_dasgd(self->state, id); }));
  if (!joining)
    return running;
  self->set_default_handler(caf::skip);
  return waiting_for<dasgd_worker_actor>(
    [=](start_atom, const float_blob& x, const dasgd_numbers& record, const dasgd_numbers& lost,
        const std::vector<packet>& inbox, std::uint64_t made, const std::vector<caf::actor>& routes,
        const std::vector<std::uint64_t>& fence) mutable {
      adopt(self, x, record, lost, inbox, made, fence);
      auto& st = self->state;
      for (std::uint32_t j = 0, r = 0; j < st.n; ++j)
        if (j != id)
          st.out.routes.emplace_back(j, routes.at(r++));
      self->set_default_handler(caf::print_and_drop);
      self->become(std::move(running));
      show_model();
      begin_cycle(self, *ctx);
    });
}

}  // namespace

// The run's creation record in this process (declared in dasgd_internal.hpp).
[[nodiscard]] std::shared_ptr<creation_record> shared_record(const context_ptr& ctx) {
  if (ctx->spans_processes)
    return nullptr;
  return process_shared<creation_record>(
    *ctx, "dasgd.created", [&] { return std::make_shared<creation_record>(ctx->plan->nodes()); });
}

}  // namespace dasgd_detail

dasgd_ledger dasgd_take_ledger(const caf::actor_addr& worker) {
  return gossip::take_from_worker<dasgd_worker_actor>(worker, &dasgd_detail::dasgd_state::ledger);
}

node_actors spawn_dasgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                             std::uint32_t i) {
  node_actors node;
  node.worker = caf::actor_cast<caf::actor>(
    parent->spawn(dasgd_detail::dasgd_worker, i, ctx, dasgd_detail::shared_record(ctx), false));
  node.buffer = node.worker;  // answers stats_atom with its rejected count
  return node;
}

caf::actor spawn_dasgd_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                   std::uint32_t k) {
  return caf::actor_cast<caf::actor>(
    sup->spawn(dasgd_detail::dasgd_worker, k, ctx, dasgd_detail::shared_record(ctx), true));
}

void wire_dasgd(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, link_list& links) {
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
    nodes[i].worker_routes = routes;  // for a replacement
    sup->send(caf::actor_cast<dasgd_worker_actor>(workers[i]), init_atom::value, std::move(routes));
  }
  // Every worker knows its routes before any starts (real clock: an early
  // starter may already send to one not yet started).
  for (const auto& w : workers)
    sup->send(caf::actor_cast<dasgd_worker_actor>(w), start_atom::value);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
algorithm_descriptor dasgd_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kDasgd;
  d.node_part = proto::NodeState::kDasgd;
  d.name = "dasgd";
  d.check_block = dasgd_check_block;
  d.parse = dasgd_parse_block;
  d.spawn_node = spawn_dasgd_node;
  d.wire = wire_dasgd;
  d.spawn_replacement = ignoring_incarnation<spawn_dasgd_replacement>;
  d.joins = "a joining node takes a live neighbour's model with the record of the gradients in "
            "it, as a restarted one does: every gradient is applied once at every node";
  d.join = join_dasgd_worker;
  d.check_checkpoint = dasgd_check_checkpoint;
  d.links.outbox_sums = true;
  d.links.coalesces = [](const algorithm_config& c) { return config_as<dasgd_config>(c).coalesce; };
  d.links.coding = values_coding;
  return d;
}

}  // namespace atrain
