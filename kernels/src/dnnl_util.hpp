#pragma once
// Internal to kernels/: a stack of dense layers on oneDNN (2.6 API)
// inner_product primitives (forward with bias and ReLU post-op, backward data,
// backward weights + bias), built once per batch row count and cached.
//
// Why inner_product and not matmul: both pick the same JIT GEMM kernels for
// the MLP shapes, but for a single output (logistic regression: a GEMV) matmul
// 2.6 takes brgemm paths that are 3-5x slower, and a broadcast {1,1} bias
// with M = 1 falls back to ref:any; inner_product (x64:gemm:jit) handles
// both, and its backward-weights primitive yields the bias gradient too.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "atrain/kernels/dataset.hpp"

namespace atrain::detail {

/// Softmax cross-entropy of one row of logits; when dz is not null writes
/// (softmax - onehot) * scale into it. Log-sum-exp shifted by the max.
inline double softmax_xent(const float* z, std::int32_t y, std::size_t k, float* dz, float scale) {
  float m = z[0];
  for (std::size_t j = 1; j < k; ++j)
    m = std::max(m, z[j]);
  double s = 0;
  for (std::size_t j = 0; j < k; ++j)
    s += std::exp(static_cast<double>(z[j]) - m);
  const double lse = m + std::log(s);
  if (dz != nullptr) {
    for (std::size_t j = 0; j < k; ++j)
      dz[j] = static_cast<float>(std::exp(static_cast<double>(z[j]) - lse)) * scale;
    dz[y] -= scale;
  }
  return lse - z[y];
}

/// A classifier's batch: `dim` features per row, at least one row, labels in
/// [0, classes); std::invalid_argument naming the model otherwise.
void check_batch(const std::string& model, const batch_view& batch, std::size_t dim,
                 std::size_t classes);

/// A oneDNN primitive with its memory objects created once; the buffers are
/// bound per call (set_data_handle), so executing it allocates nothing.
class bound_primitive {
public:
  bound_primitive() = default;
  bound_primitive(dnnl::primitive prim, const dnnl::engine& eng,
                  const std::vector<std::pair<int, dnnl::memory::desc>>& slots);

  /// Binds ptrs to the slots (in the order given at construction), executes
  /// and waits.
  void run(dnnl::stream& s, std::initializer_list<const float*> ptrs);

  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(prim_); }

private:
  dnnl::primitive prim_;
  std::vector<dnnl::memory> mems_;
  std::unordered_map<int, dnnl::memory> args_;
};

/// Dense layers widths[0] -> widths[1] -> ... -> widths.back(), ReLU after every
/// layer but the last (the last produces the logits). Parameters are laid out
/// layer by layer: W (in x out, row-major) then b (out).
///
/// Batches are processed in chunks of at most max_chunk_rows rows; the
/// primitives and activation buffers for each chunk row count are built on
/// first use (forward on the first call, backward on the first gradient) and
/// kept (least recently used beyond max_plans are dropped).
/// Not thread-safe: one dense_net per thread (each owns its engine and stream).
class dense_net {
public:
  static constexpr std::size_t max_chunk_rows = 4096;
  static constexpr std::size_t max_plans = 6;

  explicit dense_net(std::vector<std::size_t> widths);
  dense_net(const dense_net&) = delete;
  dense_net& operator=(const dense_net&) = delete;
  ~dense_net();

  [[nodiscard]] const std::vector<std::size_t>& widths() const noexcept { return widths_; }
  [[nodiscard]] std::size_t layers() const noexcept { return widths_.size() - 1; }
  [[nodiscard]] std::size_t num_params() const noexcept {
    return bias_off_.back() + widths_.back();
  }
  [[nodiscard]] std::size_t weight_offset(std::size_t l) const noexcept { return weight_off_[l]; }
  [[nodiscard]] std::size_t bias_offset(std::size_t l) const noexcept { return bias_off_[l]; }
  [[nodiscard]] std::size_t in() const noexcept { return widths_.front(); }
  [[nodiscard]] std::size_t out() const noexcept { return widths_.back(); }

  /// Runs the net over the whole batch chunk by chunk. For every chunk,
  /// head(logits, labels, rows, dlogits) is called with the chunk's logits
  /// (rows x out) and returns a per-chunk sum (a loss or a count). When grad
  /// is not null, head must also write dlogits (rows x out), the derivative of
  /// the batch objective with respect to the logits, and grad receives the
  /// gradient of the objective (summed over chunks) with respect to the
  /// params; otherwise dlogits is null. Returns the sum of the head results.
  template <class Head>
  double run(const batch_view& batch, const float* params, float* grad, Head&& head) {
    double total = 0;
    for (std::size_t start = 0; start < batch.rows; start += max_chunk_rows) {
      const std::size_t rows = std::min(max_chunk_rows, batch.rows - start);
      const float* x = batch.x + start * batch.dim;
      const std::int32_t* y = batch.y + start;
      plan& p = plan_for(rows);
      const float* logits = forward(p, x, params);
      float* dlogits = grad != nullptr ? delta_out(p) : nullptr;
      total += head(logits, y, rows, dlogits);
      if (grad == nullptr)
        continue;
      if (start == 0) {
        backward(p, x, params, grad);
      } else {  // later chunks: into scratch, then added
        scratch_.resize(num_params());
        backward(p, x, params, scratch_.data());
        add(scratch_.data(), grad);
      }
    }
    return total;
  }

private:
  struct plan;

  plan& plan_for(std::size_t rows);
  const float* forward(plan& p, const float* x, const float* params);
  float* delta_out(plan& p);
  void backward(plan& p, const float* x, const float* params, float* grad);
  void add(const float* from, float* to) const;

  std::vector<std::size_t> widths_;
  std::vector<std::size_t> weight_off_, bias_off_;
  dnnl::engine eng_;
  dnnl::stream strm_;
  std::vector<std::unique_ptr<plan>> plans_;
  std::uint64_t clock_ = 0;
  std::vector<float> scratch_;
};

}  // namespace atrain::detail
