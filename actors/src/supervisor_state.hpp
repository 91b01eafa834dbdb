#pragma once
/// The supervisor's state. Private to supervisor.cpp; an algorithm's own
/// recovery (recovery.hpp) sees the supervisor through `supervision` only.
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/recovery.hpp"
#include "atrain/actors/supervisor.hpp"
#include "atrain/actors/trace.hpp"

namespace atrain::sup {

/// A worker's restart the algorithm's join_fn carries out: after crash i,
/// or node k's join (faults.join).
struct restart_order {
  std::uint32_t node = 0;
  std::uint64_t fault = 0;  // its fault record (fault_schedule::describe index)
  event_kind event = event_kind::restart;
  std::uint64_t arg = 0;  // the trace's: the crash's or the join's index
  std::string before;     // the record's effect up to the restart ("killed at 3 s")
  const char* verb = "restarted";
};

struct sup_state {
  context_ptr ctx;
  caf::actor listener;
  std::shared_ptr<run_sink> sink;
  /// Shared with the exit functor, which runs after the state may be gone.
  std::shared_ptr<std::vector<caf::actor>> children = std::make_shared<std::vector<caf::actor>>();
  std::map<caf::actor_addr, std::string> names;  // for error messages
  evaluator_actor evaluator;
  std::vector<node_actors> nodes;
  link_list links;
  /// Restarts so far per node (supervision).
  std::map<std::uint32_t, std::uint64_t> incarnations;
  /// A replacement is joining: later restarts wait, so two neighbours never
  /// wait on each other's replacement.
  bool joining = false;
  std::deque<restart_order> restarts_waiting;
  /// Nodes absent from the start whose join has not begun (faults.join).
  std::set<std::uint32_t> absent;
  /// Checkpoints (checkpoint.hpp); null when the spec has none and the run
  /// is not resumed.
  std::shared_ptr<checkpointer> ckpt;
  /// Injected crashes (index = crash): fired yet; held back by a barrier
  /// (injected when it lets the workers go, in this order); and how many
  /// are open (the worker killed, its restart not yet joined) — a barrier
  /// waits until none is.
  std::vector<bool> crash_fired;
  std::deque<int> crashes_deferred;
  int crashes_open = 0;
  /// Actors killed by an injected crash: their down message is expected.
  std::set<caf::actor_addr> crashed;
  /// Multi-host runs: which node an actor belongs to, and the hosts lost.
  std::map<caf::actor_addr, std::uint32_t> node_of;
  std::set<std::uint32_t> lost_hosts;
  /// Multi-host runs: the hosts' spawners, watched so that a host lost while
  /// it prepares its nodes ends the run at once (not after the spawn timeout).
  std::map<caf::actor_addr, std::uint32_t> spawner_of;
  /// Multi-host runs: each host's run keeper (index = host; joins the
  /// checkpoint drain).
  std::vector<caf::actor> keepers;
  /// A resumed multi-host run: the bytes of each host's spawn request
  /// (spec and checkpoint part), for the error when a host drops it.
  std::vector<std::size_t> request_bytes;
  /// A resumed multi-host run waits for its first evaluation before the go
  /// (start_checkpoints).
  bool resumed_eval_first = false;
  /// The algorithm's own recovery (its descriptor's), and the supervisor's
  /// side it acts through; null when the algorithm has none.
  std::unique_ptr<recovery_policy> recovery;
  std::unique_ptr<supervision> side;
  bool stopping = false;
  bool progress = false;
  std::string stop_reason;
  static inline const char* name = "atrain_supervisor";
};
using sup_ptr = caf::stateful_actor<sup_state>*;

void adopt(sup_ptr self, const caf::actor& a, std::string name);
void fail(sup_ptr self, const std::string& what);
/// Index = node: its worker is running (not killed, or restarted since).
[[nodiscard]] std::vector<bool> workers_up(const sup_state& st);
/// Kills `a`; its down message is expected (not a failure).
void kill_child(sup_ptr self, const caf::actor& a);
/// `a` replaces node k's actor `old` (`part`: "worker", "gradient buffer").
void adopt_replacement(sup_ptr self, std::uint32_t k, const caf::actor& a, const char* part,
                       const caf::actor_addr& old);
/// Crash i's worker has been restarted and has joined.
void crash_closed(sup_ptr self);
void restart_worker(sup_ptr self, int i);
/// A replacement for o.node's worker, its links re-pointed, its state the
/// algorithm's way (join_fn); restarts wait for the one joining.
void replace_worker(sup_ptr self, restart_order o);

// ---- joins (supervisor_joins.cpp)

/// Stops every absent node's actors before the run's first event (a whole
/// node down until its join) and arms the joins with a time.
void arm_joins(sup_ptr self);
/// Node k joins now (its time came, or the run was asked); a node not
/// absent (joined already, or never absent) is refused with the reason.
[[nodiscard]] caf::expected<void> join_node(sup_ptr self, std::uint32_t k);
/// Why the algorithm cannot go on after losing a node for good (empty: it can).
[[nodiscard]] std::string needs_every_node(const run_plan& plan);
/// With every node spawned and wired: watch them, start the evaluator, arm
/// the injected crashes and the time budget.
void start_run(sup_ptr self, std::vector<node_actors> nodes, link_list links, caf::actor server);

// ---- multi-host runs (supervisor_hosts.cpp)

/// A resumed run's host `h` lost before it answered: why it may have been.
[[nodiscard]] std::string resume_hint(const sup_state& st, std::uint32_t h);
/// Asks every host to spawn its nodes; once all answered, wires and starts the run.
void spawn_on_hosts(sup_ptr self);
/// Host `h` is gone: its nodes are lost for good, like a whole-node crash.
void host_lost(sup_ptr self, std::uint32_t h);

}  // namespace atrain::sup
