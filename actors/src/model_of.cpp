// The spec's model on the loaded data; a CNN is checked against the data's shape here.
#include "model_of.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace atrain {
namespace {

// A CNN's zeta^2 from this many rows per shard: a full pass over MNIST costs
// seconds (LeNet-5) to a minute (VGG_SMALL) at the start and at the end of a run.
constexpr std::size_t cnn_zeta2_rows = 1024;
// loss_and_gradient of a net with batch norm takes one chunk (cnn.hpp).
constexpr std::uint32_t max_batch_norm_rows = 4096;

[[noreturn]] void refuse(const loaded_spec& ls, const std::string& field, const std::string& why) {
  throw spec_error(ls.where(field) + ": " + why);
}

cnn_layer layer_of(const proto::CnnLayer& l) {
  using K = cnn_layer::kind;
  const auto pool = [](K k, const proto::CnnPool& p) {
    return cnn_layer{k,      0, p.kernel(), p.kernel(), p.stride() == 0 ? p.kernel() : p.stride(),
                     p.pad()};
  };
  switch (l.kind_case()) {
    case proto::CnnLayer::kConv: {
      const auto& c = l.conv();
      const std::size_t kh = c.kernel() != 0 ? c.kernel() : c.kernel_h();
      const std::size_t kw = c.kernel() != 0 ? c.kernel() : c.kernel_w();
      return {K::conv, c.out(), kh, kw, c.stride() == 0 ? 1U : c.stride(), c.pad()};
    }
    case proto::CnnLayer::kMaxPool:
      return pool(K::max_pool, l.max_pool());
    case proto::CnnLayer::kAvgPool:
      return pool(K::avg_pool, l.avg_pool());
    case proto::CnnLayer::kBatchNorm:
      return {K::batch_norm, 0, 0, 0, 1, 0};
    case proto::CnnLayer::kDense:
      return {K::dense, l.dense().out(), 0, 0, 1, 0};
    default:  // relu; KIND_NOT_SET is refused by validate()
      return {K::relu, 0, 0, 0, 1, 0};
  }
}

/// The spec's image shape, or the dataset's: CIFAR10's 3x32x32, else a square.
image_shape input_of(const loaded_spec& ls, const dataset& train) {
  const auto& c = ls.spec.model().cnn();
  if (c.channels() != 0 || c.height() != 0 || c.width() != 0) {
    const image_shape s{c.channels(), c.height(), c.width()};
    if (s.size() != train.dim)
      refuse(ls, "model.cnn.channels",
             "an image of " + std::to_string(s.channels) + "x" + std::to_string(s.height) + "x" +
               std::to_string(s.width) + " = " + std::to_string(s.size()) +
               " values, but the dataset's rows have " + std::to_string(train.dim));
    return s;
  }
  if (ls.spec.dataset().format() == proto::DatasetSpec::CIFAR10)
    return {3, 32, 32};
  const auto side = static_cast<std::size_t>(std::llround(std::sqrt(double(train.dim))));
  if (side * side != train.dim)
    refuse(ls, "model.cnn.channels",
           "the dataset's rows have " + std::to_string(train.dim) +
             " values, not a square image: give channels, height and width");
  return {1, side, side};
}

/// "model.cnn.layer[2].conv.kernel" for a problem check_cnn found.
std::string field_of(const proto::Cnn& c, const cnn_problem& p) {
  if (c.preset() != proto::Cnn::PRESET_UNSPECIFIED)
    return "model.cnn.preset";
  if (p.field == "input")
    return "model.cnn.channels";
  if (p.layer >= static_cast<std::size_t>(c.layer_size()))
    return p.field == "classes" ? "model.cnn" : "model";
  const auto& l = c.layer(static_cast<int>(p.layer));
  const std::string at = "model.cnn.layer[" + std::to_string(p.layer) + "]";
  if (p.field == "type")
    return at;
  const auto* d = l.GetDescriptor()->FindFieldByNumber(static_cast<int>(l.kind_case()));
  return at + "." + d->name() + "." + p.field;
}

std::unique_ptr<model> cnn_of(const loaded_spec& ls, const dataset& train) {
  const auto& c = ls.spec.model().cnn();
  const image_shape in = input_of(ls, train);
  const std::size_t classes = std::max<std::size_t>(2, train.classes);
  cnn_config cfg;
  if (c.preset() == proto::Cnn::LENET5) {
    cfg = lenet5(in, classes);
  } else if (c.preset() == proto::Cnn::VGG_SMALL) {
    cfg = vgg_small(in, classes);
  } else {
    cfg = {in, {}, classes, 0};
    for (const auto& l : c.layer())
      cfg.layers.push_back(layer_of(l));
  }
  cfg.l2 = c.l2();
  cfg.bf16 = c.bf16();
  if (cfg.bf16 && !cnn_bf16_supported())
    refuse(ls, "model.cnn.bf16",
           "bf16 needs a CPU with AVX512_BF16 (oneDNN finds none on this one); set bf16: false");
  const std::string preset = c.preset() == proto::Cnn::PRESET_UNSPECIFIED
                               ? std::to_string(c.layer_size()) + " layers"
                               : proto::Cnn::Preset_Name(c.preset());
  const std::string shape = "cnn: " + preset + " on " + std::to_string(in.channels) + "x" +
                            std::to_string(in.height) + "x" + std::to_string(in.width);
  // Activations are bounded by the batch bound below; here only that they are finite.
  if (auto p = check_cnn(cfg, limits::max_params, std::numeric_limits<std::size_t>::max() / 2))
    refuse(ls, field_of(c, *p), p->reason + " (" + shape + ")");
  check_model_figures(ls, cnn_num_params(cfg), cnn_activations_per_row(cfg), shape);
  const bool norm = std::any_of(cfg.layers.begin(), cfg.layers.end(), [](const cnn_layer& l) {
    return l.type == cnn_layer::kind::batch_norm;
  });
  if (norm && ls.spec.model().batch_size() > max_batch_norm_rows)
    refuse(ls, "model.batch_size",
           "a network with batch_norm takes batches of at most " +
             std::to_string(max_batch_norm_rows) + " rows (got " +
             std::to_string(ls.spec.model().batch_size()) + ")");
  return make_cnn(cfg);
}

}  // namespace

built_model model_of(const loaded_spec& ls, const dataset& train) {
  const auto& m = ls.spec.model();
  if (m.has_cnn())
    return {cnn_of(ls, train), cnn_zeta2_rows};
  if (m.has_logistic_regression()) {
    if (train.classes > 2)
      refuse(ls, "model.logistic_regression",
             "binary logistic regression needs 2 classes, the dataset has " +
               std::to_string(train.classes));
    return {make_logistic_regression(train.dim, m.logistic_regression().l2()), 0};
  }
  std::vector<std::size_t> hidden(m.mlp().hidden().begin(), m.mlp().hidden().end());
  return {make_mlp(train.dim, hidden, std::max<std::size_t>(2, train.classes), m.mlp().l2()), 0};
}

}  // namespace atrain
