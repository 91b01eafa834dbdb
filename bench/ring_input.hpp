#pragma once
/// The all-reduce inputs of bench_allreduce and bench_gloo_procs: small
/// integers, distinct per rank, so the sum is exact in float and a wrong
/// sum is visible.
#include <cstdint>
#include <vector>

namespace atrain::bench {

/// Rank r's input.
[[nodiscard]] inline std::vector<float> input(std::uint32_t rank, std::size_t d) {
  std::vector<float> v(d);
  for (std::size_t i = 0; i < d; ++i)
    v[i] = static_cast<float>((i % 97) + rank);
  return v;
}

/// The exact sum of every rank's input at coordinate i.
[[nodiscard]] inline float expected(std::uint32_t ranks, std::size_t i) {
  return static_cast<float>(ranks * (i % 97) + ranks * (ranks - 1) / 2);
}

}  // namespace atrain::bench
