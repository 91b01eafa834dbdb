#pragma once
/// The run's common settings as the actors read them: plain structs filled
/// once by prepare_run from the validated spec (settings_of), so no actor
/// reads the protobuf. Units are in the field names or beside them; each
/// field keeps the spec's meaning (messages/atrain.proto documents ranges).
/// An algorithm's own block becomes its algorithm_config (below), parsed by
/// its descriptor's `parse` in its own folder.
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "atrain/kernels/codec.hpp"

namespace atrain::proto {
class ExperimentSpec;
}  // namespace atrain::proto

namespace atrain {

/// proto::Clock.
enum class clock_kind { virtual_time, real_time };

/// What a synchronous baseline does about a late gradient (proto::StragglerPolicy).
enum class straggler_policy { wait, skip };

/// The spec's `stop`.
struct stop_settings {
  double time_seconds = 0;                   // run-clock budget; 0 = none
  std::uint64_t gradients = 0;               // total over all nodes; 0 = none
  double target_accuracy = 0;                // test accuracy in (0, 1]; 0 = none
  bool stop_at_target = false;               // end the run when the target is reached
  bool worst_node = false;                   // judge the target on the worst node's own model
  std::uint32_t sustained_evaluations = 20;  // window of the sustained time to target
};

/// The spec's `eval` as the evaluator reads it (train_loss_samples is
/// already drawn: run_plan::train_eval_rows).
struct eval_settings {
  double period_seconds = 0;      // run-clock seconds between evaluations
  std::uint32_t node_models = 0;  // nodes whose own model each evaluation scores
};

/// The spec's `cost` beyond the per-node run_plan::tau and ::slowdown.
struct cost_settings {
  double tau_seconds = 0;            // seconds per gradient, every node (virtual clock)
  std::vector<double> tau_per_node;  // as written (may be empty)
  double jitter = 0;                 // relative, each gradient tau * U[1 - j, 1 + j]
  double real_min_seconds = 0;       // REAL clock: a gradient's least duration; 0 = as measured
  double start_seconds = 0;          // VIRTUAL clock: no gradient completes before this + tau
  double message_seconds = 0;        // VIRTUAL clock: a node's cost per packet it sends
};

/// The spec's `link`: every directed link's model.
struct link_settings {
  double latency_seconds = 0;
  double bandwidth_bytes_per_second = 0;     // 0 = unlimited
  double loss = 0;                           // i.i.d. drop probability
  double duplicate = 0;                      // probability of a second delivery
  double reorder = 0;                        // probability of an extra delay ...
  double reorder_delay_seconds = 0;          // ... of at most this
  std::optional<double> retransmit_seconds;  // acknowledged links; absent = from the above
  std::uint32_t window = 0;                  // VIRTUAL: the outbox's window per route; 0 = none
  codec::codec_config codec;                 // link.codec (kind none: raw)
  std::uint32_t resync_every = 16;           // link.codec: running sums' exact message period

  /// Whether a packet is delayed, limited or lost at all (else a link may be bypassed).
  [[nodiscard]] bool active() const noexcept {
    return latency_seconds > 0 || bandwidth_bytes_per_second > 0 || loss > 0 || duplicate > 0 ||
           reorder > 0;
  }
};

/// One of the spec's `faults.crash`, in the spec's order (index = crash index).
struct crash_settings {
  std::uint32_t node = 0;
  double at_seconds = 0;  // run clock
  bool whole_node = false;
  std::optional<double> restart_after_seconds;  // absent: never restarts
};

/// A node absent from the start that joins the running job (faults.join).
struct join_settings {
  std::uint32_t node = 0;
  double at_seconds = 0;  // run clock; 0 = when the run is asked (run_control::join)
};

/// The spec's `checkpoint`.
struct checkpoint_settings {
  std::vector<double> at_seconds;  // run-clock times, increasing
  double every_seconds = 0;        // 0 = none
  std::string file;                // as written ("{k}", relative to run_plan::base_dir); "" = none
  [[nodiscard]] bool enabled() const noexcept { return !file.empty(); }
};

/// The spec's `deploy` block as written (paths not yet resolved; the command
/// line may override each: deploy_options_of).
struct deploy_settings {
  std::vector<std::string> hosts;        // "HOST:PORT"
  std::vector<std::uint32_t> placement;  // host per node; empty = round-robin
  std::string secret_file;
  std::string tls_certificate;  // all three or none
  std::string tls_key;
  std::string tls_ca;
};

/// proto::TopologySpec::Builder.
enum class topology_builder {
  unspecified,
  ring,
  directed_ring,
  exponential,
  tree_pair,
  star,
  torus,
  complete,
  random_regular,
  explicit_edges,
  directed_exponential,
  bipartite_exponential,
};

/// What of the spec's `topology` is read after the graphs are built
/// (R-FAST's re-rooting rebuilds a pair of the same kind).
struct topology_settings {
  topology_builder builder = topology_builder::unspecified;
  std::uint32_t tree_arity = 2;  // TREE_PAIR (the spec's 0 means 2)
};

/// Everything of the spec but the data, the model, the shards, the
/// algorithm's block and the faults' windows (run_plan holds those built).
struct run_settings {
  std::string name;
  std::uint64_t seed = 0;  // every random stream derives from it
  clock_kind clock = clock_kind::virtual_time;
  std::optional<bool> progress;  // the live progress line; absent = when stderr is a terminal
  std::uint32_t batch_size = 0;  // rows per minibatch
  stop_settings stop;
  eval_settings eval;
  cost_settings cost;
  link_settings link;
  std::vector<crash_settings> crashes;
  std::vector<join_settings> joins;
  checkpoint_settings checkpoint;
  deploy_settings deploy;
  topology_settings topology;
};

/// The spec's common settings (settings.cpp).
[[nodiscard]] run_settings settings_of(const proto::ExperimentSpec& spec);

/// An algorithm's own spec block (`algorithm { NAME { ... } }`) parsed once
/// by its descriptor's `parse` (algorithms/NAME/NAME_spec.cpp) into its
/// NAME_config; run_plan::config<T>() hands it to its actors. Every block
/// has a step size and its decay.
struct algorithm_config {
  algorithm_config() = default;
  algorithm_config(const algorithm_config&) = default;
  algorithm_config& operator=(const algorithm_config&) = default;
  virtual ~algorithm_config() = default;
  /// The block's name, for an error on a kind mismatch.
  [[nodiscard]] virtual const char* block() const noexcept = 0;

  double step_size = 0;  // gamma_0
  double decay = 0;      // gamma_k = step_size / (1 + decay * k)
};

/// `c` as the config of type T (whose static `name` is its block); throws
/// std::logic_error naming both blocks when it is another algorithm's.
template <class T>
[[nodiscard]] const T& config_as(const algorithm_config& c) {
  if (const auto* t = dynamic_cast<const T*>(&c))
    return *t;
  throw std::logic_error(std::string{"the run's algorithm config is the '"} + c.block() +
                         "' block, not '" + T::name + "'");
}

/// A new config of type T with the block's step size and decay.
template <class T, class Block>
[[nodiscard]] std::shared_ptr<T> config_with_steps(const Block& b) {
  auto c = std::make_shared<T>();
  c->step_size = b.step_size();
  c->decay = b.decay();
  return c;
}

}  // namespace atrain
