#pragma once
/// The minimizer of the centralized objective F (the mean loss over every training row)
/// for convex models, by full-batch L-BFGS: the reference point where the heterogeneity
/// zeta^2 = (1/n) sum_i |grad f_i(x*)|^2 is measured (docs/ALGORITHMS.md, "Shards").
#include <cstddef>
#include <vector>

#include "atrain/kernels/dataset.hpp"
#include "atrain/kernels/model.hpp"

namespace atrain {

struct optimum {
  std::vector<float> x;        // the parameters found
  double loss = 0;             // F(x)
  double gradient_norm = 0;    // |grad F(x)|
  std::size_t iterations = 0;  // L-BFGS iterations taken (one full pass each, plus line search)
  bool converged = false;      // gradient_norm <= tolerance
};

/// Minimizes F over all of d's rows from x0 (m.num_params() values) with L-BFGS (memory 10,
/// Armijo backtracking), until |grad F| <= tolerance or max_iterations. Meaningful for convex
/// models (logistic regression; an MLP without hidden layers); for others it returns a
/// stationary point near x0. Throws std::invalid_argument on an empty d or a wrong x0 size.
[[nodiscard]] optimum minimize_full_loss(model& m, const dataset& d, const std::vector<float>& x0,
                                           double tolerance = 1e-5,
                                           std::size_t max_iterations = 500);

}  // namespace atrain
