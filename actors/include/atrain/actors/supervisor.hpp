#pragma once
/// The supervisor of one run: spawns the algorithm's node actors, the links
/// and the evaluator, monitors them all, applies the stop rule (time budget,
/// gradient budget, target accuracy), and ends the run cleanly: a final
/// evaluation, the report, every actor told to exit. An unexpected crash ends
/// the run with an error that names it; injected crashes and lost hosts are
/// supervised (restart, going on without the node, or what the algorithm's
/// own recovery answers, e.g. a re-rooting: docs/RELIABILITY.md).
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

/// Where a run leaves its result when the caller is not an actor.
struct run_sink {
  std::mutex mtx;
  std::optional<proto::RunReport> report;
  std::vector<metric_sample> metrics;
};

/// Messages: (stop_atom) or (stop_atom, std::string reason) ends the run early.
/// `listener` (optional) receives (metric_atom, metric_sample) per evaluation
/// and (done_atom, report_bytes) at the end.
[[nodiscard]] caf::actor spawn_supervisor(caf::actor_system& sys, context_ptr ctx,
                                          caf::actor listener, std::shared_ptr<run_sink> sink,
                                          bool progress);

}  // namespace atrain
