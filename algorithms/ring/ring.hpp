#pragma once
/// Ring all-reduce (ALGORITHMS.md §4), shared by Ring-AllReduce SGD and Local
/// SGD: the reduce-scatter / all-gather state machine of one rank, the
/// packet side of it (validation, duplicates, reordering), and the spawn
/// helper that wires n workers into the ring 0 -> 1 -> ... -> n-1 -> 0.
///
/// The vector of dimension d is split into n chunks whose sizes differ by at
/// most one (chunk c starts at c*floor(d/n) + min(c, d mod n)). With
/// T = 2(n-1) steps per round, at step t rank r
///   reduce-scatter (t = s < n-1): sends chunk (r - s) mod n to r+1 and adds
///     the chunk (r - 1 - s) mod n it receives from r-1;
///   all-gather (t = n-1+s): sends chunk (r + 1 - s) mod n and overwrites the
///     chunk (r - s) mod n it receives.
/// After the round every rank holds the same SUM (each chunk is added up in
/// one fixed order along the ring, so all ranks agree bit for bit).
///
/// Contribution counts (straggler_policy SKIP): a rank may put in a zero
/// vector (its gradient is late) or the sum of several gradients, so "divide
/// by n" is wrong. Every chunk therefore carries how many contributions it
/// holds, added in the reduce-scatter and copied in the all-gather exactly
/// like the values: after the round every rank holds the same COUNT. With
/// WAIT the counts do not travel (the packets stay as they were): a chunk
/// received at reduce-scatter step s holds s+1 contributions, n after.
///
/// Fragments (DiLoCo's streaming variant): with F > 1 round k reduces only
/// fragment k mod F of the vector (fragment f = ring_chunk(d, F, f)), split
/// into n chunks the same way; F = 1 is the whole vector every round.
///
/// A codec (link.codec, set_codec): every chunk travels coded. A
/// reduce-scatter chunk is coded by its sender and decoded by its receiver
/// before adding; the rank that completes chunk c codes it once, keeps the
/// decoded values itself, and the all-gather forwards those bytes untouched,
/// so every rank ends with the same decoded sum, bit for bit.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "algorithms/ring/ring_actor.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/compute.hpp"
#include "atrain/actors/context.hpp"
#include "atrain/actors/link_codec.hpp"
#include "atrain/actors/network.hpp"
#include "atrain/actors/node_actor.hpp"
#include "atrain/kernels/codec.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// A ring algorithm's spawn_node and spawn_replacement (its descriptor's)
/// from its worker function Worker(self, id, ctx, joining): node i's worker
/// as a child of `parent` (the supervisor, or its host: same code), wired by
/// wire_ring; a replacement for node k's crashed worker, keeping every
/// message until join_ring_worker starts it.
template <auto Worker>
[[nodiscard]] node_actors spawn_ring_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                          std::uint32_t i) {
  node_actors out;
  out.worker = caf::actor_cast<caf::actor>(parent->spawn(Worker, i, ctx, false));
  return out;
}
template <auto Worker>
[[nodiscard]] caf::actor spawn_ring_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                                std::uint32_t k, std::uint64_t /*incarnation*/) {
  return caf::actor_cast<caf::actor>(sup->spawn(Worker, k, ctx, true));
}

/// [begin, end) of chunk c when d values are split into n chunks.
[[nodiscard]] std::pair<std::size_t, std::size_t> ring_chunk(std::size_t d, std::uint32_t n,
                                                             std::uint32_t c);

/// The ring state machine of one rank, free of actors (tested directly).
/// Rounds are numbered 0, 1, ...; a rank accepts chunks of its current round
/// and the next one (the predecessor may start round k+1 before this rank has
/// received the last chunk of round k), stashing those that arrive early.
class ring_allreduce {
public:
  /// One chunk to send to the successor.
  struct send {
    std::uint64_t round = 0;
    std::uint32_t step = 0;
    float_blob chunk;          // empty when coded
    double count = 0;          // contributions summed in `chunk`
    blob<std::uint8_t> coded;  // the chunk as a codec blob (set_codec)
  };
  enum class verdict { accepted, duplicate, invalid };

  ring_allreduce(std::uint32_t rank, std::uint32_t n, std::size_t dim, std::uint32_t fragments = 1);

  /// Every chunk travels coded with `c` from now on (see above).
  void set_codec(const codec::codec_config& c) { codec_ = c; }

  /// [begin, end) of the values round `round` reduces (its fragment).
  [[nodiscard]] std::pair<std::size_t, std::size_t> fragment(std::uint64_t round) const;

  /// Starts the current round with this rank's vector (dim values; only the
  /// round's fragment is read) holding `count` contributions. Returns the chunks to send now (the
  /// step-0 chunk, then any unblocked by chunks stashed earlier).
  std::vector<send> begin(const float* v, double count = 1);
  /// A chunk from the predecessor. Duplicates (already used or stashed, or of
  /// a finished round) are ignored; wrong size, non-finite values, a step out
  /// of range or a round too far ahead are invalid. Chunks of the active
  /// round are applied at once; `out` gets the chunks that became ready.
  /// `count` is the chunk's contribution count when counts travel (it must
  /// be a whole number >= 0, else invalid); nullopt: one per rank it passed.
  /// With a codec the chunk comes as `coded` (and `chunk` empty); a blob
  /// that does not decode to the chunk's size, or a raw chunk, is invalid.
  verdict offer(std::uint64_t round, std::uint32_t step, const float_blob& chunk,
                std::vector<send>& out, std::optional<double> count = std::nullopt,
                const blob<std::uint8_t>& coded = {});

  /// True between the last step of a round and the next begin().
  [[nodiscard]] bool finished() const noexcept { return finished_; }
  /// The sum of the last finished round (valid over its fragment).
  [[nodiscard]] const std::vector<float>& sum() const noexcept { return buf_; }
  /// The number of the last finished round and the [begin, end) of the
  /// values it reduced (a restart may have moved round() on since).
  [[nodiscard]] std::uint64_t last_round() const noexcept { return last_round_; }
  [[nodiscard]] std::pair<std::size_t, std::size_t> last_fragment() const noexcept {
    return fragment(last_round_);
  }
  /// How many contributions that sum holds (the same on every rank).
  [[nodiscard]] double count() const noexcept { return counts_.front(); }
  /// True between begin() and the end of the round.
  [[nodiscard]] bool active() const noexcept { return active_; }
  /// True when the predecessor has started the round this rank has not
  /// begun yet (a chunk of it is stashed): the ring is waiting for this rank.
  [[nodiscard]] bool called() const;
  [[nodiscard]] std::uint64_t round() const noexcept { return round_; }
  [[nodiscard]] std::uint32_t steps_per_round() const noexcept { return 2 * (n_ - 1); }
  /// Chunk index rank `rank` sends at step t (received by rank+1).
  [[nodiscard]] std::uint32_t sent_chunk(std::uint32_t rank, std::uint32_t step) const;
  /// A resumed run: the ring at rest after `rounds` finished rounds.
  void restore_round(std::uint64_t rounds) {
    round_ = rounds;
    finished_ = rounds > 0;
  }

  /// Restart (supervision): the sum and count of the last finished round
  /// (empty before the first).
  [[nodiscard]] const std::vector<float>& last_sum() const noexcept { return last_sum_; }
  [[nodiscard]] double last_count() const noexcept { return last_count_; }
  /// Restart: ends the active round with the result another rank finished
  /// it with (chunks through the dead rank will never come).
  void adopt(const std::vector<float>& sum, double count);
  /// Restart: moves on to round `round` (> the current one), dropping what
  /// is stashed of earlier rounds; an active round begins again there with
  /// the same vector and count (its chunks may have gone to the dead rank).
  std::vector<send> skip_to(std::uint64_t round);
  /// A join (supervision): this rank's place `rank` in a ring of `n` from
  /// the next begin() on. Only between rounds (called before skip_to).
  void reshape(std::uint32_t rank, std::uint32_t n);

private:
  void run(std::vector<send>& out);
  send make_send(std::uint32_t step);
  void finish_round();

  std::uint32_t rank_;
  std::uint32_t n_;
  std::size_t dim_;
  std::uint32_t fragments_;
  std::vector<float> buf_;
  std::vector<double> counts_;  // contributions per chunk
  std::uint64_t round_ = 0;     // the active (or next) round
  bool active_ = false;
  bool finished_ = false;
  std::uint32_t next_ = 0;  // next step whose chunk we wait for
  struct stashed {
    float_blob chunk;  // decoded, when coded
    double count = 0;
    blob<std::uint8_t> coded;
  };
  std::map<std::pair<std::uint64_t, std::uint32_t>, stashed> stash_;
  std::optional<codec::codec_config> codec_;
  blob<std::uint8_t> relay_;         // the all-gather chunk received last, as it came
  std::vector<float> contribution_;  // this rank's vector of the active round (all dim values)
  double contribution_count_ = 0;
  std::vector<float> last_sum_;
  double last_count_ = 0;
  std::uint64_t last_round_ = 0;
};

/// A worker's end of the ring: the state machine plus packets, counters and
/// the trace. Packets carry kind = 1 + step and seq = round; `counted` rings
/// also carry the chunk's contribution count as the one scalar.
///
/// Members (faults.join): the ring runs over the nodes in it, in ascending
/// id order; node `rank` sends to the next member and hears the previous
/// one. A worker holds a route to every node that can become its successor
/// (ring_successors) and sends on the current one only.
class ring_endpoint {
public:
  ring_endpoint(std::uint32_t rank, std::uint32_t n, std::size_t dim, bool counted,
                std::uint32_t fragments = 1)
    : ring_(rank, n, dim, fragments), rank_(rank), n_(n), counted_(counted),
      successor_((rank + 1) % n), predecessor_((rank + n - 1) % n) {}

  void connect(std::uint32_t successor, caf::actor route) {
    out_.routes.emplace_back(successor, std::move(route));
  }
  /// The ring's members from round `from` on (ascending node ids, this
  /// node among them); chunks of earlier rounds are stale from then on.
  void set_members(std::vector<std::uint32_t> members, std::uint64_t from);
  /// The ring's members (ascending node ids).
  [[nodiscard]] std::vector<std::uint32_t> members() const;
  [[nodiscard]] bool is_member(std::uint32_t node) const;
  /// Starts a round with v; true when it finished at once (only for n = 1:
  /// the predecessor's step n-1 chunk needs our step-0 chunk first).
  /// `Self`: the sending actor, typed or not (its outbox's routes).
  template <class Self>
  bool begin(Self* self, run_context& ctx, const float* v, double count = 1) {
    const auto before = ring_.round();
    auto sends = ring_.begin(v, count);
    emit(self, ctx, sends);
    return ring_.round() != before;
  }
  /// Handles a delivered packet; true when it finished the round.
  template <class Self>
  bool deliver(Self* self, run_context& ctx, const packet& p) {
    const auto before = ring_.round();
    std::vector<ring_allreduce::send> sends;
    if (!take(self, ctx, p, sends))
      return false;
    emit(self, ctx, sends);
    return ring_.round() != before;
  }

  [[nodiscard]] const std::vector<float>& sum() const noexcept { return ring_.sum(); }
  [[nodiscard]] double count() const noexcept { return ring_.count(); }
  [[nodiscard]] bool active() const noexcept { return ring_.active(); }
  [[nodiscard]] bool called() const { return ring_.called(); }
  [[nodiscard]] std::uint64_t messages() const noexcept { return out_.messages; }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return out_.bytes; }
  [[nodiscard]] std::vector<route_traffic> wire() const { return out_.wire_report(); }
  [[nodiscard]] std::uint64_t rejected() const noexcept { return rejected_; }
  [[nodiscard]] ring_allreduce& state() noexcept { return ring_; }
  /// Restart: ring_allreduce::skip_to, sending what it begins again.
  template <class Self>
  void skip_to(Self* self, run_context& ctx, std::uint64_t round) {
    auto sends = ring_.skip_to(round);
    emit(self, ctx, sends);
  }
  [[nodiscard]] std::uint64_t round() const noexcept { return ring_.round(); }
  /// A resumed run: round and counters as a checkpoint saved them.
  void restore(std::uint64_t round, std::uint64_t messages, std::uint64_t bytes,
               std::uint64_t rejected) {
    ring_.restore_round(round);
    out_.messages = messages;
    out_.bytes = bytes;
    rejected_ = rejected;
  }

private:
  /// Traces `p`, checks it and offers it to the ring (`sends`: the chunks
  /// that became ready); false, counted and traced, when it is rejected.
  bool take(caf::local_actor* self, run_context& ctx, const packet& p,
            std::vector<ring_allreduce::send>& sends);
  /// The packet carrying `s` (its chunk, or its coded bytes, moved out).
  [[nodiscard]] packet to_packet(ring_allreduce::send& s) const;
  template <class Self>
  void emit(Self* self, run_context& ctx, std::vector<ring_allreduce::send>& sends) {
    std::size_t k = 0;
    while (k < out_.routes.size() && out_.routes[k].first != successor_)
      ++k;
    if (k == out_.routes.size())
      return;  // one member: nothing to send
    for (auto& s : sends)
      out_.send(self, ctx, k, to_packet(s));
  }

  ring_allreduce ring_;
  std::uint32_t rank_;  // this node's id
  std::uint32_t n_;     // nodes in the run
  bool counted_;
  std::vector<std::uint32_t> members_;  // empty: every node
  std::uint32_t successor_;
  std::uint32_t predecessor_;
  std::uint64_t since_ = 0;  // the first round of the current members
  outbox out_;
  std::uint64_t rejected_ = 0;
};

/// link_policy::coding of the ring algorithms: the outbox leaves their packets
/// alone, the ring codes its own chunks (ring_allreduce::set_codec).
[[nodiscard]] inline stream_coding ring_coding(std::uint32_t /*kind*/) {
  return stream_coding::raw;
}

/// Refuses link.codec.error_feedback for a ring algorithm (spec checks).
void ring_check_codec(spec_checker& c);

/// The nodes that can follow node i in the ring as nodes join: i+1, i+2, ...
/// (mod n) up to the first one present from the start (just i+1 without
/// faults.join). A worker's routes come in this order.
[[nodiscard]] std::vector<std::uint32_t> ring_successors(const run_plan& plan, std::uint32_t i);
/// The ring's members when the run starts: every node not absent (faults.join).
[[nodiscard]] std::vector<std::uint32_t> ring_members_at_start(const run_plan& plan);

/// Builds the links of the ring i -> i+1 mod n between the nodes' workers
/// (i -> every ring_successors(i) with faults.join) and sends each worker
/// (start_atom, its routes).
void wire_ring(caf::event_based_actor* sup, const context_ptr& ctx, std::vector<node_actors>& nodes,
               link_list& links);

/// What every ring worker holds: its computation, model x, last gradient g,
/// its end of the ring, and its step count k; whether a gradient is in
/// flight and the step count it read x at; the staleness of the gradients
/// it applied and how many of them joined a later step (SKIP).
struct ring_worker_state {
  bool skip = false;  // straggler_policy SKIP
  std::optional<compute_unit> cu;
  std::optional<ring_endpoint> ring;
  std::vector<float> x;
  std::vector<float> g;
  std::uint64_t steps = 0;
  std::uint64_t averages = 0;       // Local SGD: averages done
  std::uint32_t since_average = 0;  // Local SGD: local steps since the last average
  bool computing = false;
  std::uint64_t read_at = 0;
  staleness_stats staleness;
  std::uint64_t late = 0;
  barrier_hold hold;  // checkpoints
  /// Ring-AllReduce SKIP: gradients done, not yet in a step (their sum), and
  /// the step each of them read x at.
  std::vector<float> pending;
  std::vector<std::uint64_t> pending_read;

  virtual ~ring_worker_state() = default;
  /// What a restart hands a replacement from its donor (the donor's model;
  /// DiLoCo: its outer model and momentum), and how the replacement takes it.
  [[nodiscard]] virtual float_blob donor_model() const { return float_blob{x}; }
  virtual void adopt_donor_model(const float_blob& m) { x = m.vec(); }
  /// The algorithm's own fields of its checkpoint part, if any (DiLoCo's).
  virtual void save_part(proto::RingNodeState&) const {}
  virtual void restore_part(const proto::RingNodeState&) {}

  /// Records a gradient read at step `read` applied now (at `steps`).
  void applied(std::uint64_t read) {
    const auto s = steps - read;
    staleness.add(static_cast<double>(s));
    if (s > 0)
      ++late;
  }
};

/// Starts g = gradient at x; the worker wakes when it counts as done.
/// `Self`: a ring worker, a ring_worker_actor::stateful_impl<State>.
template <class Self>
void ring_compute_next(Self* self) {
  auto& st = self->state;
  st.computing = true;
  st.read_at = st.steps;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  send_after(self, caf::actor_cast<ring_worker_actor>(self), wait, wake_atom::value);
}

/// Restart (supervision): the decision after a freeze. The highest number
/// of rounds any live rank finished is `m`: a rank still in round m-1
/// finishes it with `sum` and `count` (what a rank that finished it got);
/// then every rank moves to round m+1, an active round m beginning again
/// there (its chunks may have gone to the dead rank, and the replacement
/// joins at m+1). Every rank thus ends round m-1 with the same sum, and no
/// chunk of round m is ever mixed with one of the redo. Restarted node k not
/// in the ring yet (a join): the ring runs with k from round m+1 on.
template <class Self, class OnSum>
void ring_resume(Self* self, run_context& ctx, std::uint32_t k, std::uint64_t m,
                 const float_blob& sum, double count, const OnSum& on_sum) {
  auto& st = self->state;
  self->unbecome();
  self->set_default_handler(caf::print_and_drop);
  auto& ring = st.ring->state();
  const bool adopt = ring.active() && ring.round() + 1 == m && !sum.empty();
  if (adopt)
    ring.adopt(sum.vec(), count);
  if (!st.ring->is_member(k)) {
    auto members = st.ring->members();
    members.insert(std::upper_bound(members.begin(), members.end(), k), k);
    st.ring->set_members(std::move(members), m + 1);
  }
  st.ring->skip_to(self, ctx, m + 1);
  if (adopt)
    on_sum();
}

/// Connects a ring worker's routes (wire_ring: one per ring_successors).
void connect_ring(ring_endpoint& ring, const run_plan& plan, std::uint32_t id,
                  const std::vector<caf::actor>& out);

/// Restart: a replacement rank keeps every message until the supervisor
/// starts it with its routes, a donor's model and counters, the round to
/// join and the ring's members from then on; then it runs `running` and computes.
template <class Self>
ring_worker_actor::behavior_type ring_joining(Self* self, std::uint32_t id, const context_ptr& ctx,
                                              ring_worker_actor::behavior_type running) {
  self->set_default_handler(caf::skip);
  return waiting_for<ring_worker_actor>([=](start_atom, const std::vector<caf::actor>& out,
                                            const float_blob& x, std::uint64_t steps,
                                            std::uint64_t averages, std::uint64_t round,
                                            const std::vector<std::uint32_t>& members) mutable {
    auto& st = self->state;
    connect_ring(*st.ring, *ctx->plan, id, out);
    st.adopt_donor_model(x);
    st.steps = steps;
    st.averages = averages;
    st.ring->set_members(members, round);
    st.ring->skip_to(self, *ctx, round);
    self->set_default_handler(caf::print_and_drop);
    self->become(std::move(running));
    ring_compute_next(self);
  });
}

/// Test hook body (virtual clock, between two scheduler steps): moves
/// `field` out of the state of the ring worker at `worker`; a default T
/// when the actor is gone or not a ring worker with that State.
template <class State, class T>
[[nodiscard]] T ring_take(const caf::actor_addr& worker, T State::*field) {
  auto handle = caf::actor_cast<caf::actor>(worker);
  if (!handle)
    return {};
  auto* w = dynamic_cast<ring_worker_actor::stateful_pointer<State>>(
    caf::actor_cast<caf::abstract_actor*>(handle));
  if (w == nullptr)
    return {};
  return std::exchange(w->state.*field, T{});
}

/// Supervision: freezes every live rank, decides the round (ring_resume),
/// and starts the replacement r.replacement (made with ring_joining) at it.
void join_ring_worker(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                      restart_started started);
/// Checkpoints: a ring worker's part of NodeState (at rest: no gradient in
/// flight, the ring idle; SKIP: with the gradients not in a step yet), and
/// putting it back.
template <class State>
[[nodiscard]] std::string save_ring_worker(const State& st) {
  proto::NodeState s;
  *s.mutable_params() = {st.x.begin(), st.x.end()};
  s.set_wakes(st.steps);
  st.cu->save(*s.mutable_compute());
  save_staleness(st.staleness, s);
  s.set_late(st.late);
  s.mutable_ring()->set_round(st.ring->round());
  s.mutable_ring()->set_messages(st.ring->messages());
  s.mutable_ring()->set_bytes(st.ring->bytes());
  s.mutable_ring()->set_rejected(st.ring->rejected());
  s.mutable_ring()->set_averages(st.averages);  // 0 (not written) for Ring-AllReduce
  s.mutable_ring()->set_since_average(st.since_average);
  if (!st.pending_read.empty()) {
    auto& k = *s.mutable_ring()->mutable_skip();
    *k.mutable_pending() = {st.pending.begin(), st.pending.end()};
    *k.mutable_pending_read() = {st.pending_read.begin(), st.pending_read.end()};
  }
  st.save_part(*s.mutable_ring());
  return s.SerializeAsString();
}

template <class State>
void restore_ring_worker(State& st, const proto::NodeState& s) {
  st.x.assign(s.params().begin(), s.params().end());
  st.steps = s.wakes();
  st.cu->restore(s.compute());
  restore_staleness(st.staleness, s);
  st.late = s.late();
  st.ring->restore(s.ring().round(), s.ring().messages(), s.ring().bytes(), s.ring().rejected());
  st.averages = s.ring().averages();
  st.since_average = s.ring().since_average();
  st.pending.assign(s.ring().skip().pending().begin(), s.ring().skip().pending().end());
  st.pending_read.assign(s.ring().skip().pending_read().begin(),
                         s.ring().skip().pending_read().end());
  st.restore_part(s.ring());
  st.hold.requested = st.hold.held = true;  // until the supervisor's go
}

namespace ring_detail {

/// A running ring worker's wiring, wake and packets (ring_worker).
/// `restored`: resumed from a checkpoint, it holds until the supervisor's go.
template <class Self, class OnWake, class OnSum, class OnCalled>
[[nodiscard]] auto run_handlers(Self* self, std::uint32_t id, const context_ptr& ctx, bool restored,
                                OnWake on_wake, OnSum on_sum, OnCalled on_called) {
  return std::make_tuple(
    [=](start_atom, const std::vector<caf::actor>& out) {
      connect_ring(*self->state.ring, *ctx->plan, id, out);
      if (!restored)
        ring_compute_next(self);
    },
    [=](wake_atom) {
      ctx->events.record(ctx->ns(self), id, event_kind::wake, self->state.steps);
      self->state.computing = false;
      on_wake();
    },
    [=](deliver_atom, const packet& p) {
      auto& ring = *self->state.ring;
      auto& st = self->state;
      if (ring.deliver(self, *ctx, p)) {
        on_sum();
      } else if (!ring.active() && ring.called()) {
        if (st.hold.held && !st.skip) {
          // A checkpoint held this rank at a round boundary, but a rank
          // ahead of it began the next round: join it (WAIT: the ring waits
          // for our gradient; SKIP joins at once, on_called), and hold at
          // the boundary after it.
          st.hold.held = false;
          ring_compute_next(self);
        } else {
          on_called();
        }
      }
    });
}

/// A running ring worker's side of a restart (join_ring_worker).
template <class Self, class OnSum>
[[nodiscard]] auto restart_handlers(Self* self, std::uint32_t id, const context_ptr& ctx,
                                    OnSum on_sum) {
  return std::make_tuple(
    // Ring rank k is being restarted (supervision): freeze (every other
    // message waits) and report this rank's rounds, last sum and model.
    [=](restart_atom, std::uint32_t k) {
      auto& st = self->state;
      const auto& ring = st.ring->state();
      ctx->events.record(ctx->ns(self), id, event_kind::restart, k, ring.round());
      self->set_default_handler(caf::skip);
      self->become(caf::keep_behavior,
                   waiting_for<ring_worker_actor>(
                     [=](resume_atom, std::uint64_t m, const float_blob& sum, double count) {
                       ring_resume(self, *ctx, k, m, sum, count, on_sum);
                     }));
      return std::make_tuple(ring.round(), float_blob{ring.last_sum()}, ring.last_count(),
                             st.donor_model(), st.steps, st.averages, st.ring->members());
    },
    // The end of a freeze and a replacement's join come only while the
    // worker waits for them (every one sent once): nothing here.
    [](resume_atom, std::uint64_t, const float_blob&, double) {},
    [](start_atom, const std::vector<caf::actor>&, const float_blob&, std::uint64_t, std::uint64_t,
       std::uint64_t, const std::vector<std::uint32_t>&) {});
}

/// A ring worker's answers to node_actor: the barrier (its drain and go
/// differ from the common ones: the ring must be idle too) and the model.
template <class Self>
[[nodiscard]] auto node_handlers(Self* self, std::uint32_t id) {
  return std::make_tuple(
    [=](ckpt_drain_atom) {
      const auto& st = self->state;
      const bool idle = !st.ring->active() && !st.ring->called();
      if (st.skip)  // quiet when idle and not computing (pending is saved)
        return idle && !st.computing ? -1.0 : st.hold.busy_for(self, false);
      return st.hold.busy_for(self, idle);
    },
    [=](ckpt_go_atom) {
      // WAIT: the held rank computes; SKIP: every rank at rest does (none
      // rests otherwise: a gradient is in flight or the ring is busy).
      auto& st = self->state;
      if (st.hold.go() || (st.skip && !st.computing))
        ring_compute_next(self);
    },
    ckpt_pause_handler(self), ckpt_state_handler([=] { return save_ring_worker(self->state); }),
    [=](model_atom) {
      const auto& st = self->state;
      auto s = compute_snapshot(id, *st.cu, st.x);
      s.messages_sent = st.ring->messages();
      s.bytes_sent = st.ring->bytes();
      s.wire = st.ring->wire();
      s.rejected = st.ring->rejected();
      s.staleness_sum = st.staleness.sum;
      s.staleness_max = st.staleness.max;
      s.staleness_count = st.staleness.count;
      s.late = st.late;
      return s;
    });
}

}  // namespace ring_detail

/// The behaviour of a ring worker (`Self`: a
/// ring_worker_actor::stateful_impl<State>, State derived from
/// ring_worker_state): `on_wake()` runs when a gradient is done (after the
/// trace event), `on_sum()` when a round of the all-reduce is done (the sum
/// is in state.ring->sum()), `on_called()` when a chunk of a round this rank
/// has not begun arrives (the ring waits for it: straggler_policy SKIP may
/// join at once). `counted`: the chunks carry contribution counts;
/// `joining`: a replacement (its state comes with the join, not from a
/// checkpoint); `fragments`: the ring reduces one fragment per round.
/// Wiring, packets and model snapshots are common; the first gradient starts
/// with the wiring.
template <class Self, class OnWake, class OnSum, class OnCalled>
ring_worker_actor::behavior_type
ring_worker(Self* self, std::uint32_t id, const context_ptr& ctx, bool counted, bool joining,
            OnWake on_wake, OnSum on_sum, OnCalled on_called, std::uint32_t fragments = 1) {
  const auto& plan = *ctx->plan;
  const auto n = static_cast<std::uint32_t>(plan.nodes());
  auto& st = self->state;
  st.cu.emplace(*ctx, id);
  st.ring.emplace(id, n, plan.dim(), counted, fragments);
  if (codec_of(plan.link).active())
    st.ring->state().set_codec(plan.link.codec);
  st.x = plan.x0;
  const auto* saved = joining ? nullptr : resumed_node(*ctx, id);  // a replacement joins
  if (saved)
    restore_ring_worker(st, *saved);
  if (!joining && !plan.joins.empty() && !plan.join_of(id))
    st.ring->set_members(ring_members_at_start(plan), 0);
  return compose<ring_worker_actor::behavior_type>(
    ring_detail::run_handlers(self, id, ctx, saved != nullptr, on_wake, on_sum, on_called),
    ring_detail::restart_handlers(self, id, ctx, on_sum), ring_detail::node_handlers(self, id));
}

}  // namespace atrain
