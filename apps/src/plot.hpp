#pragma once
/// `atrain plot RUN_DIR [--out DIR]`: one run's curves (test accuracy,
/// training loss, consensus error, bytes sent against run-clock time) from
/// RUN_DIR/metrics.csv, with the fault windows of RUN_DIR/report.json
/// shaded, drawn by gnuplot (apps/plot/run.gp) as DIR/run.png and run.svg.
#include <string>

namespace atrain::cli {

/// Draws the figure of the run in `run_dir` into `out_dir` ("" = run_dir).
/// Exit status: 0 drawn; 2 a missing directory or file, a metrics.csv
/// without the needed columns, an unreadable report; 1 gnuplot missing or
/// failing. Says what is wrong in one sentence on stderr.
[[nodiscard]] int plot_run(const std::string& run_dir, const std::string& out_dir);

/// Whether `program` is an executable in a directory of $PATH (gnuplot for
/// plot's and compare's figures).
[[nodiscard]] bool on_path(const std::string& program);

}  // namespace atrain::cli
