#pragma once
// The model a spec asks for, built on the loaded training data (run_plan.cpp).
#include <memory>

#include "atrain/kernels.hpp"
#include "atrain/messages/spec.hpp"

namespace atrain {

struct built_model {
  std::unique_ptr<model> prototype;
  std::size_t zeta2_rows = 0;  // run_plan::zeta2_rows: 0 but for CNNs
};

/// Logistic regression, an MLP or a CNN on `train`'s rows and classes. A CNN's
/// image shape, layer chain and size bounds are checked here, where the data's
/// shape is known; refusals throw spec_error naming the field
/// ("model.cnn.layer[2].conv.kernel: kernel 5x5 is larger than ...").
[[nodiscard]] built_model model_of(const loaded_spec& ls, const dataset& train);

}  // namespace atrain
