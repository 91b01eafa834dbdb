#pragma once
/// `atrain compare`: the same task under several algorithms and seeds, one
/// table, one JSON summary and figures. The aggregation and the table are
/// plain functions on run figures so that tests can check them directly.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "atrain.pb.h"
#include "commands.hpp"

namespace atrain::cli {

/// The algorithm names `compare` accepts (config/algorithms/NAME.textproto).
[[nodiscard]] std::vector<std::string> compare_algorithm_names();

/// Mean and sample standard deviation (n - 1 in the denominator; 0 when n < 2).
struct summary {
  std::size_t n = 0;
  double mean = 0;
  double std = 0;
};

[[nodiscard]] summary summarize(const std::vector<double>& xs);

/// The key figures of one run (one algorithm, one seed).
struct run_figures {
  std::uint64_t seed = 0;
  /// The run produced a report without an error.
  bool completed = false;
  std::string error;
  std::optional<double> time_to_target;
  std::optional<double> sustained_time_to_target;
  double final_accuracy = 0;
  double final_train_loss = 0;
  /// The least test accuracy of the nodes' own models at the stop (absent
  /// when the run scored none: eval.node_models 0).
  std::optional<double> worst_node_accuracy;
  double gradients = 0;
  double bytes_per_node = 0;
  double messages = 0;
  double packets_dropped = 0;
  double staleness_mean = 0;
  double staleness_max = 0;
  double consensus_error = 0;
  double duration_seconds = 0;
  double wall_seconds = 0;
  std::string stop_reason;
  std::string trace_hash;
  std::vector<double> node_staleness;  ///< per_node[i].staleness_mean
};

[[nodiscard]] run_figures figures_of(const proto::RunReport& r);

/// One algorithm's runs and what they add up to (completed runs only).
struct algorithm_result {
  std::string name;
  std::string config;  ///< the file its algorithm block came from
  std::vector<run_figures> runs;

  std::size_t completed = 0;
  std::size_t failed = 0;
  std::size_t reached = 0;
  summary time_to_target;  ///< over the runs that reached the target
  summary final_accuracy;
  summary final_train_loss;
  summary worst_node_accuracy;  ///< over the runs that scored their nodes
  summary gradients;
  summary bytes_per_node;
  summary staleness_mean;
  std::vector<double> node_staleness;  ///< per node, mean over completed runs
  /// allreduce's mean time to target / this one's, when both reached it in every run.
  std::optional<double> speedup;

  [[nodiscard]] bool all_reached() const noexcept { return completed > 0 && reached == completed; }
};

/// Fills the aggregates of every result from its runs, then the speed-ups
/// against "allreduce" when it is in the list.
void aggregate(std::vector<algorithm_result>& results);

/// The Markdown table of compare.md (header, separator, one row per algorithm).
[[nodiscard]] std::string markdown_table(const std::vector<algorithm_result>& results,
                                         double target_accuracy);

struct compare_args {
  parsed common;  ///< SPEC, --set, --out, --progress, --threads, CAF's options
  std::vector<std::string> algorithms;
  std::uint32_t seeds = 1;
};

struct invocation;

/// compare's checked arguments. Throws usage_error (options.hpp).
[[nodiscard]] compare_args compare_args_of(const invocation& in);

/// Parses compare's arguments (after "compare") through the subcommand
/// table; prints what is wrong and returns false on bad input.
[[nodiscard]] bool parse_compare(const std::vector<std::string>& args, compare_args& a);

[[nodiscard]] int compare(const compare_args& a);

}  // namespace atrain::cli
