#pragma once
/// Checkpoints of a whole run (README "Checkpoint and resume").
///
/// A checkpoint is a barrier that is part of the run. At a time T of the
/// spec's `checkpoint` block the supervisor
///   1. asks every worker to stop at its next gradient boundary (it finishes
///      the gradient in flight and its cycle, then holds instead of starting
///      the next one),
///   2. polls the workers and the links until every worker holds and no
///      packet is in flight anywhere (the drain; it ends at T_c >= T),
///   3. asks every actor for its state (ckpt_state_atom: serialized
///      atrain.proto parts), records a trace event, and writes the
///      Checkpoint (FILE.tmp, then rename),
///   4. lets the workers go on at T_c.
/// A run resumed from that file spawns the same actors, each restoring its
/// state from run_context::resume, with the run clock reading T_c; the
/// supervisor runs the same poll and then the same "go". With the virtual
/// clock both runs therefore continue from identical states, timers and
/// event order: same models, metrics and trace hash to the end.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "atrain/actors/barrier_atoms.hpp"
#include "atrain/actors/compute.hpp"
#include "atrain/actors/context.hpp"
#include "atrain/actors/evaluator_actor.hpp"
#include "atrain/actors/node_actor.hpp"
#include "atrain/kernels/rng.hpp"

namespace atrain {

/// A worker's side of the barrier. Handlers: (ckpt_pause_atom) sets
/// `requested`; at its gradient boundary the worker calls stop_here();
/// (ckpt_drain_atom) answers busy_for(); (ckpt_go_atom) calls go().
struct barrier_hold {
  bool requested = false;                   // a barrier asked to stop at the next gradient boundary
  bool held = false;                        // stopped there (no gradient in flight)
  caf::actor_clock::time_point wake_due{};  // when the gradient in flight completes

  /// At a gradient boundary: true (now held) when a barrier is waiting.
  bool stop_here() {
    held = requested;
    return held;
  }
  /// ckpt_go: true when the worker must start its next gradient now.
  bool go() {
    requested = false;
    return std::exchange(held, false);
  }
  /// The answer to ckpt_drain_atom: < 0 when quiet (held and `idle`),
  /// otherwise the seconds it stays busy at least (0: unknown, ask again soon).
  [[nodiscard]] double busy_for(caf::local_actor* self, bool idle = true) const;
};

/// The barrier's handlers every worker with a `hold` answers alike, one by
/// one: a worker whose barrier differs in one composes the others with its
/// own (`Self`: a stateful actor, typed or not, whose state has `hold`).
template <class Self>
[[nodiscard]] auto ckpt_pause_handler(Self* self) {
  return [=](ckpt_pause_atom) { self->state.hold.requested = true; };
}

template <class Self>
[[nodiscard]] auto ckpt_drain_handler(Self* self) {
  return [=](ckpt_drain_atom) { return self->state.hold.busy_for(self); };
}

/// `save()`: the worker's serialized state.
template <class Save>
[[nodiscard]] auto ckpt_state_handler(Save save) {
  return [=](ckpt_state_atom) { return save(); };
}

/// `resume()` when the worker held.
template <class Self, class Resume>
[[nodiscard]] auto ckpt_go_handler(Self* self, Resume resume) {
  return [=](ckpt_go_atom) {
    if (self->state.hold.go())
      resume();
  };
}

/// Pause, drain and state, as a tuple for compose() (node_actor.hpp).
template <class Self, class Save>
[[nodiscard]] auto checkpoint_handlers(Self* self, Save save) {
  return std::make_tuple(ckpt_pause_handler(self), ckpt_drain_handler(self),
                         ckpt_state_handler(std::move(save)));
}

/// The same with the go: the whole of node_actor's barrier.
template <class Self, class Resume, class Save>
[[nodiscard]] auto checkpoint_handlers(Self* self, Resume resume, Save save) {
  return std::tuple_cat(std::make_tuple(ckpt_go_handler(self, std::move(resume))),
                        checkpoint_handlers(self, std::move(save)));
}

/// Generator state to and from its proto form (4 words).
void save_rng(const rng& gen, google::protobuf::RepeatedField<std::uint64_t>* out);
[[nodiscard]] rng load_rng(const google::protobuf::RepeatedField<std::uint64_t>& in);

/// A worker's staleness statistics to and from its NodeState.
void save_staleness(const staleness_stats& s, proto::NodeState& out);
void restore_staleness(staleness_stats& s, const proto::NodeState& in);

/// An outbox's coders (link.codec) to and from NodeState.codec: nothing
/// without a coder (link_coder::save and ::restore).
struct outbox;
void save_coder(const outbox& out, proto::NodeState& s);
void restore_coder(outbox& out, const proto::NodeState& s);

/// What every worker with an outbox saves alike: the compute unit, the
/// outbox's counters and coders, rejected packets and staleness. State has
/// cu, out, rejected and staleness members.
template <class State>
void save_worker_counters(const State& st, proto::NodeState& s) {
  st.cu->save(*s.mutable_compute());
  s.set_messages_sent(st.out.messages);
  s.set_bytes_sent(st.out.bytes);
  s.set_rejected(st.rejected);
  save_staleness(st.staleness, s);
  save_coder(st.out, s);
}

template <class State>
void restore_worker_counters(State& st, const proto::NodeState& s) {
  st.cu->restore(s.compute());
  st.out.messages = s.messages_sent();
  st.out.bytes = s.bytes_sent();
  st.rejected = s.rejected();
  restore_staleness(st.staleness, s);
  restore_coder(st.out, s);
}

/// The counters plus the model x and the step or request count (`wakes`).
template <class State>
void save_worker_basics(const State& st, std::uint64_t wakes, proto::NodeState& s) {
  *s.mutable_params() = {st.x.begin(), st.x.end()};
  s.set_wakes(wakes);
  save_worker_counters(st, s);
}

/// Puts back what save_worker_basics saved; returns `wakes`.
template <class State>
std::uint64_t restore_worker_basics(State& st, const proto::NodeState& s) {
  st.x.assign(s.params().begin(), s.params().end());
  restore_worker_counters(st, s);
  return s.wakes();
}

/// Node `id`'s saved state in a resumed run (null in a fresh run).
[[nodiscard]] inline const proto::NodeState* resumed_node(const run_context& ctx,
                                                          std::uint32_t id) {
  return ctx.resume ? &ctx.resume->nodes(static_cast<int>(id)) : nullptr;
}

/// The delay from now until run time `at_seconds`, counted in whole
/// nanoseconds from the run's start exactly as a timer armed at time 0
/// would be (a resumed run's timers fire at the same nanosecond).
[[nodiscard]] caf::timespan delay_until(const run_context& ctx, caf::local_actor* self,
                                        double at_seconds);

/// Reads checkpoint `file` and checks it against the prepared plan: the
/// file's framing and checksum, its spec (equal to the plan's but for
/// stop, checkpoint, out_dir and progress), node count, dimension and every
/// node's state sizes. An error names the file and the reason; nothing has
/// started then.
[[nodiscard]] caf::expected<std::shared_ptr<const proto::Checkpoint>>
load_checkpoint(const std::string& file, const run_plan& plan);

/// The checks of load_checkpoint that need no other node than `ids`: the
/// spec, node count, dimension, the time against stop.time_seconds and the
/// sizes of nodes `ids`' states (a host of a multi-host run checks its
/// nodes' part with its own plan). Empty when it fits, else the reason.
[[nodiscard]] std::string check_checkpoint_nodes(const proto::Checkpoint& ck, const run_plan& plan,
                                                 const std::vector<std::uint32_t>& ids);

/// An error as one plain sentence for people: its string context when it has
/// just one (atrain's own errors), else the code's name and the context's
/// parts, never CAF's `system_error(runtime_error, ("..."))` rendering.
[[nodiscard]] std::string error_text(const caf::error& e);

/// Frames and writes `ck` to `file` atomically (FILE.tmp, then rename).
/// Returns the bytes written.
[[nodiscard]] caf::expected<std::uint64_t> write_checkpoint(const proto::Checkpoint& ck,
                                                            const std::string& file);

/// The supervisor's side: arms the checkpoint times, runs the barrier,
/// writes the files, and keeps the records for the report.
class checkpointer : public std::enable_shared_from_this<checkpointer> {
public:
  using reason_fn = std::function<void(std::string)>;
  /// `stop` begins the run's stop (a stop deferred by a barrier), `fail`
  /// ends it with an error.
  checkpointer(context_ptr ctx, reason_fn stop, reason_fn fail);

  /// Supervision of injected crashes (runs with faults.crash): `quiet`
  /// says no crash is open (every crashed worker restarted and joined); a
  /// barrier due while one is open waits for quiet_again(). `after_go` runs
  /// when a barrier lets the workers go (the supervisor injects the crashes
  /// the barrier held back); `save` writes the supervisor's part.
  struct supervision {
    std::function<bool()> quiet;
    std::function<void()> after_go;
    std::function<void(proto::SupervisorState&)> save;
  };
  void supervise(supervision s) { sup_ = std::move(s); }
  /// A crash closed (its worker joined): a barrier that waited begins.
  void quiet_again(caf::event_based_actor* self);
  /// True from a barrier's begin to its go (crashes wait meanwhile).
  [[nodiscard]] bool active() const { return active_; }

  /// The actors of the run (after start_run spawned them, and again after
  /// a restart replaced a worker).
  void watch(const std::vector<node_actors>& nodes, const link_list& links,
             evaluator_actor evaluator);
  /// Multi-host runs: each host's run keeper (index = host; null: no node
  /// there). They join the drain: quiet once every packet their nodes sent
  /// to another process was answered, twice running.
  void watch_hosts(std::vector<caf::actor> keepers) { keepers_ = std::move(keepers); }
  /// Arms the spec's checkpoint times after the resumed one (fresh run: all).
  void arm(caf::event_based_actor* self);
  /// Resumed run: waits for every restored actor, then lets the workers go.
  void start_resumed(caf::event_based_actor* self);
  /// The timer of the checkpoint requested at `at` fired.
  void begin(caf::event_based_actor* self, double at);
  /// One round of the drain poll.
  void poll(caf::event_based_actor* self, std::uint64_t round);
  /// True while a barrier holds the run: the stop waits for the checkpoint
  /// (the run then ends at T_c instead of resuming).
  [[nodiscard]] bool defer_stop(const std::string& reason);
  /// The last checkpoint written (or resumed from); null before the first.
  [[nodiscard]] std::shared_ptr<const proto::Checkpoint> last() const { return last_; }
  /// The checkpoints written (and, resumed, where from) into the report.
  void add_to(proto::RunReport& r) const;

private:
  void gather(caf::event_based_actor* self);
  void finish(caf::event_based_actor* self, std::shared_ptr<proto::Checkpoint> ck);
  void go(caf::event_based_actor* self);
  [[nodiscard]] std::string file_for(std::uint32_t number) const;
  /// "node 3 worker", and where it runs in a multi-host run.
  [[nodiscard]] std::string node_part(std::size_t i, const char* part) const;

  context_ptr ctx_;
  reason_fn stop_;
  reason_fn fail_;
  std::vector<node_actors> nodes_;
  link_list links_;
  evaluator_actor evaluator_;
  std::vector<caf::actor> keepers_;
  bool active_ = false;
  bool restoring_ = false;
  double requested_ = 0;
  std::uint32_t number_ = 0;  // checkpoints taken so far (a resumed run counts on)
  std::uint64_t round_ = 0;
  std::vector<double> queued_;  // times that fired while a barrier was active
  std::optional<std::string> deferred_stop_;
  std::vector<proto::CheckpointRecord> records_;
  supervision sup_;
  std::shared_ptr<const proto::Checkpoint> last_;
};

}  // namespace atrain
