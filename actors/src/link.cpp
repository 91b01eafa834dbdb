/// The link actor of one directed edge, the route table, and the outbox.
#include <map>

#include "atrain/actors/network.hpp"
#include "atrain/kernels/rng.hpp"

namespace atrain {

bool link_is_active(const proto::LinkModel& m) {
  return m.latency_seconds() > 0 || m.bandwidth_bytes_per_second() > 0 || m.loss() > 0 ||
         m.duplicate() > 0 || m.reorder() > 0;
}

namespace {

struct link_state {
  link_stats stats;
  rng gen;
  caf::actor dest;
  proto::LinkModel model;
  double busy_until = 0;  // run seconds when the wire is free again
  /// Packets waiting for a busy wire: depth one per stream, newest wins
  /// (ALGORITHMS.md §1: a FIFO on a bandwidth-bound link makes R-FAST fall
  /// behind its own packets).
  std::map<std::uint32_t, packet> waiting;
  bool release_armed = false;
  static inline const char* name = "atrain_link";
};

using link_actor_ptr = caf::stateful_actor<link_state>*;

void forward(link_actor_ptr self, run_context& ctx, packet p) {
  auto& st = self->state;
  const double now = ctx.seconds(self);
  const double tx = st.model.bandwidth_bytes_per_second() > 0
                        ? static_cast<double>(p.bytes()) / st.model.bandwidth_bytes_per_second()
                        : 0.0;
  st.busy_until = now + tx;
  // A fixed number of draws per packet keeps the generator's stream aligned.
  const double extra = st.gen.chance(st.model.reorder())
                           ? st.gen.uniform() * st.model.reorder_delay_seconds()
                           : 0.0;
  const bool twice = st.gen.chance(st.model.duplicate());
  const double extra2 = st.gen.uniform() * st.model.reorder_delay_seconds();
  const double delay = tx + st.model.latency_seconds() + extra;
  ++st.stats.forwarded;
  if (twice) {
    ++st.stats.duplicated;
    ctx.events.record(ctx.ns(self), p.from, event_kind::duplicate, p.to, p.seq);
    send_after(self, st.dest, tx + st.model.latency_seconds() + extra2, deliver_atom::value, p);
  }
  send_after(self, st.dest, delay, deliver_atom::value, std::move(p));
}

void arm_release(link_actor_ptr self, run_context& ctx) {
  auto& st = self->state;
  if (st.release_armed || st.waiting.empty())
    return;
  st.release_armed = true;
  send_after(self, caf::actor_cast<caf::actor>(self), st.busy_until - ctx.seconds(self),
             release_atom::value);
}

caf::behavior link_actor(link_actor_ptr self, std::uint32_t from, std::uint32_t to,
                         caf::actor dest, context_ptr ctx) {
  auto& st = self->state;
  st.stats.from = from;
  st.stats.to = to;
  st.dest = std::move(dest);
  st.model = ctx->plan->spec.link();
  st.gen.reseed(derive_seed(ctx->plan->spec.seed(), 0x4c494e4bULL + (std::uint64_t{from} << 20) + to));
  return {
    [=](deliver_atom, packet& p) {
      auto& st = self->state;
      if (st.gen.chance(st.model.loss())) {
        ++st.stats.dropped;
        ctx->events.record(ctx->ns(self), p.from, event_kind::drop, p.to, p.seq);
        return;
      }
      if (ctx->seconds(self) < st.busy_until) {
        auto [it, fresh] = st.waiting.try_emplace(p.kind);
        if (!fresh) {
          ++st.stats.replaced;
          ctx->events.record(ctx->ns(self), p.from, event_kind::replace, p.to, it->second.seq);
        }
        it->second = std::move(p);
        arm_release(self, *ctx);
        return;
      }
      forward(self, *ctx, std::move(p));
    },
    [=](release_atom) {
      auto& st = self->state;
      st.release_armed = false;
      if (st.waiting.empty())
        return;
      auto first = st.waiting.begin();
      auto p = std::move(first->second);
      st.waiting.erase(first);
      forward(self, *ctx, std::move(p));
      arm_release(self, *ctx);
    },
    [=](stats_atom) { return self->state.stats; },
  };
}

} // namespace

network::network(caf::event_based_actor* sup, const context_ptr& ctx,
                 const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges,
                 const std::vector<caf::actor>& receivers, std::vector<caf::actor>& links_out) {
  const bool active = link_is_active(ctx->plan->spec.link());
  for (const auto& [from, to] : edges) {
    if (routes_.count({from, to}) > 0)
      continue;
    if (!active) {
      routes_[{from, to}] = receivers.at(to);
      continue;
    }
    auto link = sup->spawn(link_actor, from, to, receivers.at(to), ctx);
    links_out.push_back(link);
    routes_[{from, to}] = link;
  }
}

caf::actor network::route(std::uint32_t from, std::uint32_t to) const {
  return routes_.at({from, to});
}

void outbox::broadcast(caf::event_based_actor* self, run_context& ctx, packet p) {
  for (const auto& [node, handle] : routes) {
    p.to = node;
    ++messages;
    bytes += p.bytes();
    ctx.events.record(ctx.ns(self), p.from, event_kind::send, node, p.seq);
    self->send(handle, deliver_atom::value, p);
  }
}

model_snapshot make_snapshot(std::uint32_t node, const compute_unit& cu, const outbox& out,
                             const staleness_stats& staleness, const std::vector<float>& x) {
  model_snapshot s;
  s.node = node;
  s.gradients = cu.gradients();
  s.messages_sent = out.messages;
  s.bytes_sent = out.bytes;
  s.staleness_sum = staleness.sum;
  s.staleness_max = staleness.max;
  s.staleness_count = staleness.count;
  s.params = float_blob{x};
  return s;
}

} // namespace atrain
