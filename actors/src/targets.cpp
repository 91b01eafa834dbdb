/// Time to target, first and sustained (see targets.hpp).
#include "atrain/actors/targets.hpp"

namespace atrain {

namespace {

double judged(const stop_settings& stop, double test, double worst, std::uint32_t scored) {
  if (!stop.worst_node)
    return test;
  return scored > 0 ? worst : 0.0;
}

}  // namespace

double judged_accuracy(const stop_settings& stop, const metric_sample& row) {
  return judged(stop, row.test_accuracy, row.node_test_accuracy_min, row.nodes_evaluated);
}

double judged_accuracy(const stop_settings& stop, const proto::MetricRow& row) {
  return judged(stop, row.test_accuracy(), row.node_test_accuracy_min(), row.nodes_evaluated());
}

std::string target_basis_name(const stop_settings& stop) {
  return stop.worst_node ? "worst node" : "evaluated model";
}

std::optional<double> sustained_time(const std::vector<std::pair<double, double>>& rows,
                                     double target, std::uint32_t window) {
  if (window == 0 || rows.size() < window || !(target > 0))
    return std::nullopt;
  // Scan back from the end: the earliest k whose window mean, and every
  // later one, is at the target.
  std::optional<std::size_t> first;
  double sum = 0;
  for (std::size_t j = 0; j < window; ++j)
    sum += rows[rows.size() - 1 - j].second;
  for (std::size_t end = rows.size(); end >= window; --end) {  // window = rows[end-window, end)
    if (sum / window < target)
      break;
    first = end - 1;
    if (end == window)
      break;
    sum += rows[end - window - 1].second - rows[end - 1].second;
  }
  if (!first)
    return std::nullopt;
  return rows[*first].first;
}

void set_targets(proto::RunReport& r, const stop_settings& stop) {
  r.clear_time_to_target();
  r.clear_sustained_time_to_target();
  r.set_target_basis(target_basis_name(stop));
  if (!(stop.target_accuracy > 0))
    return;
  std::vector<std::pair<double, double>> rows;
  rows.reserve(static_cast<std::size_t>(r.metrics_size()));
  for (const auto& m : r.metrics()) {
    const double a = judged_accuracy(stop, m);
    rows.emplace_back(m.time_seconds(), a);
    if (a >= stop.target_accuracy && !r.has_time_to_target())
      r.set_time_to_target(m.time_seconds());
  }
  if (auto t = sustained_time(rows, stop.target_accuracy, stop.sustained_evaluations))
    r.set_sustained_time_to_target(*t);
}

}  // namespace atrain
