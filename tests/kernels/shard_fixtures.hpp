#pragma once
// What the shard tests share.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "atrain/kernels/dataset.hpp"

namespace atrain::test {

/// Mean over nodes of the fraction of the node's samples in its top class, counted here.
inline double mean_max_class_fraction(const shards& s, const std::vector<std::int32_t>& labels,
                                      std::size_t classes) {
  double total = 0;
  for (const auto& shard : s) {
    std::vector<std::size_t> hist(classes, 0);
    for (std::uint32_t i : shard)
      ++hist[static_cast<std::size_t>(labels[i])];
    total += static_cast<double>(*std::max_element(hist.begin(), hist.end())) /
             static_cast<double>(shard.size());
  }
  return total / static_cast<double>(s.size());
}

}  // namespace atrain::test
