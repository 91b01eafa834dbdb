#pragma once
/// The live progress line of a run on stderr (the evaluator prints it).
#include "atrain/actors/run_plan.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// One line of at most 79 columns, e.g.
/// `VIRT t=12.5/30s wall 3s 1.2k grad/s loss 0.3312 acc 0.8412/0.845 ETA 4s`:
/// the clock, run time against the budget, wall time, gradients per run
/// second, loss, accuracy against the target, and the wall time left by the
/// time or gradient budget (the sooner).
/// `wall`: wall-clock seconds since the run started (display only); `last`
/// ends the line.
void print_progress(const run_plan& plan, const metric_sample& row, double wall, bool last);

}  // namespace atrain
