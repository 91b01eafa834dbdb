#pragma once
/// AdamW (Loshchilov & Hutter; as torch.optim.AdamW with amsgrad off): the
/// inner optimizer DiLoCo may use. Moments in float like the model; the bias
/// corrections in double.
#include <cstddef>
#include <cstdint>

namespace atrain {

struct adamw_params {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0.01;  // decoupled: x *= 1 - lr * weight_decay
};

/// One AdamW step on n values: m and v are the first and second moments
/// (zero before the first step), `step` the number of this step (1 for the
/// first). x *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
/// x -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
void adamw_step(float* x, const float* g, float* m, float* v, std::size_t n, std::uint64_t step,
                const adamw_params& p);

}  // namespace atrain
