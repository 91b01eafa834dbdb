// The model.cnn block, field by field. Whether the layers chain from the
// image to the head depends on the data's shape: the engine checks that once
// the data is loaded (actors/src/model_of.cpp), naming the layer the same way.
#include "spec_validate.hpp"

namespace atrain::validation {

namespace {

std::string layer_path(int i, const char* kind) {
  return idx("model.cnn.layer", i) + "." + kind;
}

}  // namespace

void checker::cnn() {
  const auto& c = s_.spec.model().cnn();
  non_negative("model.cnn.l2", c.l2());
  const auto side = [&](const std::string& path, std::uint32_t v, std::uint32_t limit,
                        std::uint32_t least) {
    if (v < least)
      bad(path, "must be >= " + std::to_string(least) + " (got " + std::to_string(v) + ")");
    else if (v > limit)
      bad(path, "must be <= " + std::to_string(limit) + " (got " + std::to_string(v) + ")");
  };
  const bool shape_set = c.channels() != 0 || c.height() != 0 || c.width() != 0;
  if (shape_set)
    for (const auto& [name, v] :
         {std::pair{"channels", c.channels()}, {"height", c.height()}, {"width", c.width()}})
      side(std::string("model.cnn.") + name, v, limits::max_image_side, 1);
  if (c.preset() != proto::Cnn::PRESET_UNSPECIFIED) {
    if (c.layer_size() > 0)
      bad("model.cnn.layer", "give a preset or layers, not both (preset is " +
                               proto::Cnn::Preset_Name(c.preset()) + ")");
    return;
  }
  if (c.layer_size() > static_cast<int>(limits::max_cnn_layers))
    bad("model.cnn.layer", "at most " + std::to_string(limits::max_cnn_layers) + " layers (got " +
                             std::to_string(c.layer_size()) + ")");
  const std::uint32_t k_max = limits::max_kernel_side;
  for (int i = 0; i < c.layer_size() && i < static_cast<int>(limits::max_cnn_layers); ++i) {
    const auto& l = c.layer(i);
    switch (l.kind_case()) {
      case proto::CnnLayer::kConv: {
        const auto& v = l.conv();
        const auto p = layer_path(i, "conv");
        side(p + ".out", v.out(), limits::max_layer_width, 1);
        if (v.kernel() != 0 && (v.kernel_h() != 0 || v.kernel_w() != 0))
          bad(p + ".kernel", "give kernel or kernel_h and kernel_w, not both");
        else if (v.kernel() != 0)
          side(p + ".kernel", v.kernel(), k_max, 1);
        else {
          side(p + ".kernel_h", v.kernel_h(), k_max, 1);
          side(p + ".kernel_w", v.kernel_w(), k_max, 1);
        }
        side(p + ".stride", v.stride(), k_max, 0);
        side(p + ".pad", v.pad(), k_max, 0);
        break;
      }
      case proto::CnnLayer::kMaxPool:
      case proto::CnnLayer::kAvgPool: {
        const bool max = l.has_max_pool();
        const auto& v = max ? l.max_pool() : l.avg_pool();
        const auto p = layer_path(i, max ? "max_pool" : "avg_pool");
        side(p + ".kernel", v.kernel(), k_max, 1);
        side(p + ".stride", v.stride(), k_max, 0);
        side(p + ".pad", v.pad(), k_max, 0);
        break;
      }
      case proto::CnnLayer::kDense:
        side(layer_path(i, "dense") + ".out", l.dense().out(), limits::max_layer_width, 1);
        break;
      case proto::CnnLayer::kRelu:
      case proto::CnnLayer::kBatchNorm:
        break;
      case proto::CnnLayer::KIND_NOT_SET:
        bad(idx("model.cnn.layer", i),
            "choose a layer: conv, max_pool, avg_pool, relu, batch_norm or dense");
        break;
    }
  }
}

}  // namespace atrain::validation
