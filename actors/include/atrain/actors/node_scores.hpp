#pragma once
/// Node-level truth (docs/ALGORITHMS.md "What is measured"): the evaluated
/// model exists only in a simulator; a deployment holds each node's own.
/// Each evaluation scores up to eval.node_models of them.
#include <cstdint>
#include <vector>

#include "atrain/kernels/dataset.hpp"
#include "atrain/kernels/model.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// Which of `live` nodes are scored: all when at most `limit`, else
/// `limit` evenly spaced ones (positions round(k (live - 1) / (limit - 1))),
/// so a run scores the same nodes at every evaluation. No randomness.
[[nodiscard]] std::vector<std::size_t> scored_positions(std::size_t live, std::uint32_t limit);

/// Fills row's node fields from the nodes' own models in `alive` (x_i, or
/// x_i / w_i for a push-sum weight w_i): mean and least test accuracy, the
/// node holding the least (the lowest id on ties), the largest train loss.
void score_nodes(model& m, const dataset& test, const dataset& train_subset,
                 const std::vector<model_snapshot>& alive, std::uint32_t limit, metric_sample& row);

}  // namespace atrain
