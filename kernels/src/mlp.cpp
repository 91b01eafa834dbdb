// Multi-layer perceptron on oneDNN: every layer is a matmul with bias (+ ReLU
// post-op for hidden layers); the backward pass is two matmuls per layer
// (X^T delta, delta W^T). Softmax cross-entropy and the ReLU mask are plain
// loops.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "atrain/kernels/model.hpp"
#include "atrain/kernels/rng.hpp"
#include "atrain/kernels/vector_ops.hpp"
#include "dnnl_util.hpp"

namespace atrain {

namespace {

std::vector<std::size_t> layer_widths(std::size_t dim, const std::vector<std::size_t>& hidden,
                                      std::size_t classes) {
  if (dim == 0)
    throw std::invalid_argument("mlp: dim must be > 0");
  if (classes < 2)
    throw std::invalid_argument("mlp: classes must be >= 2");
  std::vector<std::size_t> w{dim};
  for (auto h : hidden) {
    if (h == 0)
      throw std::invalid_argument("mlp: hidden width must be > 0");
    w.push_back(h);
  }
  w.push_back(classes);
  return w;
}

using detail::softmax_xent;

class mlp final : public model {
public:
  mlp(std::size_t dim, const std::vector<std::size_t>& hidden, std::size_t classes, double l2)
    : hidden_(hidden), l2_(l2), net_(layer_widths(dim, hidden, classes)) {
    if (!(l2 >= 0))
      throw std::invalid_argument("mlp: l2 must be >= 0");
  }

  std::size_t num_params() const noexcept override { return net_.num_params(); }

  std::string name() const override {
    std::string s = "mlp(";
    for (std::size_t l = 0; l < net_.widths().size(); ++l)
      s += (l ? "-" : "") + std::to_string(net_.widths()[l]);
    return s + ")";
  }

  /// He-uniform weights U(-sqrt(6/fan_in), +sqrt(6/fan_in)), zero biases.
  void init_params(float* params, std::uint64_t seed) const override {
    rng gen(seed);
    const auto& w = net_.widths();
    for (std::size_t l = 0; l < net_.layers(); ++l) {
      const double a = std::sqrt(6.0 / static_cast<double>(w[l]));
      float* W = params + net_.weight_offset(l);
      for (std::size_t i = 0; i < w[l] * w[l + 1]; ++i)
        W[i] = static_cast<float>(gen.uniform(-a, a));
      std::fill(params + net_.bias_offset(l), params + net_.bias_offset(l) + w[l + 1], 0.0f);
    }
  }

  double loss_and_gradient(const batch_view& batch, const float* params, float* grad) override {
    check(batch);
    const std::size_t k = net_.out();
    const auto scale = static_cast<float>(1.0 / static_cast<double>(batch.rows));
    const double sum = net_.run(
      batch, params, grad, [&](const float* z, const std::int32_t* y, std::size_t rows, float* dz) {
        double s = 0;
        for (std::size_t i = 0; i < rows; ++i)
          s += softmax_xent(z + i * k, y[i], k, dz + i * k, scale);
        return s;
      });
    if (l2_ != 0) {
      for (std::size_t l = 0; l < net_.layers(); ++l) {
        const std::size_t off = net_.weight_offset(l);
        vec::axpy(static_cast<float>(l2_), params + off, grad + off, weights_in(l));
      }
    }
    return sum / static_cast<double>(batch.rows) + regulariser(params);
  }

  double loss(const batch_view& batch, const float* params) override {
    check(batch);
    const std::size_t k = net_.out();
    const double sum = net_.run(
      batch, params, nullptr, [&](const float* z, const std::int32_t* y, std::size_t rows, float*) {
        double s = 0;
        for (std::size_t i = 0; i < rows; ++i)
          s += softmax_xent(z + i * k, y[i], k, nullptr, 0.0f);
        return s;
      });
    return sum / static_cast<double>(batch.rows) + regulariser(params);
  }

  double accuracy(const batch_view& batch, const float* params) override {
    check(batch);
    const std::size_t k = net_.out();
    const double correct = net_.run(
      batch, params, nullptr, [&](const float* z, const std::int32_t* y, std::size_t rows, float*) {
        std::size_t c = 0;
        for (std::size_t i = 0; i < rows; ++i) {
          const float* row = z + i * k;
          const auto pred = std::max_element(row, row + k) - row;
          c += pred == y[i] ? 1 : 0;
        }
        return static_cast<double>(c);
      });
    return correct / static_cast<double>(batch.rows);
  }

  std::unique_ptr<model> clone() const override {
    return std::make_unique<mlp>(net_.in(), hidden_, net_.out(), l2_);
  }

private:
  std::size_t weights_in(std::size_t l) const { return net_.widths()[l] * net_.widths()[l + 1]; }

  void check(const batch_view& batch) const {
    detail::check_batch(name(), batch, net_.in(), net_.out());
  }

  double regulariser(const float* params) const {
    if (l2_ == 0)
      return 0.0;
    double s = 0;
    for (std::size_t l = 0; l < net_.layers(); ++l)
      s += vec::squared_norm(params + net_.weight_offset(l), weights_in(l));
    return 0.5 * l2_ * s;
  }

  std::vector<std::size_t> hidden_;
  double l2_;
  detail::dense_net net_;
};

}  // namespace

std::unique_ptr<model> make_mlp(std::size_t dim, const std::vector<std::size_t>& hidden,
                                std::size_t classes, double l2) {
  return std::make_unique<mlp>(dim, hidden, classes, l2);
}

}  // namespace atrain
