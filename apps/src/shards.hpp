#pragma once
/// `atrain shards`: the data split a run uses, for peers outside atrain
/// (bench/ddp_peer.py trains rank r on exactly node r's rows).
#include <string>

#include "atrain/actors/run_plan.hpp"
#include "commands.hpp"

namespace atrain::cli {

/// JSON of the plan's data split: the dataset files (absolute paths) and how
/// many of their first rows the run reads, whether the test set is the
/// training set, the rows the evaluator's train loss uses, and `shards`: node
/// i's training row indices (0-based rows of the training file, ascending),
/// exactly plan.shard, which is what each node's minibatch sampler draws from.
/// With `split` (describe_split), also shard_rows, class_histograms and heterogeneity
/// (ζ² and σ² at x0; ζ² at the centralized optimum for convex models).
[[nodiscard]] std::string shards_json(const loaded_spec& spec, const run_plan& plan,
                                      const proto::DataSplit* split = nullptr);

/// atrain shards SPEC [--set ...]... --out FILE (FILE "-" or no --out: stdout).
[[nodiscard]] int shards(const parsed& p);

}  // namespace atrain::cli
