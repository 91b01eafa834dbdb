/// The link actor of one directed edge, the route table, and the outbox.
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/exceptions.hpp"
#include "atrain/actors/link_codec.hpp"
#include "atrain/actors/network.hpp"
#include "atrain/kernels/rng.hpp"

namespace atrain {

bool links_are_acknowledged(const run_plan& plan) {
  return plan.algorithm().links.acknowledged;
}

bool links_follow_restarts(const run_plan& plan) {
  if (!plan.algorithm().links.follow_restarts)
    return false;  // they end at the gradient buffers, which a restart keeps
  for (const auto& c : plan.crashes)
    if (c.restart_after_seconds)
      return true;
  return false;
}

bool run_context::may_flow_control() const {
  return spans_processes || plan->link.window > 0;
}

double run_context::departure_wait(std::uint32_t node, double now) const {
  const double cost = plan->cost.message_seconds;
  if (!(cost > 0) || !plan->virtual_clock())
    return 0;
  if (node >= departs_at_.size())
    departs_at_.resize(node + 1, 0.0);
  auto& at = departs_at_[node];
  at = std::max(at, now) + cost;
  return at - now;
}

bool links_emulated(const run_plan& plan) {
  return plan.link.active() || plan.faults.touches_links() || links_follow_restarts(plan) ||
         (plan.virtual_clock() && plan.cost.message_seconds > 0);  // the links hold packets
}

double future_seq_rate(const run_plan& plan) {
  const auto& c = plan.cost;
  double tau = c.tau_seconds > 0 ? c.tau_seconds : 1.0;
  for (double t : c.tau_per_node)
    tau = std::min(tau, t);
  const double shortest = tau * (1.0 - c.jitter);
  return 4.0 * std::max(1e6, shortest > 0 ? 1.0 / shortest : 1e6);
}

bool exactly_once::first_time(std::uint32_t from, std::uint32_t kind, std::uint64_t seq) {
  auto& s = seen_[{from, kind}];
  if (seq == 0)
    return !std::exchange(s.zero_seen, true);
  if (seq < s.below || !s.above.insert(seq).second)
    return false;
  // Compact: a contiguous run from `below` needs no entries.
  while (!s.above.empty() && *s.above.begin() == s.below) {
    s.above.erase(s.above.begin());
    ++s.below;
  }
  return true;
}

std::uint64_t exactly_once::first_unseen(std::uint32_t from, std::uint32_t kind) const {
  auto it = seen_.find({from, kind});
  return it == seen_.end() ? 1 : it->second.below;
}

bool exactly_once::seen(std::uint32_t from, std::uint32_t kind, std::uint64_t seq) const {
  auto it = seen_.find({from, kind});
  if (it == seen_.end())
    return false;
  const auto& s = it->second;
  return seq == 0 ? s.zero_seen : seq < s.below || s.above.count(seq) > 0;
}

namespace {

/// A packet an acknowledged link has sent and not yet seen acknowledged.
struct unacked {
  packet p;
  std::uint64_t attempt = 0;
};

struct link_state {
  link_stats stats;
  rng gen;
  packet_sink dest;
  link_settings model;
  bool acknowledged = false;
  bool coalesce = false;
  double busy_until = 0;  // run seconds when the wire is free again
  /// Fire-and-forget: packets waiting for a busy wire, depth one per stream,
  /// newest wins (link_policy::acknowledged false: only the newest running
  /// sum matters, and a FIFO on a bandwidth-bound link would fall behind).
  std::map<std::uint32_t, packet> waiting;
  /// Acknowledged: every packet must arrive, so the wire queue is a FIFO of
  /// link-local ids, and `outstanding` holds each until its ack returns.
  std::deque<std::uint64_t> queue;
  std::map<std::uint64_t, unacked> outstanding;
  std::uint64_t next_id = 0;
  bool release_armed = false;
  /// The highest seq accepted from the sender, if any (a restart asks).
  bool accepted_any = false;
  std::uint64_t highest_seq = 0;
  /// Checkpoints: the run time of the last delivery or ack scheduled, and
  /// of the latest retransmission timer (the drain waits for both).
  double quiet_at = 0;
  double resend_at = 0;
  /// link_policy::replay_on_restart: the last packet put on the wire,
  /// handed again to a replacement (see the restart handler).
  bool replay_on_restart = false;
  std::optional<packet> last_sent;
  /// link.window (a virtual twin of a run across processes): the senders'
  /// requests, answered one round trip after they came.
  std::map<std::uint64_t, caf::response_promise> answers;
  std::uint64_t next_answer = 0;
  static inline const char* name = "atrain_link";
};

using link_actor_ptr = link_actor::stateful_pointer<link_state>;

/// A packet survives the link's own loss and the active bursts independently.
[[nodiscard]] double combined_loss(double base, double burst) {
  return 1 - (1 - base) * (1 - burst);
}

[[nodiscard]] double transmission_seconds(const link_state& st, const packet& p) {
  return st.model.bandwidth_bytes_per_second > 0
           ? static_cast<double>(p.bytes()) / st.model.bandwidth_bytes_per_second
           : 0.0;
}

/// Puts `p` on the wire: it arrives after transmission + latency (+ a
/// reordering delay, + a delay spike), perhaps twice. Returns the arrival
/// delay.
double transmit(link_actor_ptr self, run_context& ctx, const packet& p, double extra_latency) {
  auto& st = self->state;
  const double tx = transmission_seconds(st, p);
  st.busy_until = ctx.seconds(self) + tx;
  // A fixed number of draws per packet keeps the generator's stream aligned.
  const double extra =
    st.gen.chance(st.model.reorder) ? st.gen.uniform() * st.model.reorder_delay_seconds : 0.0;
  const bool twice = st.gen.chance(st.model.duplicate);
  const double extra2 = st.gen.uniform() * st.model.reorder_delay_seconds;
  const double latency = st.model.latency_seconds + extra_latency;
  const double delay = tx + latency + extra;
  ++st.stats.forwarded;
  const double now = ctx.seconds(self);
  st.quiet_at = std::max(st.quiet_at, now + delay);
  if (st.replay_on_restart)
    st.last_sent = p;
  if (twice) {
    ++st.stats.duplicated;
    ctx.events.record(ctx.ns(self), p.from, event_kind::duplicate, p.to, p.seq);
    send_after(self, st.dest, tx + latency + extra2, deliver_atom::value, p);
    st.quiet_at = std::max(st.quiet_at, now + tx + latency + extra2);
  }
  send_after(self, st.dest, delay, deliver_atom::value, p);
  return delay;
}

void arm_release(link_actor_ptr self, run_context& ctx) {
  auto& st = self->state;
  if (st.release_armed || (st.waiting.empty() && st.queue.empty()))
    return;
  st.release_armed = true;
  send_after(self, caf::actor_cast<link_actor>(self), st.busy_until - ctx.seconds(self),
             release_atom::value);
}

// ---- acknowledged links: a reliable transport over the lossy wire

[[nodiscard]] double retransmit_timeout(const link_state& st, const packet& p,
                                        double extra_latency) {
  if (st.model.retransmit_seconds)
    return *st.model.retransmit_seconds;
  const double rto = 2 * (st.model.latency_seconds + extra_latency) +
                     st.model.reorder_delay_seconds + 2 * transmission_seconds(st, p);
  return std::max(rto, 1e-3);
}

/// One attempt of packet `id`: the data may be lost, and so may its ack on
/// the way back (both drawn here, in a fixed order); the retransmission
/// timer is armed either way.
void attempt(link_actor_ptr self, run_context& ctx, std::uint64_t id) {
  auto& st = self->state;
  auto& u = st.outstanding.at(id);
  ++u.attempt;
  const double now = ctx.seconds(self);
  const auto& faults = ctx.plan->faults;
  const auto there = faults.link(st.stats.from, st.stats.to, now, &st.stats.fault_hits);
  const auto back = faults.link(st.stats.to, st.stats.from, now);
  const bool lost = st.gen.chance(combined_loss(st.model.loss, there.loss)) || there.cut;
  const bool ack_lost = st.gen.chance(combined_loss(st.model.loss, back.loss)) || back.cut;
  auto me = caf::actor_cast<link_actor>(self);
  if (lost) {
    st.busy_until = ctx.seconds(self) + transmission_seconds(st, u.p);
    ++st.stats.forwarded;
    ++st.stats.dropped;
    ctx.events.record(ctx.ns(self), u.p.from, event_kind::drop, u.p.to, u.p.seq);
  } else {
    const double arrival = transmit(self, ctx, u.p, there.extra_latency);
    if (!ack_lost) {
      const double back_in = arrival + st.model.latency_seconds + back.extra_latency;
      send_after(self, me, back_in, ack_atom::value, id);
      st.quiet_at = std::max(st.quiet_at, now + back_in);
    }
  }
  const double rto = retransmit_timeout(st, u.p, there.extra_latency);
  send_after(self, me, rto, resend_atom::value, id, u.attempt);
  st.resend_at = std::max(st.resend_at, now + rto);
}

/// Queues packet `id` for the wire, or sends it now when the wire is free.
void enqueue(link_actor_ptr self, run_context& ctx, std::uint64_t id) {
  auto& st = self->state;
  if (ctx.seconds(self) < st.busy_until || !st.queue.empty()) {
    st.queue.push_back(id);
    arm_release(self, ctx);
    return;
  }
  attempt(self, ctx, id);
}

/// Ranges of summed packets (seq = newest number, scalars[0] = count): `p` continues
/// `into`'s range, same origin — only then is their sum a range again (a
/// relayed packet, or one after a restart's gap, is not).
[[nodiscard]] bool continues(const packet& into, const packet& p) {
  return into.from == p.from && !p.scalars.empty() &&
         p.seq == into.seq + static_cast<std::uint64_t>(p.scalars[0]);
}

/// Coalescing (link_policy::coalesces): a packet of the same stream still waiting for the
/// wire absorbs `p` — payloads are summed, the newest sequence number kept.
[[nodiscard]] bool coalesce_into_queue(link_actor_ptr self, run_context& ctx, packet& p) {
  auto& st = self->state;
  for (auto it = st.queue.rbegin(); it != st.queue.rend(); ++it) {
    auto& u = st.outstanding.at(*it);
    if (u.attempt > 0 || u.p.kind != p.kind)
      continue;
    if (!continues(u.p, p))
      return false;
    const auto seq = u.p.seq;
    if (!sum_into(u.p, p))
      return false;
    ctx.events.record(ctx.ns(self), p.from, event_kind::coalesce, seq, p.seq);
    ++st.stats.coalesced;
    return true;
  }
  return false;
}

void accept_acknowledged(link_actor_ptr self, run_context& ctx, packet& p) {
  auto& st = self->state;
  if (st.coalesce && !st.queue.empty() && coalesce_into_queue(self, ctx, p))
    return;
  const auto id = ++st.next_id;
  st.outstanding.emplace(id, unacked{std::move(p), 0});
  enqueue(self, ctx, id);
}

// ---- fire-and-forget links

void accept_unacknowledged(link_actor_ptr self, run_context& ctx, packet& p) {
  auto& st = self->state;
  const auto fx =
    ctx.plan->faults.link(st.stats.from, st.stats.to, ctx.seconds(self), &st.stats.fault_hits);
  // One draw per packet whatever the faults, so the stream stays aligned.
  if (st.gen.chance(combined_loss(st.model.loss, fx.loss)) || fx.cut) {
    ++st.stats.dropped;
    ctx.events.record(ctx.ns(self), p.from, event_kind::drop, p.to, p.seq);
    return;
  }
  if (ctx.seconds(self) < st.busy_until) {
    auto [it, fresh] = st.waiting.try_emplace(p.kind);
    if (!fresh) {
      ++st.stats.replaced;
      ctx.events.record(ctx.ns(self), p.from, event_kind::replace, p.to, it->second.seq);
    }
    it->second = std::move(p);
    arm_release(self, ctx);
    return;
  }
  transmit(self, ctx, p, fx.extra_latency);
}

/// A packet put on this link (now, or after its wait to leave the sender).
void accept(link_actor_ptr self, run_context& ctx, packet& p) {
  if (self->state.acknowledged)
    accept_acknowledged(self, ctx, p);
  else
    accept_unacknowledged(self, ctx, p);
}

// ---- checkpoints

/// < 0 when nothing waits, is unacknowledged or is still on the wire;
/// otherwise how long at least until it may be.
[[nodiscard]] double link_busy_for(const link_state& st, double now) {
  if (st.waiting.empty() && st.queue.empty() && st.outstanding.empty() && st.quiet_at <= now)
    return -1;
  double until = st.quiet_at;
  if (!st.waiting.empty() || !st.queue.empty())
    until = std::max(until, st.busy_until);
  if (!st.outstanding.empty())
    until = std::max(until, st.resend_at);
  return std::max(0.0, until - now);
}

[[nodiscard]] std::string save_link(const link_state& st) {
  proto::LinkState s;
  s.set_from(st.stats.from);
  s.set_to(st.stats.to);
  save_rng(st.gen, s.mutable_rng());
  s.set_busy_until(st.busy_until);
  s.set_next_id(st.next_id);
  s.set_forwarded(st.stats.forwarded);
  s.set_dropped(st.stats.dropped);
  s.set_duplicated(st.stats.duplicated);
  s.set_replaced(st.stats.replaced);
  s.set_retransmitted(st.stats.retransmitted);
  s.set_coalesced(st.stats.coalesced);
  *s.mutable_fault_hits() = {st.stats.fault_hits.begin(), st.stats.fault_hits.end()};
  s.set_accepted_any(st.accepted_any);
  s.set_highest_seq(st.highest_seq);
  if (st.last_sent) {
    const auto& p = *st.last_sent;
    auto* out = s.mutable_last_sent();
    out->set_from(p.from);
    out->set_to(p.to);
    out->set_kind(p.kind);
    out->set_seq(p.seq);
    *out->mutable_f() = {p.f.ptr(), p.f.ptr() + p.f.size()};
    *out->mutable_d() = {p.d.ptr(), p.d.ptr() + p.d.size()};
    *out->mutable_scalars() = {p.scalars.begin(), p.scalars.end()};
    out->set_epoch(p.epoch);
  }
  return s.SerializeAsString();
}

/// A resumed run: the link from -> to as the checkpoint saved it (drained).
void restore_link(link_state& st, const proto::Checkpoint& ck) {
  for (const auto& s : ck.links()) {
    if (s.from() != st.stats.from || s.to() != st.stats.to)
      continue;
    st.gen = load_rng(s.rng());
    st.busy_until = s.busy_until();
    st.next_id = s.next_id();
    st.stats.forwarded = s.forwarded();
    st.stats.dropped = s.dropped();
    st.stats.duplicated = s.duplicated();
    st.stats.replaced = s.replaced();
    st.stats.retransmitted = s.retransmitted();
    st.stats.coalesced = s.coalesced();
    st.stats.fault_hits.assign(s.fault_hits().begin(), s.fault_hits().end());
    st.accepted_any = s.accepted_any();
    st.highest_seq = s.highest_seq();
    if (s.has_last_sent()) {
      const auto& in = s.last_sent();
      packet p;
      p.from = in.from();
      p.to = in.to();
      p.kind = in.kind();
      p.seq = in.seq();
      if (in.f_size() > 0)
        p.f = float_blob{std::vector<float>(in.f().begin(), in.f().end())};
      if (in.d_size() > 0)
        p.d = double_blob{std::vector<double>(in.d().begin(), in.d().end())};
      p.scalars.assign(in.scalars().begin(), in.scalars().end());
      p.epoch = in.epoch();
      st.last_sent = std::move(p);
    }
    return;
  }
}

/// link.window: a sender's request is answered 2 x latency + transmission
/// later (after `hold`, the packet's wait to leave its sender), as the
/// receiver's answer would come back across processes (the measured round
/// trip is what `atrain calibrate` turns into the latency).
void answer_later(link_actor_ptr self, const packet& p, double hold) {
  auto& st = self->state;
  const auto* el = self->current_mailbox_element();
  if (el == nullptr || !el->mid.is_request())
    return;  // relayed, or not from a flow-controlled outbox
  const auto id = st.next_answer++;
  st.answers.emplace(id, self->make_response_promise());
  const double trip = hold + 2 * st.model.latency_seconds + transmission_seconds(st, p);
  send_after(self, caf::actor_cast<link_actor>(self), trip, answer_atom::value, id);
}

link_actor::behavior_type link_impl(link_actor_ptr self, std::uint32_t from, std::uint32_t to,
                                    caf::actor dest, context_ptr ctx) {
  name_exceptions(self);
  auto& st = self->state;
  st.stats.from = from;
  st.stats.to = to;
  st.dest = caf::actor_cast<packet_sink>(std::move(dest));
  st.model = ctx->plan->link;
  st.acknowledged = links_are_acknowledged(*ctx->plan);
  const auto& policy = ctx->plan->algorithm().links;
  st.coalesce = policy.coalesces && policy.coalesces(*ctx->plan->algo_config);
  st.replay_on_restart = policy.replay_on_restart && links_follow_restarts(*ctx->plan);
  st.gen.reseed(derive_seed(ctx->plan->seed, 0x4c494e4bULL + (std::uint64_t{from} << 20) + to));
  if (ctx->resume)
    restore_link(st, *ctx->resume);
  return {
    [=](deliver_atom, packet& p) {
      auto& st = self->state;
      // cost.message_seconds: the packet waits for its sender to code those before it.
      const double now = ctx->seconds(self);
      const double hold = ctx->departure_wait(st.stats.from, now);
      if (st.model.window > 0)
        answer_later(self, p, hold);
      if (p.from == st.stats.from) {  // not a packet it relays for another node
        st.highest_seq = st.accepted_any ? std::max(st.highest_seq, p.seq) : p.seq;
        st.accepted_any = true;
      }
      if (hold > 0) {
        st.quiet_at = std::max(st.quiet_at, now + hold);  // a checkpoint's drain waits for it
        send_after(self, caf::actor_cast<link_actor>(self), hold, depart_atom::value, std::move(p));
        return;
      }
      accept(self, *ctx, p);
    },
    [=](depart_atom, packet& p) { accept(self, *ctx, p); },
    [=](release_atom) {
      auto& st = self->state;
      // Armed only while something waits, so nothing took the wire since.
      st.release_armed = false;
      if (!st.queue.empty()) {
        const auto id = st.queue.front();
        st.queue.pop_front();
        attempt(self, *ctx, id);
      } else if (!st.waiting.empty()) {
        auto first = st.waiting.begin();
        auto p = std::move(first->second);
        st.waiting.erase(first);
        const auto fx = ctx->plan->faults.link(st.stats.from, st.stats.to, ctx->seconds(self));
        transmit(self, *ctx, p, fx.extra_latency);
      }
      arm_release(self, *ctx);
    },
    [=](ack_atom, std::uint64_t id) {
      auto& st = self->state;
      auto it = st.outstanding.find(id);
      if (it == st.outstanding.end())
        return;  // an ack of an earlier attempt already arrived
      ctx->events.record(ctx->ns(self), it->second.p.from, event_kind::ack, it->second.p.to,
                         it->second.p.seq);
      st.outstanding.erase(it);
    },
    [=](resend_atom, std::uint64_t id, std::uint64_t attempt_no) {
      auto& st = self->state;
      auto it = st.outstanding.find(id);
      if (it == st.outstanding.end() || it->second.attempt != attempt_no)
        return;  // acknowledged meanwhile, or a newer attempt owns the timer
      ++st.stats.retransmitted;
      ctx->events.record(ctx->ns(self), it->second.p.from, event_kind::retransmit, it->second.p.to,
                         it->second.p.seq);
      enqueue(self, *ctx, id);
    },
    [=](answer_atom, std::uint64_t id) {
      auto& answers = self->state.answers;
      auto it = answers.find(id);
      if (it == answers.end())
        return;
      it->second.deliver(caf::unit);
      answers.erase(it);
    },
    [=](stats_atom) { return self->state.stats; },
    // A restarted worker replaces the crashed one: packets not yet on the
    // wire, and retransmissions, go to the new incarnation.
    //
    // replay_on_restart: the last packet this link delivered may have
    // reached the dead worker only. When the sender is down too, nobody
    // else holds it, and a replacement waiting for it would wait for ever;
    // so it gets it again (one it is past, or has, it ignores as a duplicate).
    [=](restart_atom, const caf::actor_addr& old, const caf::actor& replacement) {
      auto& st = self->state;
      if (st.dest.address() != old)
        return;
      st.dest = caf::actor_cast<packet_sink>(replacement);
      if (st.last_sent) {
        ++st.stats.retransmitted;
        ctx->events.record(ctx->ns(self), st.last_sent->from, event_kind::retransmit,
                           st.last_sent->to, st.last_sent->seq);
        self->send(st.dest, deliver_atom::value, *st.last_sent);
      }
    },
    // (sender node, whether it sent anything, the highest seq it sent).
    [=](resume_atom) {
      const auto& st = self->state;
      return std::make_tuple(st.stats.from, st.accepted_any, st.highest_seq);
    },
    [=](ckpt_drain_atom) { return link_busy_for(self->state, ctx->seconds(self)); },
    [=](ckpt_state_atom) { return save_link(self->state); },
  };
}

}  // namespace

network::network(caf::event_based_actor* sup, const context_ptr& ctx,
                 const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges,
                 const std::vector<caf::actor>& receivers, link_list& links_out) {
  const bool active = links_emulated(*ctx->plan);
  for (const auto& [from, to] : edges) {
    if (routes_.count({from, to}) > 0)
      continue;
    if (!active) {
      routes_[{from, to}] = receivers.at(to);
      continue;
    }
    auto link = sup->spawn(link_impl, from, to, receivers.at(to), ctx);
    routes_[{from, to}] = caf::actor_cast<caf::actor>(link);
    links_out.push_back(std::move(link));
  }
}

caf::actor network::route(std::uint32_t from, std::uint32_t to) const {
  return routes_.at({from, to});
}

void wire_star(caf::event_based_actor* sup, const context_ptr& ctx, link_list& links,
               std::uint32_t at, std::vector<node_actors>& nodes) {
  const auto& hub = nodes.at(at).hub;
  const auto workers = workers_of(nodes);
  const auto n = static_cast<std::uint32_t>(workers.size());
  std::vector<caf::actor> receivers = workers;
  receivers[at] = hub;  // i -> at ends at the hub; at -> i at worker i
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 0; i < n; ++i)
    if (i != at) {
      edges.emplace_back(i, at);
      edges.emplace_back(at, i);
    }
  network net{sup, ctx, edges, receivers, links};
  std::vector<caf::actor> to_workers(n);
  for (std::uint32_t i = 0; i < n; ++i)
    to_workers[i] = i == at ? workers[at] : net.route(at, i);
  sup->send(hub, init_atom::value, std::move(to_workers));
  for (std::uint32_t i = 0; i < n; ++i) {
    nodes[i].worker_routes = {i == at ? hub : net.route(i, at)};
    sup->send(workers[i], init_atom::value, nodes[i].worker_routes.front());
  }
  for (const auto& w : workers)
    sup->send(w, start_atom::value);
}

bool sum_into(packet& into, const packet& p) {
  if (!into.coded.empty() || !p.coded.empty())
    return false;  // coded bytes do not add up
  if (into.f.size() != p.f.size() || into.d.size() != p.d.size() ||
      into.scalars.size() != p.scalars.size())
    return false;
  std::vector<float> f = into.f.vec();
  for (std::size_t i = 0; i < f.size(); ++i)
    f[i] += p.f.ptr()[i];
  std::vector<double> d = into.d.vec();
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] += p.d.ptr()[i];
  for (std::size_t i = 0; i < p.scalars.size(); ++i)
    into.scalars[i] += p.scalars[i];
  into.f = float_blob{std::move(f)};
  into.d = double_blob{std::move(d)};
  into.seq = std::max(into.seq, p.seq);
  return true;
}

void outbox::count(caf::local_actor* self, run_context& ctx, std::size_t k, packet& p,
                   bool leaves) {
  const auto node = routes.at(k).first;
  p.to = node;
  ++messages;
  if (!coder)
    bytes += p.bytes();
  else if (leaves)
    encode(p);
  ctx.events.record(ctx.ns(self), p.from, event_kind::send, node, p.seq);
}

void outbox::encode(packet& p) {
  coder->encode(p);
  bytes += p.bytes();
}

bool outbox::slot_or_wait(run_context& ctx, std::size_t k, packet& p) {
  if (waiting.size() < routes.size())
    waiting.resize(routes.size());
  auto& w = waiting[k];
  ++w.traffic.sends;
  const std::size_t limit = ctx.plan->link.window > 0 ? ctx.plan->link.window : window;
  if (w.timer.unanswered() < limit)
    return true;
  const auto& policy = ctx.plan->algorithm().links;
  if (policy.newest_wins || policy.outbox_sums)
    for (auto it = w.queue.rbegin(); it != w.queue.rend(); ++it)
      if (it->kind == p.kind) {
        if (policy.newest_wins) {
          *it = std::move(p);  // newest wins
          ++w.traffic.merged;
          return false;
        }
        if (continues(*it, p) && sum_into(*it, p)) {
          ++w.traffic.merged;
          return false;
        }
        break;
      }
  w.queue.push_back(std::move(p));
  return false;
}

void outbox::reroute(std::vector<std::pair<std::uint32_t, caf::actor>> fresh) {
  for (std::size_t k = 0; k < waiting.size(); ++k) {
    auto& w = waiting[k];
    if (w.traffic.sends > 0) {
      auto t = std::exchange(w.traffic, {});
      t.to = routes.at(k).first;
      t.dropped += w.queue.size();
      t.round_trip_seconds = w.timer.srtt_seconds();
      past_wire.push_back(t);
    }
    w.queue.clear();
  }
  routes = std::move(fresh);
}

std::vector<route_traffic> outbox::wire_report() const {
  std::vector<route_traffic> out;
  auto add = [&out](const route_traffic& t) {
    auto it = std::find_if(out.begin(), out.end(), [&t](auto& o) { return o.to == t.to; });
    if (it == out.end())
      return out.push_back(t);
    it->sends += t.sends;
    it->packets += t.packets;
    it->bytes += t.bytes;
    it->merged += t.merged;
    it->dropped += t.dropped;
    it->waiting += t.waiting;
    it->code_seconds += t.code_seconds;
    if (t.round_trip_seconds > 0)  // the newest route's (added last)
      it->round_trip_seconds = t.round_trip_seconds;
  };
  for (const auto& t : past_wire)
    add(t);
  for (std::size_t k = 0; k < waiting.size() && k < routes.size(); ++k)
    if (waiting[k].traffic.sends > 0) {
      auto t = waiting[k].traffic;
      t.to = routes[k].first;
      t.waiting = waiting[k].queue.size();
      t.round_trip_seconds = waiting[k].timer.srtt_seconds();
      add(t);
    }
  return out;
}

model_snapshot make_snapshot(std::uint32_t node, const compute_unit& cu, const outbox& out,
                             const staleness_stats& staleness, const std::vector<float>& x) {
  auto s = compute_snapshot(node, cu, x);
  s.messages_sent = out.messages;
  s.bytes_sent = out.bytes;
  s.staleness_sum = staleness.sum;
  s.staleness_max = staleness.max;
  s.staleness_count = staleness.count;
  s.wire = out.wire_report();
  return s;
}

}  // namespace atrain
