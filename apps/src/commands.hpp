#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace atrain {
class run_control;
struct loaded_spec;
struct run_plan;
namespace proto {
class RunReport;
}  // namespace proto
}  // namespace atrain

namespace atrain::cli {

/// CAF's own options, passed through to actor_system_config::parse.
struct caf_passthrough {
  std::vector<std::string> args;  ///< --caf#KEY=VALUE, as given
  std::string config_file;        ///< --caf-config FILE (or --caf#config-file=FILE)
  [[nodiscard]] bool empty() const noexcept { return args.empty() && config_file.empty(); }
};

/// The checked arguments of run, topology, check, shards (options.cpp makes them).
struct parsed {
  std::string spec;
  std::vector<std::string> overrides;
  std::string out;
  std::string dot;
  std::optional<bool> progress;
  // multi-host runs (atrain run): see docs/ARCHITECTURE.md "Across machines"
  std::vector<std::string> hosts;
  std::string secret_file;
  std::string tls_cert, tls_key, tls_ca;
  std::string resume;       // atrain run --resume FILE: a checkpoint of this spec
  std::size_t threads = 0;  // --threads: REAL-clock scheduler threads (0: one per core)
  caf_passthrough caf;
  // atrain calibrate's probe: changes the loaded spec (after --set) before it
  // is prepared, and is handed the run's report.
  std::function<void(loaded_spec&)> edit_spec;
  std::function<void(const proto::RunReport&)> take_report;
  bool quiet = false;  // no summary on stdout (calibrate's twin checks)
};

/// Loads, validates and prepares p.spec (the spec in *out when given); on a bad
/// spec or data, or memory running out while preparing (std::bad_alloc), prints
/// why and returns null: the caller exits 2.
[[nodiscard]] std::shared_ptr<const run_plan> prepare(const parsed& p, loaded_spec* out = nullptr);

[[nodiscard]] int run(const parsed& p);
class interrupt_guard;
/// run() stopped through `control`, whose signals `interrupt` already takes
/// (`atrain launch` guards its whole life, node start-up included).
[[nodiscard]] int run(const parsed& p, const std::shared_ptr<run_control>& control,
                      interrupt_guard& interrupt);
[[nodiscard]] int topology(const parsed& p);
[[nodiscard]] int check(const parsed& p);

}  // namespace atrain::cli
