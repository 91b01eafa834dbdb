// Convolutional networks on oneDNN (cnn.hpp): convolution, pooling, batch
// normalization and inner product primitives in plain layouts (nchw, oihw,
// oi), so the flat parameter buffer binds to them without reorders; ReLU is
// a loop (its backward needs only the output's sign).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "atrain/kernels/rng.hpp"
#include "atrain/kernels/vector_ops.hpp"
#include "cnn_internal.hpp"
#include "dnnl_util.hpp"

namespace atrain {

namespace {

using detail::bound_primitive;
using detail::cnn_stage;
using K = cnn_layer::kind;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using md = dnnl::memory::desc;
using dnnl::memory;

constexpr float bn_epsilon = 1e-5f;
constexpr std::size_t max_chunk_rows = 4096;
constexpr std::size_t max_plans = 6;

memory::dim D(std::size_t v) {
  return static_cast<memory::dim>(v);
}

md act_md(std::size_t rows, const image_shape& s, bool flat) {
  if (flat)
    return {{D(rows), D(s.size())}, dt::f32, tag::nc};
  return {{D(rows), D(s.channels), D(s.height), D(s.width)}, dt::f32, tag::nchw};
}

/// One stage's primitives for one chunk row count.
struct stage_plan {
  // Kept from the forward build for the backward one (its hints).
  md src, dst, w, b;
  memory::dims strides, pad, kernel;
  dnnl::algorithm alg = dnnl::algorithm::undef;
  dnnl::convolution_forward::primitive_desc conv;
  dnnl::inner_product_forward::primitive_desc dense;
  dnnl::pooling_forward::primitive_desc pool;
  dnnl::batch_normalization_forward::primitive_desc norm;
  bound_primitive fwd, infer, bwd_data, bwd_w;
  std::vector<std::uint8_t> ws;  // max pooling's workspace
  std::vector<float> mean, var;  // batch norm: this chunk's statistics
};

/// The slots of a conv or dense forward: {SRC, WEIGHTS, BIAS, DST}.
std::vector<std::pair<int, md>> weighted(const stage_plan& sp) {
  return {{DNNL_ARG_SRC, sp.src},
          {DNNL_ARG_WEIGHTS, sp.w},
          {DNNL_ARG_BIAS, sp.b},
          {DNNL_ARG_DST, sp.dst}};
}

struct plan {
  std::size_t rows = 0;
  std::uint64_t last_use = 0;
  std::vector<stage_plan> st;
  std::vector<std::vector<float>> act, diff;  // per stage output; diff_x: d/d input
  std::vector<float> diff_x;
  bool backward_built = false;
};

class cnn final : public model {
public:
  explicit cnn(cnn_config c)
    : cfg_(std::move(c)), stages_(detail::cnn_stages(cfg_)), eng_(dnnl::engine::kind::cpu, 0),
      strm_(eng_) {
    for (const auto& s : stages_)
      has_bn_ = has_bn_ || s.spec.type == K::batch_norm;
    global_mean_.resize(stages_.size());
    global_var_.resize(stages_.size());
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
      plan& p = plan_for(rows);
      forward(p, x, params, false);
      build_backward(p);
      float* dz = p.diff.back().data();
      const float* z = p.act.back().data();
      for (std::size_t i = 0; i < rows; ++i)
        sum += detail::softmax_xent(z + i * k, batch.y[start + i], k, dz + i * k, scale);
      if (start == 0) {
        backward(p, x, params, grad);
      } else {  // later chunks: into scratch, then added
        scratch_.resize(num_params());
        backward(p, x, params, scratch_.data());
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
      plan& p = plan_for(std::min(max_chunk_rows, batch.rows));
      forward(p, batch.x, params, false);
      for (std::size_t i = 0; i < stages_.size(); ++i) {
        global_mean_[i] = p.st[i].mean;
        global_var_[i] = p.st[i].var;
      }
    }
    double total = 0;
    for (std::size_t start = 0; start < batch.rows; start += max_chunk_rows) {
      const std::size_t rows = std::min(max_chunk_rows, batch.rows - start);
      plan& p = plan_for(rows);
      forward(p, batch.x + start * batch.dim, params, has_bn_);
      total += head(p.act.back().data(), batch.y + start, rows);
    }
    return total;
  }

  plan& plan_for(std::size_t rows);
  void build_forward(plan& p, std::size_t i);
  void build_backward(plan& p);
  void forward(plan& p, const float* x, const float* params, bool inference);
  void backward(plan& p, const float* x, const float* params, float* grad);

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
  std::vector<std::unique_ptr<plan>> plans_;
  std::uint64_t clock_ = 0;
  std::vector<float> scratch_;
  std::vector<std::vector<float>> global_mean_, global_var_;  // inference statistics per stage
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
  return s + ")";
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

plan& cnn::plan_for(std::size_t rows) {
  ++clock_;
  for (auto& p : plans_)
    if (p->rows == rows) {
      p->last_use = clock_;
      return *p;
    }
  if (plans_.size() >= max_plans)
    plans_.erase(std::min_element(plans_.begin(), plans_.end(), [](const auto& a, const auto& b) {
      return a->last_use < b->last_use;
    }));
  auto p = std::make_unique<plan>();
  p->rows = rows;
  p->last_use = clock_;
  p->st.resize(stages_.size());
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    p->act.emplace_back(rows * stages_[i].out.size());
    build_forward(*p, i);
  }
  plans_.push_back(std::move(p));
  return *plans_.back();
}

/// Weights of a conv or dense stage, plain (oihw, or oi after a flat input).
md weights_md(const cnn_stage& s) {
  const auto& l = s.spec;
  if (l.type == K::conv)
    return {{D(l.out), D(s.in.channels), D(l.kernel_h), D(l.kernel_w)}, dt::f32, tag::oihw};
  if (s.flat_in)
    return {{D(l.out), D(s.in.size())}, dt::f32, tag::oi};
  return {{D(l.out), D(s.in.channels), D(s.in.height), D(s.in.width)}, dt::f32, tag::oihw};
}

/// Forward primitives of stage i (training mode; batch norm also inference).
void cnn::build_forward(plan& p, std::size_t i) {
  const cnn_stage& s = stages_[i];
  const auto& l = s.spec;
  auto& sp = p.st[i];
  sp.src = act_md(p.rows, s.in, s.flat_in);
  sp.dst = act_md(p.rows, s.out, s.flat_out);
  sp.strides = {D(l.stride), D(l.stride)};
  sp.pad = {D(l.pad), D(l.pad)};
  sp.kernel = {D(l.kernel_h), D(l.kernel_w)};
  const auto fwd = dnnl::prop_kind::forward_training;
  if (l.type == K::conv || l.type == K::dense) {
    sp.w = weights_md(s);
    sp.b = md{{D(l.out)}, dt::f32, tag::x};
  }
  switch (l.type) {
    case K::conv:
      sp.alg = dnnl::algorithm::convolution_direct;
      sp.conv = {{fwd, sp.alg, sp.src, sp.w, sp.b, sp.dst, sp.strides, sp.pad, sp.pad}, eng_};
      sp.fwd = bound_primitive(dnnl::convolution_forward(sp.conv), eng_, weighted(sp));
      break;
    case K::dense:
      sp.dense = {{fwd, sp.src, sp.w, sp.b, sp.dst}, eng_};
      sp.fwd = bound_primitive(dnnl::inner_product_forward(sp.dense), eng_, weighted(sp));
      break;
    case K::max_pool:
    case K::avg_pool: {
      sp.alg = l.type == K::max_pool ? dnnl::algorithm::pooling_max
                                     : dnnl::algorithm::pooling_avg_exclude_padding;
      sp.pool = {{fwd, sp.alg, sp.src, sp.dst, sp.strides, sp.kernel, sp.pad, sp.pad}, eng_};
      std::vector<std::pair<int, md>> slots{{DNNL_ARG_SRC, sp.src}, {DNNL_ARG_DST, sp.dst}};
      if (sp.pool.workspace_desc().get_size() != 0) {
        sp.ws.resize(sp.pool.workspace_desc().get_size());
        slots.emplace_back(DNNL_ARG_WORKSPACE, sp.pool.workspace_desc());
      }
      sp.fwd = bound_primitive(dnnl::pooling_forward(sp.pool), eng_, slots);
      break;
    }
    case K::batch_norm: {
      using F = dnnl::normalization_flags;
      sp.norm = {{fwd, sp.src, bn_epsilon, F::use_scale_shift}, eng_};
      sp.mean.resize(s.in.channels);
      sp.var.resize(s.in.channels);
      sp.fwd = bound_primitive(dnnl::batch_normalization_forward(sp.norm), eng_,
                               {{DNNL_ARG_SRC, sp.src},
                                {DNNL_ARG_SCALE_SHIFT, sp.norm.weights_desc()},
                                {DNNL_ARG_DST, sp.dst},
                                {DNNL_ARG_MEAN, sp.norm.mean_desc()},
                                {DNNL_ARG_VARIANCE, sp.norm.variance_desc()}});
      dnnl::batch_normalization_forward::primitive_desc ipd(
        {dnnl::prop_kind::forward_inference, sp.src, bn_epsilon,
         F::use_scale_shift | F::use_global_stats},
        eng_);
      sp.infer = bound_primitive(dnnl::batch_normalization_forward(ipd), eng_,
                                 {{DNNL_ARG_SRC, sp.src},
                                  {DNNL_ARG_MEAN, ipd.mean_desc()},
                                  {DNNL_ARG_VARIANCE, ipd.variance_desc()},
                                  {DNNL_ARG_SCALE_SHIFT, ipd.weights_desc()},
                                  {DNNL_ARG_DST, sp.dst}});
      break;
    }
    case K::relu:
      break;
  }
}

/// Backward primitives of every stage, on a plan's first gradient.
void cnn::build_backward(plan& p) {
  if (p.backward_built)
    return;
  p.backward_built = true;
  p.diff_x.resize(p.rows * cfg_.input.size());
  for (std::size_t i = 0; i < stages_.size(); ++i)
    p.diff.emplace_back(p.rows * stages_[i].out.size());
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    auto& sp = p.st[i];
    const std::vector<std::pair<int, md>> diff_weights{{DNNL_ARG_SRC, sp.src},
                                                       {DNNL_ARG_DIFF_DST, sp.dst},
                                                       {DNNL_ARG_DIFF_WEIGHTS, sp.w},
                                                       {DNNL_ARG_DIFF_BIAS, sp.b}};
    const std::vector<std::pair<int, md>> diff_data{
      {DNNL_ARG_DIFF_DST, sp.dst}, {DNNL_ARG_WEIGHTS, sp.w}, {DNNL_ARG_DIFF_SRC, sp.src}};
    switch (stages_[i].spec.type) {
      case K::conv:
        sp.bwd_w = bound_primitive(
          dnnl::convolution_backward_weights(
            {{sp.alg, sp.src, sp.w, sp.b, sp.dst, sp.strides, sp.pad, sp.pad}, eng_, sp.conv}),
          eng_, diff_weights);
        sp.bwd_data = bound_primitive(
          dnnl::convolution_backward_data(
            {{sp.alg, sp.src, sp.w, sp.dst, sp.strides, sp.pad, sp.pad}, eng_, sp.conv}),
          eng_, diff_data);
        break;
      case K::dense:
        sp.bwd_w = bound_primitive(
          dnnl::inner_product_backward_weights({{sp.src, sp.w, sp.b, sp.dst}, eng_, sp.dense}),
          eng_, diff_weights);
        sp.bwd_data = bound_primitive(
          dnnl::inner_product_backward_data({{sp.src, sp.w, sp.dst}, eng_, sp.dense}), eng_,
          diff_data);
        break;
      case K::max_pool:
      case K::avg_pool: {
        std::vector<std::pair<int, md>> slots{{DNNL_ARG_DIFF_DST, sp.dst}};
        if (!sp.ws.empty())
          slots.emplace_back(DNNL_ARG_WORKSPACE, sp.pool.workspace_desc());
        slots.emplace_back(DNNL_ARG_DIFF_SRC, sp.src);
        sp.bwd_data = bound_primitive(
          dnnl::pooling_backward(
            {{sp.alg, sp.src, sp.dst, sp.strides, sp.kernel, sp.pad, sp.pad}, eng_, sp.pool}),
          eng_, slots);
        break;
      }
      case K::batch_norm: {
        dnnl::batch_normalization_backward::primitive_desc bpd(
          {dnnl::prop_kind::backward, sp.dst, sp.src, bn_epsilon,
           dnnl::normalization_flags::use_scale_shift},
          eng_, sp.norm);
        sp.bwd_data = bound_primitive(dnnl::batch_normalization_backward(bpd), eng_,
                                      {{DNNL_ARG_SRC, sp.src},
                                       {DNNL_ARG_MEAN, sp.norm.mean_desc()},
                                       {DNNL_ARG_VARIANCE, sp.norm.variance_desc()},
                                       {DNNL_ARG_DIFF_DST, sp.dst},
                                       {DNNL_ARG_SCALE_SHIFT, sp.norm.weights_desc()},
                                       {DNNL_ARG_DIFF_SRC, sp.src},
                                       {DNNL_ARG_DIFF_SCALE_SHIFT, bpd.diff_weights_desc()}});
        break;
      }
      case K::relu:
        break;
    }
  }
}

void cnn::forward(plan& p, const float* x, const float* params, bool inference) {
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const cnn_stage& s = stages_[i];
    auto& sp = p.st[i];
    const float* src = i == 0 ? x : p.act[i - 1].data();
    float* dst = p.act[i].data();
    switch (s.spec.type) {
      case K::conv:
      case K::dense:
        sp.fwd.run(strm_, {src, params + s.weight_off, params + s.bias_off, dst});
        break;
      case K::max_pool:
      case K::avg_pool:
        if (sp.ws.empty())
          sp.fwd.run(strm_, {src, dst});
        else
          sp.fwd.run(strm_, {src, dst, reinterpret_cast<const float*>(sp.ws.data())});
        break;
      case K::batch_norm:
        if (inference)
          sp.infer.run(strm_, {src, global_mean_[i].data(), global_var_[i].data(),
                               params + s.weight_off, dst});
        else
          sp.fwd.run(strm_, {src, params + s.weight_off, dst, sp.mean.data(), sp.var.data()});
        break;
      case K::relu: {
        const std::size_t n = p.act[i].size();
        for (std::size_t k = 0; k < n; ++k)
          dst[k] = std::max(src[k], 0.0f);
        break;
      }
    }
  }
}

/// p.diff.back() holds d objective / d logits; writes every stage's
/// parameter gradient into grad (plain layout).
void cnn::backward(plan& p, const float* x, const float* params, float* grad) {
  for (std::size_t i = stages_.size(); i-- > 0;) {
    const cnn_stage& s = stages_[i];
    auto& sp = p.st[i];
    const float* src = i == 0 ? x : p.act[i - 1].data();
    const float* dout = p.diff[i].data();
    // The input needs no gradient, but oneDNN's backward writes one: diff_x.
    float* din = i == 0 ? p.diff_x.data() : p.diff[i - 1].data();
    switch (s.spec.type) {
      case K::conv:
      case K::dense:
        sp.bwd_w.run(strm_, {src, dout, grad + s.weight_off, grad + s.bias_off});
        if (i > 0)
          sp.bwd_data.run(strm_, {dout, params + s.weight_off, din});
        break;
      case K::max_pool:
      case K::avg_pool:
        if (i == 0)
          break;
        if (sp.ws.empty())
          sp.bwd_data.run(strm_, {dout, din});
        else
          sp.bwd_data.run(strm_, {dout, reinterpret_cast<const float*>(sp.ws.data()), din});
        break;
      case K::batch_norm:
        sp.bwd_data.run(strm_, {src, sp.mean.data(), sp.var.data(), dout, params + s.weight_off,
                                din, grad + s.weight_off});
        break;
      case K::relu: {
        if (i == 0)
          break;
        const float* a = p.act[i].data();
        const std::size_t n = p.act[i].size();
        for (std::size_t k = 0; k < n; ++k)
          din[k] = a[k] > 0.0f ? dout[k] : 0.0f;
        break;
      }
    }
  }
}

}  // namespace

std::unique_ptr<model> make_cnn(const cnn_config& c) {
  return std::make_unique<cnn>(c);
}

}  // namespace atrain
