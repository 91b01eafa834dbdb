// Vector operations on Eigen maps over flat buffers.
//
// Elementwise operations, copies and weighted_sum are plain loops. The
// float -> double reductions (dot, squared_norm, squared_distance) are loops
// over 16 independent double lanes instead: Eigen 3.4 does not vectorise a
// reduction over a cast<double>() expression (measured 9x slower: 135 us vs
// 15 us for 200k floats), and the compiler may not reorder a single-accumulator
// FP loop. The summation order depends only on n, so results are reproducible.
// all_finite tests the exponent bits block by block (vectorised, 6x faster
// than Eigen's allFinite here). Index operations are indexed loops.
//
// A portable build (no -march) would run these loops on SSE2 only; there
// they are cloned per ISA (AVX-512, AVX2, baseline) and picked at load time,
// as oneDNN does. The results do not depend on the clone: this file is
// compiled with -ffp-contract=off (GCC would otherwise fuse a*x+y into an FMA
// in the AVX-512 clone only) and the reductions keep their fixed 16-lane order.
#include "atrain/kernels/vector_ops.hpp"

#include "clones.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

#include <Eigen/Core>

namespace atrain::vec {

namespace {

using vecf = Eigen::Matrix<float, Eigen::Dynamic, 1>;
using vecd = Eigen::Matrix<double, Eigen::Dynamic, 1>;
using mapf = Eigen::Map<vecf>;
using cmapf = Eigen::Map<const vecf>;
using mapd = Eigen::Map<vecd>;
using cmapd = Eigen::Map<const vecd>;

Eigen::Index ix(std::size_t n) {
  return static_cast<Eigen::Index>(n);
}

}  // namespace

ATRAIN_CLONES void axpy(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] += a * x[i];
}

ATRAIN_CLONES void axpy(double a, const double* x, double* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] += a * x[i];
}

ATRAIN_CLONES void axpy(double a, const float* x, double* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] += a * static_cast<double>(x[i]);
}

ATRAIN_CLONES void scale(float a, float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    x[i] *= a;
}

ATRAIN_CLONES void scale(double a, double* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    x[i] *= a;
}

ATRAIN_CLONES void copy(const double* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] = static_cast<float>(x[i]);
}

ATRAIN_CLONES void copy(const float* x, double* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    y[i] = static_cast<double>(x[i]);
}

ATRAIN_CLONES void weighted_sum(const std::vector<const float*>& xs, const std::vector<double>& w,
                                float* y, std::size_t n) {
  assert(xs.size() == w.size());
  // Accumulate block by block in double: exact enough for many terms, cache
  // friendly, and safe when y is one of the xs (each block of every x is read
  // before the block of y is written).
  constexpr std::size_t block = 1024;
  alignas(64) double acc[block];
  for (std::size_t start = 0; start < n; start += block) {
    const std::size_t len = std::min(block, n - start);
    std::fill(acc, acc + len, 0.0);
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const float* x = xs[k] + start;
      const double wk = w[k];
      for (std::size_t i = 0; i < len; ++i)
        acc[i] += wk * static_cast<double>(x[i]);
    }
    for (std::size_t i = 0; i < len; ++i)
      y[start + i] = static_cast<float>(acc[i]);
  }
}

namespace {

/// sum_i f(i) in double over 16 lanes (vectorisable), then the tail. Always
/// inlined, with its lambdas, so that each ISA clone of the callers below
/// compiles it for its ISA (a call would run the baseline copy).
template <class F>
ATRAIN_INLINE inline double lane_sum(std::size_t n, F&& f) {
  constexpr std::size_t lanes = 16;
  double acc[lanes] = {};
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::size_t j = 0; j < lanes; ++j)
      acc[j] += f(i + j);
  double tail = 0;
  for (; i < n; ++i)
    tail += f(i);
  double s = 0;
  for (double a : acc)
    s += a;
  return s + tail;
}

}  // namespace

ATRAIN_CLONES double dot(const float* x, const float* y, std::size_t n) {
  return lane_sum(n, [=](std::size_t i) ATRAIN_INLINE {
    return static_cast<double>(x[i]) * static_cast<double>(y[i]);
  });
}

ATRAIN_CLONES double squared_norm(const float* x, std::size_t n) {
  return lane_sum(n, [=](std::size_t i) ATRAIN_INLINE {
    const auto v = static_cast<double>(x[i]);
    return v * v;
  });
}

ATRAIN_CLONES double squared_distance(const float* x, const float* y, std::size_t n) {
  return lane_sum(n, [=](std::size_t i) ATRAIN_INLINE {
    const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    return d * d;
  });
}

double sum(const double* x, std::size_t n) {
  return cmapd(x, ix(n)).sum();
}

namespace {

/// Inf and NaN are the values whose exponent bits are all ones: an OR over
/// blocks vectorises, where an early-exit isfinite loop does not.
template <class Bits, class T>
bool exponent_bits_finite(const T* x, std::size_t n, Bits exp_mask) {
  constexpr std::size_t block = 1024;
  for (std::size_t start = 0; start < n; start += block) {
    const std::size_t len = std::min(block, n - start);
    Bits bad = 0;
    for (std::size_t i = 0; i < len; ++i) {
      Bits bits;
      std::memcpy(&bits, x + start + i, sizeof bits);
      bad |= static_cast<Bits>((bits & exp_mask) == exp_mask);
    }
    if (bad != 0)
      return false;
  }
  return true;
}

}  // namespace

bool all_finite(const float* x, std::size_t n) {
  return exponent_bits_finite<std::uint32_t>(x, n, 0x7f800000u);
}

bool all_finite(const double* x, std::size_t n) {
  return exponent_bits_finite<std::uint64_t>(x, n, 0x7ff0000000000000ull);
}

void gather(const float* x, const std::vector<std::uint32_t>& idx, float* out) {
  mapf o(out, ix(idx.size()));
  for (Eigen::Index k = 0; k < o.size(); ++k)
    o[k] = x[idx[static_cast<std::size_t>(k)]];
}

void scatter(const float* v, const std::vector<std::uint32_t>& idx, float* x) {
  cmapf vv(v, ix(idx.size()));
  for (Eigen::Index k = 0; k < vv.size(); ++k)
    x[idx[static_cast<std::size_t>(k)]] = vv[k];
}

void scatter_add(float a, const float* v, const std::vector<std::uint32_t>& idx, float* x) {
  cmapf vv(v, ix(idx.size()));
  for (Eigen::Index k = 0; k < vv.size(); ++k)
    x[idx[static_cast<std::size_t>(k)]] += a * vv[k];
}

}  // namespace atrain::vec
