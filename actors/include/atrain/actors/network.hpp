#pragma once
/// How packets leave a node: straight to the receiving actor when the link is
/// perfect, otherwise through the link actor of that directed edge, which
/// applies the spec's link model (latency, bandwidth, loss, duplication,
/// reordering) from its own seeded generator.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "atrain/actors/compute.hpp"
#include "atrain/actors/context.hpp"
#include "atrain/actors/route_timer.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

class link_coder;  // atrain/actors/link_codec.hpp

/// Whether the run's links acknowledge and retransmit (a reliable transport
/// over the lossy wire): the descriptor's link_policy::acknowledged (an
/// algorithm built for loss says no). Receivers still see duplicates (an ack lost, a link
/// duplicating) and must drop them: see exactly_once.
[[nodiscard]] bool links_are_acknowledged(const run_plan& plan);

/// Whether a crashed worker may be restarted in a run where links end at
/// workers (link_policy::follow_restarts). Such runs send every packet through
/// a link actor, even over a perfect link: a link can be re-pointed at the
/// replacement ((restart_atom, old address, new handle)) and tell the
/// highest seq its sender handed it ((resume_atom) -> (from, any, seq)),
/// where a direct route would leave the dead handle in every sender.
[[nodiscard]] bool links_follow_restarts(const run_plan& plan);

/// Whether the run puts a link actor on every edge (the link model, link
/// faults, or links_follow_restarts) rather than sending straight to the
/// receiver. They run in the supervisor's process: across hosts in the
/// driver's, so every packet relays through it.
[[nodiscard]] bool links_emulated(const run_plan& plan);

/// Sequence numbers from the future. An honest sender numbers at most one
/// packet per stream per gradient (or per tau, for a retired buffer that
/// keeps sending its sums), and no gradient is shorter than the cost model's fastest
/// (virtual clock: min tau x (1 - jitter); slowdowns are >= 1) nor, on either
/// clock, 1 us. future_seq_rate is four times that rate, per run second.
[[nodiscard]] double future_seq_rate(const run_plan& plan);

/// A seq above what any honest sender can have used by run time `now`
/// (1024 + rate x now): a forged or corrupted number that, kept as the
/// newest or applied, would silence that sender's stream or inject
/// gradients under numbers it has not reached. Receivers reject and count it.
[[nodiscard]] inline bool from_the_future(std::uint64_t seq, double rate, double now) {
  return static_cast<double>(seq) > 1024.0 + rate * (now > 0 ? now : 0.0);
}

/// Receiver-side de-duplication by (sender, stream, seq): first_time() is
/// true once per key. Memory stays small when each sender numbers a
/// stream to one receiver 1, 2, 3, ... (gaps are remembered individually).
class exactly_once {
public:
  [[nodiscard]] bool first_time(std::uint32_t from, std::uint32_t kind, std::uint64_t seq);
  /// The lowest seq >= 1 not yet seen on (from, kind).
  [[nodiscard]] std::uint64_t first_unseen(std::uint32_t from, std::uint32_t kind) const;
  /// Whether first_time(from, kind, seq) was already true once (no change).
  [[nodiscard]] bool seen(std::uint32_t from, std::uint32_t kind, std::uint64_t seq) const;

private:
  struct stream {
    bool zero_seen = false;
    std::uint64_t below = 1;        // every seq in [1, below) has been seen
    std::set<std::uint64_t> above;  // seen seqs >= below
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, stream> seen_;
};

/// Spawns one link actor per directed edge (from -> to) in `edges`, each
/// delivering to receivers[to]. Returns the route table from -> to -> handle.
class network {
public:
  network(caf::event_based_actor* sup, const context_ptr& ctx,
          const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges,
          const std::vector<caf::actor>& receivers, link_list& links_out);

  /// The handle node `from` sends to in order to reach node `to`.
  [[nodiscard]] caf::actor route(std::uint32_t from, std::uint32_t to) const;

private:
  std::map<std::pair<std::uint32_t, std::uint32_t>, caf::actor> routes_;
};

/// Wires a star around node `at`'s hub (a root aggregator, a parameter
/// server): a link i -> at ending at the hub and a
/// link at -> i ending at worker i for every other node (worker `at` and the
/// hub share a node and talk directly). Then sends the hub (init_atom, routes
/// to every worker, index = node), every worker (init_atom, its route to the
/// hub), and every worker (start_atom). Each node's route to the hub is kept
/// in its worker_routes (for a restarted worker).
void wire_star(caf::event_based_actor* sup, const context_ptr& ctx, link_list& links,
               std::uint32_t at, std::vector<node_actors>& nodes);

/// Adds `p`'s payloads into `into` (coalescing: gradients summed, the
/// newest sequence number kept). False when the shapes differ or either is
/// coded (link.codec).
[[nodiscard]] bool sum_into(packet& into, const packet& p);

/// A node's outgoing side: counts messages and bytes, records the trace.
///
/// Towards an actor of another process (multi-host runs), and on every
/// route of a virtual run with link.window (a twin of such a run, where
/// the link actor answers one round trip later), it also does flow
/// control, which the in-process engine never needed: a sender computing
/// faster than the network would pile up packets without bound. Each packet
/// goes out as a request whose (empty) answer frees its slot; at most
/// `window` are unanswered per route and the rest wait here, merged as the
/// algorithm's link_policy allows: newest_wins keeps the newest per stream
/// (running sums make older ones redundant), outbox_sums sums waiting
/// gradients (the packets carry a count), otherwise all are kept, in order.
struct outbox {
  std::vector<std::pair<std::uint32_t, caf::actor>> routes;  // (receiver node, handle)
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;

  static constexpr std::size_t window = cross_process_window;  // link.window in a twin
  struct waiting_route {
    std::deque<packet> queue;
    route_timer timer;      // its unanswered packets and their round trips
    route_traffic traffic;  // its `to` and `waiting` are filled by wire_report()
  };
  std::vector<waiting_route> waiting;    // index = route (multi-host runs only)
  std::vector<route_traffic> past_wire;  // of routes given up by reroute()
  /// link.codec: codes each packet as it leaves (nullptr: raw). With it,
  /// `bytes` counts the coded packets that left, not those merged away.
  std::shared_ptr<link_coder> coder;

  /// Sends `p` (p.to is set per receiver) to every route. `Self`: the
  /// sending actor, typed or not.
  template <class Self>
  void broadcast(Self* self, run_context& ctx, const packet& p) {
    for (std::size_t k = 0; k < routes.size(); ++k)
      send(self, ctx, k, p);
  }
  /// Whether some cross-process route has `threshold` or more packets
  /// unanswered (the node sends faster than that route carries): `busy`
  /// while one such route's oldest is not yet late (route_timer), `late`
  /// when all such are late (a peer that stopped answering), else `free`.
  /// Always `free` in-process without link.window (nothing is counted
  /// there), so those virtual runs are unaffected. `now_ns`: the actor clock (ctx.ns).
  [[nodiscard]] route_gate gate(std::size_t threshold, std::int64_t now_ns) const {
    auto g = route_gate::free;
    for (const auto& w : waiting)
      if (w.timer.unanswered() >= threshold) {
        if (w.timer.awaiting(now_ns))
          return route_gate::busy;
        g = route_gate::late;
      }
    return g;
  }
  /// New routes (R-FAST's tracking epochs): packets still waiting are
  /// dropped; slots stay (answers to packets in flight still free them).
  void reroute(std::vector<std::pair<std::uint32_t, caf::actor>> fresh);
  /// What went on the wire per receiver in another process (those used only).
  [[nodiscard]] std::vector<route_traffic> wire_report() const;
  /// Sends `p` to routes[k] only (p.to is set to its receiver).
  template <class Self>
  void send(Self* self, run_context& ctx, std::size_t k, packet p);

private:
  /// Counts and records `p` leaving on route k (p.to set); `leaves`: it goes
  /// now (a coder codes it first), else dispatch() codes and counts its bytes.
  void count(caf::local_actor* self, run_context& ctx, std::size_t k, packet& p, bool leaves);
  /// Codes `p` (coder set) and counts its coded bytes.
  void encode(packet& p);
  /// Cross-process: true when route k has a free slot, else `p` waits
  /// (merged as the algorithm allows).
  [[nodiscard]] bool slot_or_wait(run_context& ctx, std::size_t k, packet& p);
  /// Sends `p` on route k as a request; its answer (or its failure: the
  /// receiver is gone) frees the slot for the next waiting packet.
  template <class Self>
  void dispatch(Self* self, run_context& ctx, std::size_t k, packet p);
};

template <class Self>
void outbox::send(Self* self, run_context& ctx, std::size_t k, packet p) {
  const auto& handle = routes[k].second;
  const bool flow = ctx.flow_controls(handle.node() != self->node());
  count(self, ctx, k, p, !flow);
  if (!flow) {
    // A route is a caf::actor; a typed sender may send() to typed handles only.
    self->send(caf::actor_cast<packet_sink>(handle), deliver_atom::value, std::move(p));
    return;
  }
  if (slot_or_wait(ctx, k, p))
    dispatch(self, ctx, k, std::move(p));
}

template <class Self>
void outbox::dispatch(Self* self, run_context& ctx, std::size_t k, packet p) {
  if (coder) {
    // REAL clock: the coding's wall time, which the twin's cost.message_seconds
    // stands for (the round trip below starts after it). 0 on the virtual clock.
    const auto before = self->clock().now();
    encode(p);
    waiting[k].traffic.code_seconds +=
      std::chrono::duration<double>(self->clock().now() - before).count();
  }
  ++waiting[k].traffic.packets;
  waiting[k].traffic.bytes += p.bytes();
  ++ctx.remote_sent;
  const auto sent_ns = ctx.ns(self);
  waiting[k].timer.sent(sent_ns);
  auto next = [this, self, &ctx, k, sent_ns](bool ok) {
    ++ctx.remote_answered;
    auto& w = waiting[k];
    w.timer.answered(sent_ns, ctx.ns(self), ok);
    if (w.queue.empty())
      return;
    auto q = std::move(w.queue.front());
    w.queue.pop_front();
    dispatch(self, ctx, k, std::move(q));
  };
  self->request(routes[k].second, ctx.reply_timeout(), deliver_atom::value, std::move(p))
    .then([next] { next(true); }, [next](const caf::error&) { next(false); });
}

/// What a node's worker reports to the evaluator (model_atom).
[[nodiscard]] model_snapshot make_snapshot(std::uint32_t node, const compute_unit& cu,
                                           const outbox& out, const staleness_stats& staleness,
                                           const std::vector<float>& x);

}  // namespace atrain
