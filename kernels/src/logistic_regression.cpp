// Binary logistic regression on oneDNN: z = X w + b is one matmul (+bias), the
// weight gradient X^T r another; the loss glue is a plain loop.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "atrain/kernels/model.hpp"
#include "atrain/kernels/vector_ops.hpp"
#include "dnnl_util.hpp"

namespace atrain {

namespace {

/// log(1 + exp(t)) without overflow or loss of precision for large |t|.
inline double softplus(double t) {
  return std::max(t, 0.0) + std::log1p(std::exp(-std::abs(t)));
}

/// 1 / (1 + exp(-t)), stable for both signs.
inline double sigmoid(double t) {
  if (t >= 0)
    return 1.0 / (1.0 + std::exp(-t));
  const double e = std::exp(t);
  return e / (1.0 + e);
}

class logistic_regression final : public model {
public:
  logistic_regression(std::size_t dim, double l2) : dim_(dim), l2_(l2), net_({dim, 1}) {
    if (dim == 0)
      throw std::invalid_argument("logistic_regression: dim must be > 0");
    if (!(l2 >= 0))
      throw std::invalid_argument("logistic_regression: l2 must be >= 0");
  }

  std::size_t num_params() const noexcept override { return dim_ + 1; }

  std::string name() const override { return "logistic_regression(" + std::to_string(dim_) + ")"; }

  void init_params(float* params, std::uint64_t /*seed*/) const override {
    std::fill(params, params + num_params(), 0.0f);
  }

  double loss_and_gradient(const batch_view& batch, const float* params, float* grad) override {
    check(batch);
    const double inv_n = 1.0 / static_cast<double>(batch.rows);
    const double sum = net_.run(
      batch, params, grad, [&](const float* z, const std::int32_t* y, std::size_t rows, float* dz) {
        double s = 0;
        for (std::size_t i = 0; i < rows; ++i) {
          const double sign = y[i] == 1 ? 1.0 : -1.0;
          const double m = sign * z[i];  // margin
          s += softplus(-m);
          // d/dz softplus(-s z) = -s sigmoid(-s z)
          dz[i] = static_cast<float>(-sign * sigmoid(-m) * inv_n);
        }
        return s;
      });
    if (l2_ != 0)
      vec::axpy(static_cast<float>(l2_), params, grad, num_params());
    return sum * inv_n + regulariser(params);
  }

  double loss(const batch_view& batch, const float* params) override {
    check(batch);
    const double sum = net_.run(
      batch, params, nullptr, [](const float* z, const std::int32_t* y, std::size_t rows, float*) {
        double s = 0;
        for (std::size_t i = 0; i < rows; ++i)
          s += softplus(-(y[i] == 1 ? 1.0 : -1.0) * z[i]);
        return s;
      });
    return sum / static_cast<double>(batch.rows) + regulariser(params);
  }

  double accuracy(const batch_view& batch, const float* params) override {
    check(batch);
    const double correct = net_.run(
      batch, params, nullptr, [](const float* z, const std::int32_t* y, std::size_t rows, float*) {
        std::size_t c = 0;
        for (std::size_t i = 0; i < rows; ++i)
          c += (z[i] > 0.0f ? 1 : 0) == y[i] ? 1 : 0;
        return static_cast<double>(c);
      });
    return correct / static_cast<double>(batch.rows);
  }

  std::unique_ptr<model> clone() const override {
    return std::make_unique<logistic_regression>(dim_, l2_);
  }

private:
  void check(const batch_view& batch) const {
    if (batch.dim != dim_)
      throw std::invalid_argument(name() + ": batch has dim " + std::to_string(batch.dim));
    if (batch.rows == 0)
      throw std::invalid_argument(name() + ": empty batch");
    for (std::size_t i = 0; i < batch.rows; ++i)
      if (batch.y[i] != 0 && batch.y[i] != 1)
        throw std::invalid_argument(name() + ": label " + std::to_string(batch.y[i]) + " at row " +
                                    std::to_string(i) + " is not 0 or 1");
  }

  double regulariser(const float* params) const {
    return l2_ == 0 ? 0.0 : 0.5 * l2_ * vec::squared_norm(params, num_params());
  }

  std::size_t dim_;
  double l2_;
  detail::dense_net net_;
};

}  // namespace

std::unique_ptr<model> make_logistic_regression(std::size_t dim, double l2) {
  return std::make_unique<logistic_regression>(dim, l2);
}

}  // namespace atrain
