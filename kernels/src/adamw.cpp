/// AdamW's step (adamw.hpp): one pass over the values, the per-step
/// constants computed once in double.
#include "atrain/kernels/adamw.hpp"

#include <cmath>

namespace atrain {

void adamw_step(float* x, const float* g, float* m, float* v, std::size_t n, std::uint64_t step,
                const adamw_params& p) {
  const double t = static_cast<double>(step);
  const auto keep = static_cast<float>(1.0 - p.lr * p.weight_decay);
  const auto b1 = static_cast<float>(p.beta1);
  const auto b2 = static_cast<float>(p.beta2);
  const auto a1 = static_cast<float>(1.0 - p.beta1);
  const auto a2 = static_cast<float>(1.0 - p.beta2);
  const auto rate = static_cast<float>(p.lr / (1.0 - std::pow(p.beta1, t)));
  const auto root2 = static_cast<float>(std::sqrt(1.0 - std::pow(p.beta2, t)));
  const auto eps = static_cast<float>(p.epsilon);
  for (std::size_t k = 0; k < n; ++k) {
    x[k] *= keep;
    m[k] = b1 * m[k] + a1 * g[k];
    v[k] = b2 * v[k] + a2 * g[k] * g[k];
    x[k] -= rate * m[k] / (std::sqrt(v[k]) / root2 + eps);
  }
}

}  // namespace atrain
