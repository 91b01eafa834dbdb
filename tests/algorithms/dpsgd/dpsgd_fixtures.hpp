#pragma once
/// Shared by the D-PSGD restart and join tests.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "algorithms/dpsgd/dpsgd.hpp"

namespace atrain::test::dpsgd {

/// The worst relative residual, over the coordinates, of
/// sum x^{k+1} = sum x^k - gamma_k sum g across the nodes that finished
/// round k (W doubly stochastic over them).
inline double round_residual(const std::map<std::uint32_t, atrain::dpsgd_round>& by_node) {
  double worst = 0;
  const std::size_t dim = by_node.begin()->second.before.size();
  for (std::size_t j = 0; j < dim; ++j) {
    double before = 0, after = 0, step = 0;
    for (const auto& [i, d] : by_node) {
      before += d.before[j];
      after += d.after[j];
      if (!d.gradient.empty())
        step += d.gamma * d.gradient[j];
    }
    worst = std::max(worst, std::abs(after - (before - step)) / (1.0 + std::abs(after)));
  }
  return worst;
}

}  // namespace atrain::test::dpsgd
