#pragma once
// Internal to kernels/: the shapes a cnn_config's layers produce, computed
// once by check_cnn and used by the network (cnn.cpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "atrain/kernels/cnn.hpp"

namespace atrain::detail {

/// One layer as the network runs it; the head is the last (a dense layer).
struct cnn_stage {
  cnn_layer spec;
  image_shape in, out;  // a flat shape is {size, 1, 1}, with `flat` set
  bool flat_in = false, flat_out = false;
  std::size_t weight_off = 0, bias_off = 0;  // conv/dense: W then b; batch norm: gamma then beta
  std::size_t params = 0;
};

/// Throws std::invalid_argument naming oneDNN's ISA unless
/// cnn_bf16_supported() (cnn_bf16.cpp).
void require_bf16();

/// The stages of an accepted config (head included); throws
/// std::invalid_argument with check_cnn's text otherwise.
[[nodiscard]] std::vector<cnn_stage> cnn_stages(const cnn_config& c);

}  // namespace atrain::detail
