#pragma once
/// Models with a flat float parameter buffer. Every model builds its oneDNN
/// primitives once per batch shape and keeps them (execute per step).
///
/// Batches: any number of rows >= 1. A batch is processed in chunks of at most
/// 4096 rows, so primitives are cached per chunk row count (a few shapes at
/// most: least recently used ones beyond 6 are dropped) and a large evaluation
/// set does not allocate activations for all its rows at once.
/// Errors: std::invalid_argument on a batch whose dim differs from the model's,
/// an empty batch, or a label outside the model's classes; the factories throw it
/// on a zero width, fewer than 2 classes (MLP) or l2 < 0.
/// Threads: a model object is not thread-safe (it owns its oneDNN engine,
/// stream, primitives and activation buffers); give each thread or actor its
/// own clone(). oneDNN runs on the OpenMP runtime: its thread count comes from
/// OMP_NUM_THREADS; the library never changes it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "atrain/kernels/dataset.hpp"

namespace atrain {

class model {
public:
  virtual ~model() = default;

  [[nodiscard]] virtual std::size_t num_params() const noexcept = 0;
  [[nodiscard]] virtual std::string name() const = 0;

  /// Fill params (num_params() floats) with the initial point drawn from seed.
  virtual void init_params(float* params, std::uint64_t seed) const = 0;

  /// Mean loss over the batch plus the L2 term; writes the gradient of that
  /// into grad (num_params() floats). Returns the loss.
  virtual double loss_and_gradient(const batch_view& batch, const float* params, float* grad) = 0;

  /// Mean loss over the batch plus the L2 term.
  [[nodiscard]] virtual double loss(const batch_view& batch, const float* params) = 0;

  /// Fraction of rows whose predicted class equals the label.
  [[nodiscard]] virtual double accuracy(const batch_view& batch, const float* params) = 0;

  /// A fresh model of the same shape with its own primitives (one per actor).
  [[nodiscard]] virtual std::unique_ptr<model> clone() const = 0;
};

/// Binary logistic regression on labels {0,1}: params = [w (dim), b].
/// loss = mean log(1 + exp(-s (w.x + b))) + l2/2 |params|^2, s = 2y - 1.
/// The bias is regularised too (|params|^2 covers w and b). Softplus is
/// evaluated stably (no overflow for large margins). init_params writes zeros
/// (the seed is unused). Prediction: class 1 iff w.x + b > 0.
[[nodiscard]] std::unique_ptr<model> make_logistic_regression(std::size_t dim, double l2);

/// MLP: dim -> hidden... (ReLU) -> classes, softmax cross-entropy + l2/2 |W|^2.
/// Parameters are laid out layer by layer: W (in x out, row-major), then b (out).
/// Only the weight matrices are regularised; biases are not. The cross-entropy
/// uses a max-shifted log-sum-exp. hidden may be empty (softmax regression).
/// init_params: He-uniform weights U(-sqrt(6/in), sqrt(6/in)) drawn in
/// parameter order from atrain::rng(seed), zero biases. Prediction: argmax of
/// the logits (first index on ties). Requires dim > 0, classes >= 2, hidden
/// widths > 0.
[[nodiscard]] std::unique_ptr<model>
make_mlp(std::size_t dim, const std::vector<std::size_t>& hidden, std::size_t classes, double l2);

}  // namespace atrain
