#pragma once
/// atrain's public C++ API: run an experiment to completion, or embed a run
/// in your own actor system and watch its metrics as messages.
///
///   auto spec = atrain::load_spec("config/quickstart.textproto");
///   auto plan = atrain::prepare_run(spec);          // throws spec_error on bad input
///   auto report = atrain::run_experiment(plan);     // expected<RunReport>
///
/// Embedding (REAL clock) inside a service's own actor_system:
///   atrain::register_message_types(cfg);            // before the system exists
///   auto run = atrain::spawn_run(sys, plan, my_listener);
///   // my_listener gets (metric_atom, metric_sample) per evaluation and
///   // (done_atom, report_bytes) at the end; anon_send(run, stop_atom::value)
///   // stops the run early (it still reports); request(run, infinite,
///   // join_atom::value, node) lets a node absent from the start join.
///
/// Stopping a run_experiment from another thread (a signal, a service's
/// shutdown): give it a run_control and call stop() on it; the run ends at
/// once with stop_reason "interrupted" and still reports.
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/context.hpp"
#include "atrain/actors/deploy.hpp"
#include "atrain/actors/run_plan.hpp"
#include "atrain/messages/spec.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// Stops a run from any thread, at any time (before the run starts too):
/// the run's supervisor gets a stop message and the run ends as with its own
/// stop rules, with every actor stopped and the report (and the rows so far)
/// written. REAL clock: at once. VIRTUAL clock: the driving thread applies it
/// before its next step, at the current virtual time (the same stop at the
/// same step gives the same report). Only the first request counts.
class run_control {
public:
  /// Requests the stop; `reason` becomes the report's stop_reason.
  void stop(std::string reason = "interrupted");
  [[nodiscard]] bool stop_requested() const;
  /// Node `node`, absent from the start (faults.join; at_seconds 0 = "when
  /// asked"), joins the running job: REAL clock at once, VIRTUAL clock
  /// before the driving thread's next step. A node that is not absent is
  /// refused: events.jsonl gets a "join_refused" line saying why (an
  /// embedding service that requests (join_atom, node) of spawn_run's actor
  /// gets that error as the answer).
  void join(std::uint32_t node);

  /// Engine side: the run's supervisor; `direct` (REAL clock) sends a stop
  /// from stop()'s thread, else take() hands it to the driving thread.
  void attach(const caf::actor& supervisor, bool direct);
  void detach();
  /// VIRTUAL clock: the pending stop's reason (once).
  [[nodiscard]] std::optional<std::string> take();
  /// VIRTUAL clock: the joins asked for since the last call.
  [[nodiscard]] std::vector<std::uint32_t> take_joins();

private:
  mutable std::mutex mtx_;
  caf::actor_addr sup_;
  bool direct_ = false;
  bool requested_ = false;
  std::optional<std::string> pending_;
  std::vector<std::uint32_t> joins_;
};

struct run_options {
  /// Live progress line on stderr; default: the spec's `progress`, else
  /// whether stderr is a terminal.
  std::optional<bool> progress;
  /// Test hook (virtual clock only): trackers readable between steps.
  std::shared_ptr<run_probe> probe;
  /// Worker threads for the REAL clock (0 = number of cores).
  std::size_t threads = 0;
  /// REAL clock: applied to the actor system's config last, before the system
  /// starts (the CLI passes CAF's own `--caf#...` options through it); an
  /// error ends the run before it starts.
  std::function<caf::error(caf::actor_system_config&)> configure_system;
  /// Multi-host run (REAL clock): these values win over the spec's deploy
  /// block; with no hosts at all, every node runs in this process.
  deploy_options deploy;
  /// Resume from this checkpoint (from load_checkpoint, which checked it
  /// against the plan); `resume_file` names it in the report.
  std::shared_ptr<const proto::Checkpoint> resume;
  std::string resume_file;
  /// Output directory: DIR/metrics.csv and DIR/events.jsonl are written as
  /// the run goes (each line flushed); empty: no live files. report.json and
  /// report.pb come at the end from write_outputs.
  std::string out_dir;
  /// Stops the run from another thread (run_control::stop); may be null.
  std::shared_ptr<run_control> control;
};

/// Runs the plan on the clock its spec names and blocks the caller until the
/// run ends. An error (an actor failed, the run could not start) comes back
/// as a caf::error; a report with `error` set is also possible when a run
/// ended badly but still produced figures.
[[nodiscard]] caf::expected<proto::RunReport> run_experiment(std::shared_ptr<const run_plan> plan,
                                                             const run_options& opts = {});

/// Spawns a REAL-clock run inside `sys` (whose config went through
/// register_message_types). Returns the run's supervisor.
[[nodiscard]] caf::expected<caf::actor> spawn_run(caf::actor_system& sys,
                                                  std::shared_ptr<const run_plan> plan,
                                                  caf::actor listener, bool progress = false);

/// A virtual-clock run that a test (or a tool) drives step by step.
class virtual_run {
public:
  explicit virtual_run(std::shared_ptr<const run_plan> plan, run_options opts = {});
  ~virtual_run();
  virtual_run(const virtual_run&) = delete;
  virtual_run& operator=(const virtual_run&) = delete;

  /// Runs one ready job, or when none is ready advances virtual time to the
  /// next timer. Returns false once nothing is left to do.
  bool step();
  /// Steps until the run is over; returns the report.
  [[nodiscard]] caf::expected<proto::RunReport> run();
  [[nodiscard]] run_context& context() noexcept { return *ctx_; }
  [[nodiscard]] double now_seconds() const;
  /// Messages (scheduler jobs) processed so far, and virtual-time advances.
  [[nodiscard]] std::uint64_t jobs() const noexcept { return jobs_; }
  [[nodiscard]] std::uint64_t advances() const noexcept { return advances_; }

private:
  struct impl;
  std::unique_ptr<impl> impl_;
  context_ptr ctx_;
  std::uint64_t jobs_ = 0;
  std::uint64_t advances_ = 0;
};

/// Writes DIR/report.json, DIR/metrics.csv (the report's rows: the same as
/// the live file of a run with out_dir DIR) and DIR/report.pb (binary
/// RunReport). Creates DIR. Returns an error naming the file that could not be written.
[[nodiscard]] caf::expected<void> write_outputs(const proto::RunReport& report,
                                                const std::string& dir);

}  // namespace atrain
