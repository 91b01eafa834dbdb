#pragma once
// What the splits in shard.cpp, shard_skew.cpp and shard_feature.cpp share.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "atrain/kernels/dataset.hpp"

namespace atrain::shard_detail {

inline void sort_all(shards& s) {
  for (auto& v : s)
    std::sort(v.begin(), v.end());
}

/// N/n rows per node, the first N % n nodes one more: the sizes every equal-size split uses.
[[nodiscard]] inline std::vector<std::size_t> capacities(std::size_t samples, std::size_t nodes) {
  std::vector<std::size_t> cap(nodes, samples / nodes);
  for (std::size_t k = 0; k < samples % nodes; ++k)
    ++cap[k];
  return cap;
}

/// The checks every split makes on its sizes; `what` names the split in the message.
inline void check_counts(const char* what, std::size_t samples, std::size_t nodes) {
  if (nodes == 0)
    throw std::invalid_argument(std::string{what} + ": nodes must be > 0");
  if (samples > UINT32_MAX)
    throw std::invalid_argument(std::string{what} + ": too many samples for 32-bit indices");
  if (samples < nodes)
    throw std::invalid_argument(std::string{what} + ": " + std::to_string(samples) +
                                " samples cannot give each of " + std::to_string(nodes) +
                                " nodes at least one");
}

/// Row ids per class; a label outside [0, classes) is refused naming its row.
[[nodiscard]] std::vector<std::vector<std::uint32_t>>
rows_by_class(const char* what, const std::vector<std::int32_t>& labels, std::size_t classes);

/// Cuts `order` into consecutive runs of the given sizes (which add up to its length).
[[nodiscard]] shards cut(const std::vector<std::uint32_t>& order,
                         const std::vector<std::size_t>& sizes);

}  // namespace atrain::shard_detail
