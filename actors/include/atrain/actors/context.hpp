#pragma once
/// What the actors of one run share in a process: the prepared plan (read
/// only), the event trace, the run's start time, and the test probe.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <vector>

#include <caf/all.hpp>

#include "atrain/actors/link_actor.hpp"
#include "atrain/actors/run_plan.hpp"
#include "atrain/actors/trace.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// Test hook: with the virtual clock (one thread) a test may read every
/// registered model and algorithm state between two scheduler steps.
struct run_probe {
  std::vector<const std::vector<float>*> models;  // worker's x, index = node; null when gone
  std::vector<caf::actor_addr> workers;           // index = node (fault tests)
  std::vector<caf::actor_addr> buffers;           // index = node; empty without buffers
  caf::actor_addr server;  // the hub holding the evaluated model; empty when none does

  /// Empties the per-node slots for a run of n nodes.
  void assign_nodes(std::size_t n) {
    models.assign(n, nullptr);
    states_.clear();
  }

  /// The nodes' registered states of type T (an algorithm's own: its
  /// tracker, its push-sum ledger), index = node; null when gone.
  template <class T>
  [[nodiscard]] std::vector<const T*>& states() const {
    return *slots<T>();
  }

  /// Test hook: the probe sees `x` as node `id`'s model until `self` is
  /// gone; a replacement that registered meanwhile keeps its slot.
  static void show_model(const std::shared_ptr<run_probe>& probe, caf::local_actor* self,
                         std::uint32_t id, const std::vector<float>* x) {
    if (!probe)
      return;
    probe->models.at(id) = x;
    self->attach_functor([probe, id, x] {
      if (probe->models.at(id) == x)
        probe->models.at(id) = nullptr;
    });
  }

  /// Likewise for node `id`'s state of type T (states<T>()).
  template <class T>
  static void show_state(const std::shared_ptr<run_probe>& probe, caf::local_actor* self,
                         std::uint32_t id, const T* state) {
    if (!probe)
      return;
    auto slots = probe->slots<T>();
    slots->at(id) = state;
    self->attach_functor([slots, id, state] {
      if (slots->at(id) == state)
        slots->at(id) = nullptr;
    });
  }

private:
  template <class T>
  [[nodiscard]] std::shared_ptr<std::vector<const T*>> slots() const {
    auto& slot = states_[std::type_index{typeid(T)}];
    if (!slot)
      slot = std::make_shared<std::vector<const T*>>(models.size(), nullptr);
    return std::static_pointer_cast<std::vector<const T*>>(slot);
  }

  /// Made on first use (a test reads what no actor registered: all null).
  mutable std::map<std::type_index, std::shared_ptr<void>> states_;
};

/// The driver's side of a multi-host run: the connected hosts' spawners and
/// where each node lives.
struct deployment {
  std::vector<caf::actor> hosts;       // spawners (see host.hpp)
  std::vector<std::string> names;      // "HOST:PORT", for messages
  std::vector<std::uint32_t> host_of;  // index = node
  std::string secret;                  // sent with every spawn request
  /// The driver's connection to each host (CAF's BASP broker owns it; -1:
  /// not found) and its peer address as getpeername() gave it, to know the
  /// socket again later (abandon_host).
  std::vector<int> sockets;
  std::vector<std::string> peers;
};

/// Packets per route a sender may have unanswered towards another process
/// (the outbox's flow-control window); `atrain calibrate` writes it into a
/// twin's link.window.
inline constexpr std::uint32_t cross_process_window = 4;

struct run_context {
  std::shared_ptr<const run_plan> plan;
  trace events;
  caf::actor_clock::time_point t0{};
  std::shared_ptr<run_probe> probe;  // may be null
  /// True when the run's nodes live in several processes (a multi-host run):
  /// in-process shortcuts (objects an algorithm's actors share) are off, and
  /// requests to other actors time out instead of waiting forever.
  bool spans_processes = false;
  /// Objects the actors of one algorithm share inside this process, made by
  /// the first node spawned here (see process_shared).
  std::map<std::string, std::shared_ptr<void>> shared;
  /// Set on the driver of a multi-host run (null: every node in this process).
  std::shared_ptr<const deployment> deploy;
  /// A run resumed from a checkpoint (checkpoint.hpp): every actor restores
  /// its state from it when spawned; null for a fresh run.
  std::shared_ptr<const proto::Checkpoint> resume;
  std::string resume_file;
  /// Multi-host runs: packets this process's outboxes sent to another
  /// process, and those the receiver answered (processed). Equal: none is on
  /// the wire or waiting for it (the host keeper's part of a checkpoint drain).
  /// The run's live log (run_log.hpp): metrics.csv rows and events.jsonl
  /// lines as the run goes; invalid when the run has no output directory.
  caf::actor log;
  std::atomic<std::uint64_t> remote_sent{0};
  std::atomic<std::uint64_t> remote_answered{0};

  [[nodiscard]] std::int64_t ns(caf::local_actor* self) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(self->clock().now() - t0).count();
  }
  [[nodiscard]] double seconds(caf::local_actor* self) const { return ns(self) * 1e-9; }

  /// How long to wait for an answer: forever in one process (a dead local
  /// actor answers with an error at once), a few seconds across processes
  /// (a request to a dead remote actor gets no answer at all).
  /// Whether some outbox of this run flow-controls its routes: towards
  /// another process, or on every route of a virtual twin (link.window).
  [[nodiscard]] bool may_flow_control() const;
  /// Whether a route does: `remote`, the receiver lives in another process.
  [[nodiscard]] bool flow_controls(bool remote) const {
    return spans_processes ? remote : may_flow_control();
  }

  [[nodiscard]] caf::duration reply_timeout() const {
    return spans_processes ? caf::duration{std::chrono::seconds{10}} : caf::duration{caf::infinite};
  }

  /// cost.message_seconds (the virtual clock, so one thread): node `node`
  /// hands a packet to a link at run time `now`; its packets leave one
  /// after another, each message_seconds after the one before (or after
  /// `now`). Returns how long this one waits to leave (0 when packets are free).
  [[nodiscard]] double departure_wait(std::uint32_t node, double now) const;

private:
  /// When each node's last packet leaves (index = node; grown on first use).
  /// Mutable: the link actors share the run context read-only.
  mutable std::vector<double> departs_at_;
};

using context_ptr = std::shared_ptr<run_context>;

/// `name`'s object of type T shared by this process's actors of the run,
/// made by `make()` on first use.
template <class T, class Make>
[[nodiscard]] std::shared_ptr<T> process_shared(run_context& ctx, const std::string& name,
                                                Make make) {
  auto& slot = ctx.shared[name];
  if (!slot)
    slot = make();
  return std::static_pointer_cast<T>(slot);
}

/// The actors of a logical node (docs/ARCHITECTURE.md "The node"). `buffer` is
/// invalid for algorithms without durable node state.
struct node_actors {
  caf::actor worker;
  caf::actor buffer;
  /// A run-wide actor living on this node (a root aggregator, a server);
  /// invalid on every other node.
  caf::actor hub;
  /// The routes the worker got with start_atom, kept for a restarted worker
  /// (empty for algorithms that cannot restart one).
  std::vector<caf::actor> worker_routes;
};

/// A crashed worker being replaced (supervision, issue 5): the supervisor
/// spawns the replacement (which keeps every message until it has its
/// state), re-points every link that ended at the dead worker, then lets the
/// algorithm hand the replacement its state (join_replacement).
struct worker_restart {
  std::uint32_t node = 0;
  /// 1 for a node's first restart, 2 for its second, ...
  std::uint64_t incarnation = 1;
  caf::actor_addr dead;  // the crashed worker
  caf::actor replacement;
  std::vector<node_actors> nodes;  // the run's nodes; nodes[node].worker = replacement
  link_list links;                 // every link actor of the run
  /// The run's last checkpoint (null: none taken or resumed from yet).
  std::shared_ptr<const proto::Checkpoint> checkpoint;
};

/// Called by the algorithm once the replacement runs, naming where its
/// model came from ("node 3's model", ...).
using restart_started = std::function<void(const std::string& source)>;

/// The nodes' workers, index = node.
[[nodiscard]] inline std::vector<caf::actor> workers_of(const std::vector<node_actors>& nodes) {
  std::vector<caf::actor> out;
  out.reserve(nodes.size());
  for (const auto& n : nodes)
    out.push_back(n.worker);
  return out;
}

/// Converts seconds of the run clock to a CAF duration.
[[nodiscard]] inline caf::timespan to_timespan(double seconds) {
  return caf::timespan{static_cast<std::int64_t>(seconds * 1e9)};
}

/// Sends `msg...` to `dest` after `delay` seconds; a plain send when the delay
/// is zero (a zero delayed_send still detours through the real clock thread).
template <class Self, class Dest, class... Ts>
void send_after(Self* self, const Dest& dest, double delay, Ts&&... xs) {
  if (delay <= 0)
    self->send(dest, std::forward<Ts>(xs)...);
  else
    self->delayed_send(dest, to_timespan(delay), std::forward<Ts>(xs)...);
}

}  // namespace atrain
