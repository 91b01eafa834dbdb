#pragma once
/// kernels/: models on oneDNN, vector ops on Eigen, datasets. Knows nothing of CAF.
#include "atrain/kernels/cnn.hpp"
#include "atrain/kernels/dataset.hpp"
#include "atrain/kernels/heterogeneity.hpp"
#include "atrain/kernels/model.hpp"
#include "atrain/kernels/optimum.hpp"
#include "atrain/kernels/rng.hpp"
#include "atrain/kernels/vector_ops.hpp"
