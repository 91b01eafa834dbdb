#pragma once
// Internal to kernels/: a network's oneDNN primitives and buffers for one
// chunk row count (cnn.cpp keeps a few of them). Activations stay in the
// formats oneDNN chose between layers; the flat parameter buffer stays
// plain, so conv weights are reordered in (and their gradients out) by
// reorders built here once and run every step; in bf16 those reorders, and
// the ones of activations and gradients into the bf16 primitives, convert.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "cnn_internal.hpp"

namespace atrain::detail {

/// A zeroed, 64-byte aligned buffer: blocked formats pad channels, and the
/// padding must read as zeros.
class aligned_buffer {
public:
  aligned_buffer() = default;
  explicit aligned_buffer(std::size_t bytes);
  [[nodiscard]] float* data() const noexcept { return p_.get(); }
  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(p_); }

private:
  struct release {
    void operator()(float* p) const noexcept;
  };
  std::unique_ptr<float[], release> p_;
};

/// Batch-norm statistics of one stage (empty for the others).
struct bn_stats {
  std::vector<float> mean, var;
};

struct stage_plan;

class cnn_plan {
public:
  /// bf16: convs and hidden dense layers compute in bf16 (cnn.hpp).
  cnn_plan(const std::vector<cnn_stage>& stages, std::size_t rows, const dnnl::engine& eng,
           bool bf16);
  cnn_plan(const cnn_plan&) = delete;
  cnn_plan& operator=(const cnn_plan&) = delete;
  ~cnn_plan();

  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }

  /// Runs every stage on rows_ input rows x (plain nchw). Training mode
  /// records each batch norm's statistics (stats()); inference uses `global`.
  void forward(dnnl::stream& s, const float* x, const float* params,
               const std::vector<bn_stats>* global);

  /// After forward: the logits, rows x classes, row-major.
  [[nodiscard]] const float* logits() const noexcept;

  /// Where the caller writes d objective / d logits before backward (builds
  /// the backward primitives on first use).
  [[nodiscard]] float* dlogits();

  /// Writes every parameter's gradient (plain layouts) into grad, using the
  /// last forward's activations and the same params.
  void backward(dnnl::stream& s, const float* x, const float* params, float* grad);

  /// The last training forward's batch-norm statistics, per stage.
  [[nodiscard]] std::vector<bn_stats> stats() const;

  std::uint64_t last_use = 0;

private:
  const float* stage_input(std::size_t i, const float* x) const;
  void forward_stage(dnnl::stream& s, std::size_t i, const float* src, const float* params,
                     const std::vector<bn_stats>* global);
  void backward_stage(dnnl::stream& s, std::size_t i, const float* src, const float* params,
                      float* grad);

  const std::vector<cnn_stage>& stages_;
  std::size_t rows_;
  dnnl::engine eng_;
  std::vector<stage_plan> st_;
  std::vector<aligned_buffer> act_buf_, diff_buf_;
  // Per stage output, in its format, and d objective / d output; a ReLU fused
  // into the batch norm before it shares that one's.
  std::vector<float*> act_, diff_;
  bool backward_built_ = false;
};

}  // namespace atrain::detail
