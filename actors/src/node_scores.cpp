#include "atrain/actors/node_scores.hpp"

#include <cmath>

namespace atrain {

std::vector<std::size_t> scored_positions(std::size_t live, std::uint32_t limit) {
  std::vector<std::size_t> out;
  if (limit == 0 || live == 0)
    return out;
  if (live <= limit || limit == 1) {
    for (std::size_t k = 0; k < std::min<std::size_t>(live, limit); ++k)
      out.push_back(k);
    return out;
  }
  for (std::uint32_t k = 0; k < limit; ++k)
    out.push_back(static_cast<std::size_t>(
      std::llround(static_cast<double>(k) * static_cast<double>(live - 1) / (limit - 1))));
  return out;
}

void score_nodes(model& m, const dataset& test, const dataset& train_subset,
                 const std::vector<model_snapshot>& alive, std::uint32_t limit,
                 metric_sample& row) {
  const auto picks = scored_positions(alive.size(), limit);
  if (picks.empty())
    return;
  std::vector<float> z;
  double sum = 0;
  row.node_test_accuracy_min = 2;  // above any accuracy
  row.node_train_loss_max = -1;
  for (const auto k : picks) {
    const auto& s = alive[k];
    const float* x = s.params.ptr();
    if (s.weight != 1) {  // push-sum: the node's estimate is x_i / w_i
      z.resize(s.params.size());
      for (std::size_t j = 0; j < z.size(); ++j)
        z[j] = static_cast<float>(static_cast<double>(x[j]) / s.weight);
      x = z.data();
    }
    const double acc = m.accuracy(whole(test), x);
    const double loss = m.loss(whole(train_subset), x);
    sum += acc;
    if (acc < row.node_test_accuracy_min) {
      row.node_test_accuracy_min = acc;
      row.worst_node = s.node;
    }
    row.node_train_loss_max = std::max(row.node_train_loss_max, loss);
  }
  row.nodes_evaluated = static_cast<std::uint32_t>(picks.size());
  row.node_test_accuracy_mean = sum / static_cast<double>(picks.size());
}

}  // namespace atrain
