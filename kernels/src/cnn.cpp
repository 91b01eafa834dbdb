// Convolutional networks on oneDNN (cnn.hpp): the model, its chunking and
// its cache of plans (cnn_plan.hpp: the primitives for one chunk row count,
// in the formats oneDNN chose).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "atrain/kernels/rng.hpp"
#include "atrain/kernels/vector_ops.hpp"
#include "cnn_plan.hpp"
#include "dnnl_util.hpp"

namespace atrain {

namespace {

using detail::bn_stats;
using detail::cnn_plan;
using detail::cnn_stage;
using K = cnn_layer::kind;

constexpr std::size_t max_chunk_rows = 4096;
constexpr std::size_t max_plans = 6;

class cnn final : public model {
public:
  explicit cnn(cnn_config c)
    : cfg_(std::move(c)), stages_(detail::cnn_stages(cfg_)), eng_(dnnl::engine::kind::cpu, 0),
      strm_(eng_) {
    for (const auto& s : stages_)
      has_bn_ = has_bn_ || s.spec.type == K::batch_norm;
  }

  std::size_t num_params() const noexcept override {
    return stages_.back().bias_off + stages_.back().spec.out;
  }

  std::string name() const override;
  void init_params(float* params, std::uint64_t seed) const override;

  double loss_and_gradient(const batch_view& batch, const float* params, float* grad) override {
    check(batch);
    if (has_bn_ && batch.rows > max_chunk_rows)
      throw std::invalid_argument(name() + ": a gradient batch with batch norm must have <= " +
                                  std::to_string(max_chunk_rows) + " rows (got " +
                                  std::to_string(batch.rows) + ")");
    const std::size_t k = cfg_.classes;
    const auto scale = static_cast<float>(1.0 / static_cast<double>(batch.rows));
    double sum = 0;
    for (std::size_t start = 0; start < batch.rows; start += max_chunk_rows) {
      const std::size_t rows = std::min(max_chunk_rows, batch.rows - start);
      const float* x = batch.x + start * batch.dim;
      cnn_plan& p = plan_for(rows);
      p.forward(strm_, x, params, nullptr);
      float* dz = p.dlogits();
      const float* z = p.logits();
      for (std::size_t i = 0; i < rows; ++i)
        sum += detail::softmax_xent(z + i * k, batch.y[start + i], k, dz + i * k, scale);
      if (start == 0) {
        p.backward(strm_, x, params, grad);
      } else {  // later chunks: into scratch, then added
        scratch_.resize(num_params());
        p.backward(strm_, x, params, scratch_.data());
        vec::axpy(1.0f, scratch_.data(), grad, num_params());
      }
    }
    for (const auto& s : stages_)
      if (cfg_.l2 != 0 && (s.spec.type == K::conv || s.spec.type == K::dense))
        vec::axpy(static_cast<float>(cfg_.l2), params + s.weight_off, grad + s.weight_off,
                  s.bias_off - s.weight_off);
    return sum / static_cast<double>(batch.rows) + regulariser(params);
  }

  double loss(const batch_view& batch, const float* params) override {
    const std::size_t k = cfg_.classes;
    const double sum =
      infer(batch, params, [&](const float* z, const std::int32_t* y, std::size_t n) {
        double s = 0;
        for (std::size_t i = 0; i < n; ++i)
          s += detail::softmax_xent(z + i * k, y[i], k, nullptr, 0.0f);
        return s;
      });
    return sum / static_cast<double>(batch.rows) + regulariser(params);
  }

  double accuracy(const batch_view& batch, const float* params) override {
    const std::size_t k = cfg_.classes;
    const double c =
      infer(batch, params, [&](const float* z, const std::int32_t* y, std::size_t n) {
        std::size_t hits = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const float* row = z + i * k;
          hits += (std::max_element(row, row + k) - row) == y[i] ? 1 : 0;
        }
        return static_cast<double>(hits);
      });
    return c / static_cast<double>(batch.rows);
  }

  std::unique_ptr<model> clone() const override { return std::make_unique<cnn>(cfg_); }

private:
  /// Inference: batch-norm statistics from the first chunk (training mode),
  /// then every chunk with them.
  template <class Head>
  double infer(const batch_view& batch, const float* params, Head&& head) {
    check(batch);
    if (has_bn_) {
      cnn_plan& p = plan_for(std::min(max_chunk_rows, batch.rows));
      p.forward(strm_, batch.x, params, nullptr);
      global_ = p.stats();
    }
    double total = 0;
    for (std::size_t start = 0; start < batch.rows; start += max_chunk_rows) {
      const std::size_t rows = std::min(max_chunk_rows, batch.rows - start);
      cnn_plan& p = plan_for(rows);
      p.forward(strm_, batch.x + start * batch.dim, params, has_bn_ ? &global_ : nullptr);
      total += head(p.logits(), batch.y + start, rows);
    }
    return total;
  }

  cnn_plan& plan_for(std::size_t rows);

  void check(const batch_view& batch) const {
    detail::check_batch(name(), batch, cfg_.input.size(), cfg_.classes);
  }

  double regulariser(const float* params) const {
    if (cfg_.l2 == 0)
      return 0.0;
    double s = 0;
    for (const auto& st : stages_)
      if (st.spec.type == K::conv || st.spec.type == K::dense)
        s += vec::squared_norm(params + st.weight_off, st.bias_off - st.weight_off);
    return 0.5 * cfg_.l2 * s;
  }

  cnn_config cfg_;
  std::vector<cnn_stage> stages_;
  bool has_bn_ = false;
  dnnl::engine eng_;
  dnnl::stream strm_;
  std::vector<std::unique_ptr<cnn_plan>> plans_;
  std::uint64_t clock_ = 0;
  std::vector<float> scratch_;
  std::vector<bn_stats> global_;  // inference statistics per stage
};

std::string cnn::name() const {
  const auto& in = cfg_.input;
  std::string s = "cnn(" + std::to_string(in.channels) + "x" + std::to_string(in.height) + "x" +
                  std::to_string(in.width) + ":";
  for (const auto& st : stages_) {
    const auto& l = st.spec;
    const std::string k = std::to_string(l.kernel_h) +
                          (l.kernel_h == l.kernel_w ? "" : "x" + std::to_string(l.kernel_w));
    const std::string sp = (l.stride != 1 ? "s" + std::to_string(l.stride) : std::string()) +
                           (l.pad != 0 ? "p" + std::to_string(l.pad) : std::string());
    switch (l.type) {
      case K::conv:
        s += " conv" + std::to_string(l.out) + "k" + k + sp;
        break;
      case K::relu:
        s += " relu";
        break;
      case K::max_pool:
        s += " max" + k + sp;
        break;
      case K::avg_pool:
        s += " avg" + k + sp;
        break;
      case K::batch_norm:
        s += " bn";
        break;
      case K::dense:
        s += " dense" + std::to_string(l.out);
        break;
    }
  }
  return s + (cfg_.bf16 ? " bf16)" : ")");
}

void cnn::init_params(float* params, std::uint64_t seed) const {
  rng gen(seed);
  for (const auto& st : stages_) {
    if (st.spec.type == K::batch_norm) {
      std::fill(params + st.weight_off, params + st.bias_off, 1.0f);
      std::fill(params + st.bias_off, params + st.bias_off + st.in.channels, 0.0f);
    } else if (st.spec.type == K::conv || st.spec.type == K::dense) {
      const std::size_t fan_in = (st.bias_off - st.weight_off) / st.spec.out;
      const double a = std::sqrt(6.0 / static_cast<double>(fan_in));
      for (std::size_t i = st.weight_off; i < st.bias_off; ++i)
        params[i] = static_cast<float>(gen.uniform(-a, a));
      std::fill(params + st.bias_off, params + st.bias_off + st.spec.out, 0.0f);
    }
  }
}

cnn_plan& cnn::plan_for(std::size_t rows) {
  ++clock_;
  for (auto& p : plans_)
    if (p->rows() == rows) {
      p->last_use = clock_;
      return *p;
    }
  if (plans_.size() >= max_plans)
    plans_.erase(std::min_element(plans_.begin(), plans_.end(), [](const auto& a, const auto& b) {
      return a->last_use < b->last_use;
    }));
  plans_.push_back(std::make_unique<cnn_plan>(stages_, rows, eng_, cfg_.bf16));
  plans_.back()->last_use = clock_;
  return *plans_.back();
}

}  // namespace

std::unique_ptr<model> make_cnn(const cnn_config& c) {
  if (c.bf16)
    detail::require_bf16();  // no silent fallback to f32
  return std::make_unique<cnn>(c);
}

}  // namespace atrain
