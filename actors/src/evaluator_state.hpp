#pragma once
/// The evaluator's state and the report it fills, shared by evaluator.cpp
/// (the actor) and evaluator_report.cpp (the report's sections). Private to
/// actors/src.
#include <chrono>
#include <functional>
#include <map>
#include <optional>

#include "atrain/actors/context.hpp"
#include "atrain/actors/evaluator_actor.hpp"

namespace atrain::eval {

/// What one evaluation collects from the nodes and links.
struct gathering {
  std::vector<model_snapshot> models;
  std::optional<model_snapshot> server;  // the evaluated hub's, when there is one
  std::uint64_t buffer_messages = 0;
  std::uint64_t buffer_bytes = 0;
  std::vector<std::uint64_t> node_buffer_messages;  // index = node: the part of each buffer
  std::vector<std::uint64_t> node_buffer_bytes;
  std::vector<std::vector<route_traffic>> node_buffer_wire;  // multi-host: buffers' routes
  std::uint64_t rejected = 0;
  std::uint64_t old_epoch = 0;  // packets dropped for another tracking epoch
  std::vector<link_stats> links;
  std::vector<mass_account> masses;
  std::size_t pending = 0;
  /// Index = node: replies still awaited from its worker and buffer, and
  /// whether its worker's is one. A node whose host is lost is settled at
  /// once (settle_lost_node) instead of after the reply timeout; replies
  /// that come later are ignored.
  std::vector<std::uint32_t> awaiting;
  std::vector<bool> worker_awaited;
  std::vector<bool> settled;
  std::vector<std::string> errors;
  std::function<void(const gathering&)> done;  // runs when pending reaches 0
};
using gathering_ptr = std::shared_ptr<gathering>;

struct eval_state;
/// The evaluator itself, as its helpers see it.
using eval_ptr = evaluator_actor::stateful_pointer<eval_state>;

struct eval_state {
  context_ptr ctx;
  std::vector<node_actors> nodes;
  link_list links;
  caf::actor server;  // the hub holding the evaluated model; invalid when none does
  evaluator_listener supervisor;
  metric_log log;  // the run log's rows (invalid: no log)
  bool progress = false;
  std::unique_ptr<model> m;
  dataset train_subset;
  proto::RunReport report;
  bool stop_sent = false;
  bool finished = false;
  /// Injected crashes (supervision): a node's worker (buffer) is down until
  /// restarted; counters of dead incarnations are kept in `retired` (as of
  /// their last evaluation) so the report still counts their work.
  std::vector<bool> worker_down;
  std::vector<bool> buffer_down;
  std::vector<model_snapshot> last;
  std::vector<model_snapshot> retired;
  std::map<std::size_t, std::string> fault_effects;  // describe() index -> what happened
  std::vector<proto::FaultRecord> unplanned;         // nodes lost with their host
  /// A tree pair: the current common root, whose model is evaluated, and
  /// the view (tracking epoch) of the run; both change with a new view.
  std::uint32_t root = 0;
  std::uint32_t epoch = 0;
  /// A re-rooting's recovery: from the loss until the evaluated model's test
  /// accuracy is back at its last value before the loss.
  struct recovery {
    std::uint64_t fault = 0;    // describe() index, or unplanned_fault
    std::size_t unplanned = 0;  // unplanned_fault: its records are unplanned[unplanned ..
    std::size_t records = 0;    //   unplanned + records) (one per node of the lost host)
    double lost_at = 0;
    double accuracy_before = 0;
    std::optional<double> back_at;
  };
  std::vector<recovery> recoveries;
  /// Straggler detection: each node's (gradients, busy seconds) at the last
  /// evaluation, and what was found so far (index = node).
  std::vector<std::pair<std::uint64_t, double>> heartbeat;
  std::map<std::uint32_t, proto::Straggler> stragglers;
  /// Checkpoints: when the next periodic evaluation is due (run ns), how
  /// many evaluations are gathering, and state requests waiting for them.
  std::int64_t next_eval_ns = 0;
  int gathering = 0;
  std::vector<std::weak_ptr<eval::gathering>> open;  // gatherings not yet done
  std::vector<caf::response_promise> state_waiting;
  /// The live log (run_log.hpp): faults seen acting so far (index =
  /// describe()), and the wall clock of the progress line (display only).
  std::vector<bool> fault_seen;
  std::chrono::steady_clock::time_point wall_start = std::chrono::steady_clock::now();
};

/// How often each injected fault acted, summed over the compute units and
/// links that counted it.
[[nodiscard]] std::vector<std::uint64_t> fault_hits(std::size_t faults, const gathering& g);

/// From the rows as they stand (the final one may have replaced a periodic
/// one): the first time at the target, and the best accuracy with its time.
void summarize_rows(proto::RunReport& r, const stop_settings& stop);

/// The report's totals, per-node counters, evaluated model, faults,
/// stragglers and quarantines from the final gathering and row.
void fill_report(eval_state& st, const gathering& g, const metric_sample& row);
/// Report-only (one pass over every shard): zeta^2 at `x`, the evaluated model
/// at the stop, into the report's data split.
void record_final_heterogeneity(eval_state& st, const std::vector<float>& x);

// ---- gatherings (evaluator_gather.cpp)

/// a's counters plus b's (params stay a's).
[[nodiscard]] model_snapshot add_counters(model_snapshot a, const model_snapshot& b);
/// The counters of node i's dead incarnations, without a model.
[[nodiscard]] model_snapshot retired_only(const eval_state& st, std::size_t i);
/// One more reply awaited from node i (its worker's when `worker`).
void await_node(gathering& g, std::size_t i, bool worker);
/// A reply from node i came: false when the node was settled already (its
/// host lost meanwhile), and the reply is to be ignored.
[[nodiscard]] bool answered(gathering& g, std::size_t i, bool worker);
/// Node k's host is lost: the gatherings waiting on it go on without it now
/// (its counters as of the last evaluation) rather than after the reply
/// timeout (issue 16: a host frozen just before the final evaluation).
void settle_lost_node(eval_state& st, std::uint32_t k);
/// Drops the gatherings that are done from eval_state::open.
void forget_finished(eval_state& st);

// ---- checkpoints (evaluator_checkpoint.cpp)

/// The next periodic evaluation in `delay` (its due time kept for checkpoints).
void arm_eval(eval_ptr self, caf::timespan delay);
/// The evaluator's state, serialized (EvaluatorState).
[[nodiscard]] std::string save_evaluator(const eval_state& st);
/// A resumed run: the rows so far, the heartbeats, the next evaluation at
/// its old time; a stop rule the last row already meets stops the run at once.
void restore_evaluator(eval_ptr self);

}  // namespace atrain::eval
