#pragma once
/// Vector operations the algorithms need, on Eigen maps over flat buffers.
/// Sizes are the caller's contract (checked with assert in debug builds).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace atrain::vec {

void axpy(float a, const float* x, float* y, std::size_t n);     // y += a x
void axpy(double a, const double* x, double* y, std::size_t n);  // y += a x
void axpy(double a, const float* x, double* y, std::size_t n);   // y += a x (mixed)
void scale(float a, float* x, std::size_t n);                    // x *= a
void scale(double a, double* x, std::size_t n);
void copy(const double* x, float* y, std::size_t n);  // y = float(x)
void copy(const float* x, double* y, std::size_t n);
/// y = sum_k w[k] * xs[k]
void weighted_sum(const std::vector<const float*>& xs, const std::vector<double>& w, float* y,
                  std::size_t n);
[[nodiscard]] double dot(const float* x, const float* y, std::size_t n);
[[nodiscard]] double squared_norm(const float* x, std::size_t n);
[[nodiscard]] double squared_distance(const float* x, const float* y, std::size_t n);
[[nodiscard]] double sum(const double* x, std::size_t n);
[[nodiscard]] bool all_finite(const float* x, std::size_t n);
[[nodiscard]] bool all_finite(const double* x, std::size_t n);
/// out[k] = x[idx[k]]
void gather(const float* x, const std::vector<std::uint32_t>& idx, float* out);
/// x[idx[k]] = v[k]
void scatter(const float* v, const std::vector<std::uint32_t>& idx, float* x);
/// x[idx[k]] += a * v[k]
void scatter_add(float a, const float* v, const std::vector<std::uint32_t>& idx, float* x);

}  // namespace atrain::vec
