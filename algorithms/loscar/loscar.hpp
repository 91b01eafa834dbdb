#pragma once
/// LOSCAR-SGD, local SGD with overlapped, sparse, delay-corrected averaging
/// (ALGORITHMS.md §3): the coordinate sample, the merge and the per-worker
/// step counts as pure functions, the spawn function, and a test hook on the
/// merges the workers applied.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/node_actor.hpp"

namespace atrain {

/// A worker: node_actor's messages (its drain poll also asks the aggregator
/// on node a) and
using loscar_worker_actor = node_actor::extend<
  // the wiring (wire_star): its route to the aggregator, then its start;
  caf::reacts_to<init_atom, caf::actor>, caf::reacts_to<start_atom>,
  // its gradient's wake (its own timer: the step count it was started at);
  caf::reacts_to<wake_atom, std::uint64_t>,
  // the aggregator's means (a link, or the aggregator itself on node a);
  caf::reacts_to<deliver_atom, packet>,
  // a replacement's join, from the aggregator: the round, the aggregator's
  // average A, its route to the aggregator.
  caf::reacts_to<start_atom, std::uint64_t, float_blob, caf::actor>>;

/// The root aggregator (node a's hub and buffer). No worker, so not
/// node_actor.
using loscar_aggregator_actor = caf::typed_actor<
  // The wiring (wire_star): its routes to every worker (index = node).
  caf::reacts_to<init_atom, std::vector<caf::actor>>,
  // The workers' vectors (their links; worker a directly).
  caf::reacts_to<deliver_atom, packet>,
  // The evaluator: (messages, bytes, rejected).
  caf::replies_to<stats_atom>::with<std::uint64_t, std::uint64_t, std::uint64_t>,
  // The evaluator, multi-host runs: its routes to other processes.
  caf::replies_to<wire_atom>::with<std::vector<route_traffic>>,
  // Worker a's drain poll (< 0: quiet); the checkpoint barrier's state request.
  caf::replies_to<ckpt_drain_atom>::with<double>,
  caf::replies_to<ckpt_state_atom>::with<std::string>,
  // Supervision (join_loscar_worker): worker k (dead incarnation, its
  // replacement, the replacement's route here) -> (round it joins, dropped).
  caf::replies_to<restart_atom, std::uint32_t, caf::actor_addr, caf::actor,
                  caf::actor>::with<std::uint64_t, bool>>;

/// Packet streams of LOSCAR-SGD (seq = round + 1 on both): a worker's
/// y_i[S_r] to the aggregator, and the aggregator's mean m_r to every worker.
/// Both carry K floats in the order of loscar_sample.
enum loscar_stream : std::uint32_t { loscar_up = 41, loscar_down = 42 };

/// K = max(1, round(p d)), at most d.
[[nodiscard]] std::size_t loscar_k(double sparsity, std::size_t dim);

/// S_r: K distinct coordinates of [0, dim), uniform without replacement
/// (partial Fisher-Yates), from a generator seeded by
/// derive_seed(derive_seed(run_seed, 'LOSC'), round); sorted ascending.
/// Every worker calls this with the same arguments: the indices are never sent.
[[nodiscard]] std::vector<std::uint32_t> loscar_sample(std::uint64_t run_seed, std::uint64_t round,
                                                       std::size_t dim, std::size_t k);

/// Step 5 on x, which holds z_i on entry. y_s = y_i[S], mean = m_r (both K
/// values aligned with `sample`).
///   naive = false (DELAY_CORRECTED): x[S] += mean - y_s
///   naive = true  (NAIVE):           x[S]  = mean
void loscar_merge(std::vector<float>& x, const std::vector<std::uint32_t>& sample, const float* y_s,
                  const float* mean, bool naive);

/// N_i and Q_i of one worker (see loscar.cpp for the formulas).
struct loscar_steps {
  std::uint32_t local = 1;    // N_i
  std::uint32_t overlap = 0;  // Q_i
};

/// The step counts of every worker from the plan: overrides, or N_i from
/// round_seconds and tau_i, Q_i from the expected in-flight window.
[[nodiscard]] std::vector<loscar_steps> loscar_schedule(const run_plan& plan);

/// One merge as a worker applied it (test probe only).
struct loscar_merge_record {
  std::uint64_t round = 0;
  std::uint32_t overlap = 0;          // local steps taken between y_i and the merge
  std::vector<std::uint32_t> sample;  // S_r as this worker drew it
  std::vector<float> y_s;             // y_i[S_r], what it sent
  std::vector<float> mean;            // m_r, what it received
  std::vector<float> z;               // z_i, the model before the merge
  std::vector<float> x;               // x_i after the merge
};

/// Test hook (virtual clock with a run_probe only, between two scheduler
/// steps): moves out the merges the LOSCAR worker at `worker` applied since
/// the last call. Empty for any other actor or once it is gone.
[[nodiscard]] std::vector<loscar_merge_record> loscar_take_merges(const caf::actor_addr& worker);

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
/// The root aggregator lives on node `aggregator` (its hub, also its buffer,
/// so the evaluator counts its traffic and rejections).
[[nodiscard]] node_actors spawn_loscar_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                            std::uint32_t i);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it.
/// LOSCAR's part of checkpoint `ck` against `plan` (checkpoint.hpp,
/// load_checkpoint): the workers' and the aggregator's round vectors have K
/// values, the aggregator's senders are nodes of the run, no worker is
/// past the aggregator's round or behind the round before it. Empty when
/// fine, else the reason.
[[nodiscard]] std::string loscar_check_checkpoint(const proto::Checkpoint& ck,
                                                  const run_plan& plan);

/// Restart (docs/RELIABILITY.md): worker k's replacement, which keeps every
/// message until the aggregator starts it.
[[nodiscard]] caf::actor spawn_loscar_replacement(caf::event_based_actor* sup,
                                                  const context_ptr& ctx, std::uint32_t k);

/// Tells the aggregator: worker r.node is replaced; it drops the node from
/// the round in progress unless its vector is in and starts the replacement
/// in the next round with its last average.
void join_loscar_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                        const worker_restart& r, restart_started started);

void wire_loscar(caf::event_based_actor* sup, const context_ptr& ctx,
                 std::vector<node_actors>& nodes, link_list& links);

/// proto::Loscar::Merge (MERGE_UNSPECIFIED = delay_corrected).
enum class loscar_merge_rule { delay_corrected, naive };

/// Its spec block, parsed once (loscar_spec.cpp; run_plan::config<loscar_config>()).
struct loscar_config : algorithm_config {
  static constexpr const char* name = "loscar";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  double sparsity = 1;                         // fraction p of coordinates averaged per round
  double round_seconds = 0;                    // T_comp: N_i = max(1, round(T_comp / tau_i)) ...
  std::optional<std::uint32_t> local_steps;    // ... unless N_i is given
  std::optional<std::uint32_t> overlap_steps;  // Q_i for every worker; absent: from the link
  bool blocking = false;                       // Q_i = 0, wait for the average
  loscar_merge_rule merge = loscar_merge_rule::delay_corrected;
  std::uint32_t aggregator = 0;  // the node hosting the aggregator
};

/// Its spec block's checks (loscar_spec.cpp; algorithm_descriptor::check_block).
void loscar_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
/// Its block as a loscar_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
loscar_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
