#pragma once
/// Everything a run needs, prepared and checked before any actor starts:
/// datasets loaded and verified, shards drawn, topology built (common root
/// checked), per-node costs, the initial model. A bad spec never gets as far
/// as spawning actors. The spec's settings are parsed once here
/// (settings.hpp); the actors read those, not the protobuf.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "atrain.pb.h"
#include "atrain/actors/faults.hpp"
#include "atrain/actors/settings.hpp"
#include "atrain/kernels.hpp"
#include "atrain/messages/spec.hpp"
#include "atrain/topology.hpp"

namespace atrain {

struct algorithm_descriptor;

/// The run's common settings are its base (plan.seed, plan.stop.time_seconds, ...).
struct run_plan : run_settings {
  /// The spec as loaded, for output only: the checkpoint and the hosts get a
  /// copy, and a checkpoint's compatibility check compares it. Actors read
  /// the settings above and their algorithm's config instead.
  proto::ExperimentSpec spec;
  /// The spec's algorithm (never null once prepared).
  const algorithm_descriptor* descriptor = nullptr;
  /// The report's name for it (algorithm_name_of).
  std::string label;
  /// Its spec block, parsed once by the descriptor (never null once prepared).
  std::shared_ptr<const algorithm_config> algo_config;
  std::string spec_file;
  std::string base_dir;  // the spec file's directory (relative dataset paths)
  /// The training rows: all of them (the driver, a one-process run), or on an `atrain
  /// node` host (prepare_host_run) only its nodes' shards, node after node (row_offset).
  std::shared_ptr<const dataset> train;
  /// May equal train when no test set is given; empty (train's shape) on a host.
  std::shared_ptr<const dataset> test;
  shards shard;                // one index list per node, rows of the whole training set
  std::size_t train_rows = 0;  // rows of the whole training set
  static constexpr std::size_t not_local = static_cast<std::size_t>(-1);
  std::vector<std::size_t> row_offset;         // host: node k's first row in train, or not_local
  std::optional<atrain::topology> topo;        // absent for single-node algorithms
  std::vector<double> tau;                     // seconds per gradient, per node (virtual clock)
  std::vector<double> slowdown;                // >= 1 per node (both clocks)
  fault_schedule faults;                       // injected faults (spec.faults)
  std::unique_ptr<model> prototype;            // cloned per actor
  std::vector<float> x0;                       // initial parameters (identical on every node)
  std::vector<std::uint32_t> train_eval_rows;  // rows of `train` used for train_loss
  std::size_t zeta2_rows = 0;  // > 0: zeta^2 from this many rows per shard (a CNN's cost)
  std::vector<std::string> warnings;

  [[nodiscard]] std::size_t nodes() const noexcept { return shard.size(); }
  [[nodiscard]] std::size_t dim() const noexcept { return x0.size(); }
  [[nodiscard]] bool virtual_clock() const noexcept { return clock == clock_kind::virtual_time; }
  [[nodiscard]] const std::string& algorithm_name() const noexcept { return label; }
  [[nodiscard]] const algorithm_descriptor& algorithm() const;
  /// Node k's shard as rows of `train` (its sampler's rows): shard[k] itself when train
  /// is whole, else where the host keeps them. Throws std::out_of_range for a node
  /// whose rows this host does not hold.
  [[nodiscard]] std::vector<std::uint32_t> sampler_rows(std::uint32_t k) const;
  /// Rows of `train` (node k's) as rows of the whole set, for checkpoints, and back.
  [[nodiscard]] std::vector<std::uint32_t> whole_rows(std::uint32_t k,
                                                      std::vector<std::uint32_t> rows) const;
  [[nodiscard]] std::vector<std::uint32_t> train_rows_of(std::uint32_t k,
                                                         std::vector<std::uint32_t> rows) const;
  /// The index of node k's join (faults.join) when it is absent from the start.
  [[nodiscard]] std::optional<int> join_of(std::uint32_t k) const noexcept {
    for (std::size_t j = 0; j < joins.size(); ++j)
      if (joins[j].node == k)
        return static_cast<int>(j);
    return std::nullopt;
  }
  /// The algorithm's config as its type T (T::name its block); throws
  /// std::logic_error naming both blocks when the run's algorithm is another.
  template <class T>
  [[nodiscard]] const T& config() const {
    if (!algo_config)
      throw std::logic_error(std::string{"run_plan::config: no algorithm config (wanted '"} +
                             T::name + "'; the plan was not prepared)");
    return config_as<T>(*algo_config);
  }
};

/// The spec's semantic checks with the facts only the engine knows (from the
/// algorithm's descriptor: whether it uses a topology, acknowledged links,
/// hubs a whole-node restart would lose); throws one spec_error listing every
/// problem. prepare_run starts with it.
void check_spec(const loaded_spec& ls);

/// The spec's algorithm as reports name it (its descriptor's name or label;
/// "unknown" when no algorithm implements it). registry.cpp.
[[nodiscard]] std::string algorithm_name_of(const proto::ExperimentSpec& spec);

/// The plan's data split for the report: policy, shard sizes, class histograms (when
/// nodes x classes <= 65536), zeta^2 at x0 and, with minibatch_noise (one gradient per
/// training row), sigma^2 at x0 for the spec's batch size. data_split.cpp.
[[nodiscard]] proto::DataSplit describe_split(const run_plan& plan, bool minibatch_noise);

/// For a convex model (logistic regression, an MLP without hidden layers): the
/// centralized optimum x* by full-batch L-BFGS from x0 and zeta^2 there, into
/// `split` (zeta2_optimum, optimum_loss, optimum_gradient_norm); false (nothing
/// set) for other models. Seconds on a9a, minutes on MNIST's softmax: atrain
/// shards only. data_split.cpp.
bool add_optimum_heterogeneity(const run_plan& plan, proto::DataSplit& split);

/// Loads data, builds the topology and the model. Throws spec_error naming the
/// spec file, the field and the reason (dataset errors and impossible
/// topologies included).
[[nodiscard]] std::shared_ptr<const run_plan> prepare_run(const loaded_spec& spec);

/// An `atrain node` host's plan for its nodes `local`: the same, but it keeps only
/// those nodes' training rows (an IDX set decodes only them) and loads no test set
/// (the driver evaluates), so a host's memory follows its shards, not the dataset.
[[nodiscard]] std::shared_ptr<const run_plan>
prepare_host_run(const loaded_spec& spec, const std::vector<std::uint32_t>& local);

}  // namespace atrain
