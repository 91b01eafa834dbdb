/// Time to target (issue 17): judged on the evaluated model (the default) or
/// on the worst node's own model, at the first crossing and sustained.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "atrain.pb.h"
#include "atrain/actors/settings.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// The accuracy a row is judged on under `stop`: the evaluated model's, or
/// the worst scored node's (0 when no node was scored in that row).
[[nodiscard]] double judged_accuracy(const stop_settings& stop, const metric_sample& row);
[[nodiscard]] double judged_accuracy(const stop_settings& stop, const proto::MetricRow& row);

/// "evaluated model" or "worst node".
[[nodiscard]] std::string target_basis_name(const stop_settings& stop);

/// The time of the first row k such that the mean of the `window` accuracies
/// ending at row j is >= target for every j >= k (a full window at k): from
/// there on the run stayed at the target. Rows are (time, accuracy) in order.
[[nodiscard]] std::optional<double>
sustained_time(const std::vector<std::pair<double, double>>& rows, double target,
               std::uint32_t window);

/// Sets r's time_to_target, sustained_time_to_target and target_basis from
/// its metrics rows.
void set_targets(proto::RunReport& r, const stop_settings& stop);

}  // namespace atrain
