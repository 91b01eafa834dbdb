#pragma once
/// The evaluator samples every node's model each eval period, evaluates the
/// evaluated model (node average, the common root's model on a tree pair, or
/// a hub's model), tells the supervisor, draws the progress
/// line, and builds the run report.
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/evaluator_actor.hpp"

namespace atrain {

/// The fault index of a node lost without an injected fault (its host was
/// lost): its crash_atom's effect becomes a "host_lost" record of the report.
inline constexpr std::uint64_t unplanned_fault = ~std::uint64_t{0};

/// Messages it understands:
///   (eval_atom)              periodic evaluation (it arms its own timer)
///   (crash_atom, node, buffer_gone, fault, effect)  the node's worker is gone
///   (epoch_atom, epoch, root, new_links, buffers_gone, fault, records, lost_at)
///       a new view (re-rooting): the tree's evaluated root, links to count,
///       buffers retired, and the loss (its fault, or the last `records`
///       host_lost records) whose recovery time the report gives
///   (final_atom) -> report_bytes   last evaluation and the finished report
/// `server` (may be invalid) answers (model_atom) with a model_snapshot like
/// a worker: its params are the evaluated model, its counters are added to
/// its node's.
/// It sends (metric_atom, metric_sample) and, when the stop rule says so,
/// (stop_atom, std::string reason) to `supervisor`.
[[nodiscard]] evaluator_actor spawn_evaluator(caf::event_based_actor* supervisor,
                                              const context_ptr& ctx,
                                              std::vector<node_actors> nodes, link_list links,
                                              caf::actor server, bool progress);

}  // namespace atrain
