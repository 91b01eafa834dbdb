#pragma once
/// The interface every algorithm implements: one descriptor, defined in the
/// algorithm's own source file and listed once in registry.cpp. The shared
/// runtime (run plan, supervisor, links, checkpoints, evaluator) reads these
/// fields instead of asking which algorithm a spec names — as gloo's
/// collectives sit behind one interface. docs/ARCHITECTURE.md "Adding an
/// algorithm" says what a new one touches.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/link_codec.hpp"
#include "atrain/actors/recovery.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

/// How an algorithm's links carry its packets (link.cpp).
struct link_policy {
  /// FIFO with acknowledgements and retransmission; false: fire-and-forget
  /// (an algorithm whose packets are running sums loses nothing by a loss).
  bool acknowledged = true;
  /// Across processes, a packet waiting in the outbox behind the window is
  /// replaced by a newer one of its kind (running sums: only the newest
  /// matters)...
  bool newest_wins = false;
  /// ... or absorbs the next contiguous one of its kind (summed gradients).
  bool outbox_sums = false;
  /// Whether a packet waiting on an acknowledged link absorbs the next
  /// contiguous one (when its block asks); nullptr: never.
  bool (*coalesces)(const algorithm_config& c) = nullptr;
  /// Links end at the workers and are re-pointed at a restarted one; false:
  /// they end at buffers, which a worker's restart keeps.
  bool follow_restarts = true;
  /// A restarted worker is sent the link's last packet again (the round it
  /// missed).
  bool replay_on_restart = false;
  /// How each stream (packet kind) is coded under link.codec; nullptr: the
  /// algorithm's packets are never coded (the spec's codec is refused).
  stream_coding (*coding)(std::uint32_t kind) = nullptr;
};

/// What the evaluator and the report need to know of an algorithm.
struct evaluation_policy {
  /// The report's evaluated_model when several node models are averaged
  /// (nullptr: "node average").
  const char* average_label = nullptr;
  /// Its buffers keep a mass account (running sums ρ): the report gets this
  /// conservation residual over their accounts, and buffer statistics count
  /// the packets dropped for an old tracking epoch; nullptr: none.
  double (*mass_residual)(const std::vector<mass_account>& accounts,
                          double* phi_residual) = nullptr;
  /// The node whose hub holds the evaluated model (a server's);
  /// nullptr: the nodes' models are evaluated.
  std::optional<std::uint32_t> (*evaluated_hub)(const algorithm_config& c) = nullptr;
  /// What that hub is called in reports and errors.
  const char* hub_label = "hub";
};

using spawn_node_fn = node_actors (*)(caf::event_based_actor* parent, const context_ptr& ctx,
                                      std::uint32_t i);
using wire_fn = void (*)(caf::event_based_actor* sup, const context_ptr& ctx,
                         std::vector<node_actors>& nodes, link_list& links);
using spawn_replacement_fn = caf::actor (*)(caf::event_based_actor* sup, const context_ptr& ctx,
                                            std::uint32_t k, std::uint64_t incarnation);
using join_fn = void (*)(caf::event_based_actor* sup, const context_ptr& ctx,
                         const worker_restart& r, restart_started started);
/// Empty when node i's saved state fits the plan, else why not.
using check_node_fn = std::string (*)(const proto::NodeState& s, std::uint32_t i,
                                      const run_plan& plan);
/// Empty when the whole checkpoint fits the plan, else why not.
using check_checkpoint_fn = std::string (*)(const proto::Checkpoint& ck, const run_plan& plan);
/// Throws spec_error (naming `topology`) when the built graphs cannot run it.
using check_topology_fn = void (*)(const loaded_spec& ls, const topology& topo);
/// Its spec block as its typed config (a pure copy: the block is checked by
/// check_block, defaults resolved here).
using parse_block_fn = std::shared_ptr<const algorithm_config> (*)(const proto::AlgorithmSpec& a);

/// The spec's straggler policy as the synchronous baselines branch on it.
[[nodiscard]] inline straggler_policy straggler_policy_of(proto::StragglerPolicy p) noexcept {
  return p == proto::SKIP ? straggler_policy::skip : straggler_policy::wait;
}

struct algorithm_descriptor {
  proto::AlgorithmSpec::KindCase kind = proto::AlgorithmSpec::KIND_NOT_SET;
  /// The spec block (`algorithm { NAME { ... } }`) and, unless `label` says
  /// otherwise, the name in reports.
  const char* name = "";
  /// The report's name when the block decides it (a variant of the rule).
  std::string (*label)(const algorithm_config& c) = nullptr;
  /// Checks its own spec block (algorithm.NAME.*: step-size schedule, ranges),
  /// reporting each problem at its field path through `c`; check_spec passes
  /// it to validate() (spec_facts::check_block), in its place among the
  /// others. Defined in algorithms/NAME/NAME_spec.cpp; nullptr: not checked.
  void (*check_block)(spec_checker& c, const proto::AlgorithmSpec& a) = nullptr;
  /// Parses that block once into its NAME_config (NAME_spec.cpp): prepare_run
  /// keeps it in the plan (run_plan::config<NAME_config>()), and the hooks
  /// here that depend on the block take it. Every algorithm has one.
  parse_block_fn parse = nullptr;

  // ---- the plan
  /// Builds G_R / G_C from the spec's `topology` (the others talk over node ids).
  bool uses_topology = false;
  check_topology_fn check_topology = nullptr;
  /// Runs one node whatever `nodes` says.
  bool single_node = false;

  // ---- spawning
  spawn_node_fn spawn_node = nullptr;
  wire_fn wire = nullptr;

  // ---- what it survives, and recovery
  /// Why the run cannot go on once a node is lost for good; nullptr: it can.
  const char* needs_every_node = nullptr;
  /// The node whose loss ends the run whatever else (a server's).
  std::optional<std::uint32_t> (*critical_node)(const algorithm_config& c) = nullptr;
  /// What that node holds, for the error ("the server").
  const char* critical_role = "";
  /// Its own way through lost nodes and restarts (recovery.hpp); nullptr:
  /// the supervisor's (the run goes on without a lost node, a crashed worker
  /// is replaced as below).
  make_recovery_fn recovery = nullptr;
  /// A replacement for a crashed worker that keeps every message until
  /// `join` hands it its state; nullptr: none (or `recovery` restarts it).
  spawn_replacement_fn spawn_replacement = nullptr;
  join_fn join = nullptr;
  /// Why crashed node k cannot be restarted whole, worker and buffer (a hub
  /// of the run lives on it and its state nowhere else); nullptr: it can.
  std::string (*whole_restart_refusal)(const algorithm_config& c, std::uint32_t k) = nullptr;
  /// Why a whole-node restart cannot be combined with checkpoints (nullptr: it can).
  const char* whole_restart_unsaved = nullptr;
  /// What a node joining the running job (faults.join: absent from the
  /// start) does, the algorithm's way — said in docs and checked by its join
  /// test; nullptr: it takes no joins (the spec check refuses faults.join).
  /// The supervisor stops an absent node's actors before the run's first
  /// event (a whole node down, as a crash would leave it) and, at the join,
  /// restarts it as after that crash: `recovery`'s join, else
  /// spawn_replacement and `join` (docs/RELIABILITY.md "Joining nodes").
  const char* joins = nullptr;

  // ---- checkpoints (the common NodeState fields are checked by the runtime)
  /// Its own part of a node's state (NodeState's `part`); a node whose part
  /// is set to another is refused. PART_NOT_SET: it saves none.
  proto::NodeState::PartCase node_part = proto::NodeState::PART_NOT_SET;
  check_node_fn check_node = nullptr;
  check_checkpoint_fn check_checkpoint = nullptr;

  link_policy links;
  evaluation_policy evaluation;
};

/// A spawn_replacement_fn from a spawner that does not need the incarnation.
template <caf::actor (*Spawn)(caf::event_based_actor*, const context_ptr&, std::uint32_t)>
caf::actor ignoring_incarnation(caf::event_based_actor* sup, const context_ptr& ctx,
                                std::uint32_t k, std::uint64_t) {
  return Spawn(sup, ctx, k);
}

/// Every algorithm this engine implements (registry.cpp).
[[nodiscard]] const std::vector<algorithm_descriptor>& algorithm_registry();
/// The algorithm of a spec's oneof case; null when none implements it.
[[nodiscard]] const algorithm_descriptor* find_algorithm(proto::AlgorithmSpec::KindCase kind);
/// The spec's algorithm; throws std::invalid_argument when none implements it.
[[nodiscard]] const algorithm_descriptor& algorithm_of(const proto::ExperimentSpec& spec);

}  // namespace atrain
