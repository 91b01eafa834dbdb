#pragma once
/// How different the nodes' shards are: class histograms, the gradient heterogeneity
/// zeta^2 and the minibatch noise sigma^2 at a model (docs/ALGORITHMS.md, "Shards").
#include <cstddef>
#include <cstdint>
#include <vector>

#include "atrain/kernels/dataset.hpp"
#include "atrain/kernels/model.hpp"

namespace atrain {

/// hist[i][c] = rows of class c in shard i. Indices must be < d.size().
[[nodiscard]] std::vector<std::vector<std::uint64_t>> class_histograms(const dataset& d,
                                                                       const shards& s);

/// The mean loss over `rows` (the model's own mean per chunk of rows, weighted by its
/// rows, so the regularizer counts once) and its gradient into `grad`, in double.
double mean_loss_and_gradient(model& m, const dataset& d, const std::vector<std::uint32_t>& rows,
                              const float* x, std::vector<double>& grad);

struct heterogeneity {
  /// (1/n) sum_i |grad f_i(x) - grad F(x)|^2, F the loss over all of d's rows (the
  /// centralized objective; = (1/n) sum_i f_i for equal-size shards that cover d).
  double zeta2 = 0;
  /// Mean over nodes of E|g_i(x) - grad f_i(x)|^2 for a minibatch g_i of `batch` rows drawn
  /// without replacement from shard i: var_i / b * (m - b) / (m - 1), var_i the mean
  /// per-row |grad l_j - grad f_i|^2 over the shard's m rows; 0 when b >= m. Only
  /// computed when batch > 0 (one gradient per row, or per noise_rows evenly spaced rows of
  /// the shard when noise_rows > 0).
  double sigma2 = 0;
  std::vector<double> node_zeta2;   // |grad f_i(x) - grad F(x)|^2 per node
  std::vector<double> node_sigma2;  // per node, when batch > 0
};

/// zeta^2 (and sigma^2 when batch > 0) at params x, with m's loss_and_gradient over each
/// full shard (rows gathered in chunks). Every shard must be non-empty. noise_rows > 0
/// caps the single-row gradients sigma^2 takes per shard (a large MLP's cost).
/// zeta_rows > 0 estimates zeta^2 from that many evenly spaced rows per shard (a CNN's
/// cost), with grad F the shard-size-weighted mean of the sampled shard gradients; the
/// sampling noise adds about sigma^2 for a batch of zeta_rows to each node's term.
[[nodiscard]] heterogeneity measure_heterogeneity(model& m, const dataset& d, const shards& s,
                                                  const float* x, std::size_t batch,
                                                  std::size_t noise_rows = 0,
                                                  std::size_t zeta_rows = 0);

}  // namespace atrain
