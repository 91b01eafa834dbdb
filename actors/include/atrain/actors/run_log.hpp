#pragma once
/// The run's live log: DIR/metrics.csv (one row per evaluation) and
/// DIR/events.jsonl (one JSON object per line: evaluations, faults, crashes,
/// stragglers, hosts lost, checkpoints, the stop), each line flushed as it
/// comes so that `tail -f` shows the run. One small actor owns both files:
/// the evaluator and the supervisor send it lines (no file I/O in the
/// training actors), it ends with the supervisor it watches.
#include <cstdio>
#include <memory>
#include <string>

#include <caf/all.hpp>

#include "atrain/actors/context.hpp"

namespace atrain {

using log_atom = caf::atom_constant<caf::atom("log")>;

/// The header of metrics.csv (the report's MetricRow names).
[[nodiscard]] const char* metrics_csv_header();
/// One metrics.csv line (with its newline). The node columns are empty
/// when no node's own model was scored.
[[nodiscard]] std::string metrics_csv_line(const metric_sample& row);

/// A metrics row to and from its report form (every field).
[[nodiscard]] metric_sample sample_of(const proto::MetricRow& m);
void set_row(proto::MetricRow& m, const metric_sample& row);

/// Creates DIR, opens DIR/metrics.csv and DIR/events.jsonl (truncated) and
/// writes the CSV header; an error names the file and the reason.
struct run_log_files {
  std::shared_ptr<std::FILE> metrics;
  std::shared_ptr<std::FILE> events;
};
[[nodiscard]] caf::expected<run_log_files> open_run_log(const std::string& dir);

/// The writer: (metric_atom, row, bool replace_last) appends a CSV row (or
/// replaces the last one: the final evaluation at the time of the last
/// periodic one) and an "evaluation" event; (log_atom, json_object) appends
/// an event. Quits when `watched` (the supervisor, sent later as a plain
/// caf::actor message) is down.
[[nodiscard]] caf::actor spawn_run_log(caf::actor_system& sys, run_log_files files);

/// Sends `{"event": kind, "time_seconds": t, <fields>}` to the run's log
/// (`fields`: more `"key": value` pairs, comma-separated, or empty).
void log_event(caf::local_actor* self, const run_context& ctx, const std::string& kind,
               const std::string& fields = {});

}  // namespace atrain
