#pragma once
/// Seeded vectors of values in [-2, 2) for the kernels' tests.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "atrain/kernels/rng.hpp"

namespace atrain::test {

inline std::vector<float> randf(std::size_t n, std::uint64_t seed) {
  rng g(seed);
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(g.uniform(-2, 2));
  return v;
}

inline std::vector<double> randd(std::size_t n, std::uint64_t seed) {
  rng g(seed);
  std::vector<double> v(n);
  for (auto& x : v)
    x = g.uniform(-2, 2);
  return v;
}

}  // namespace atrain::test
