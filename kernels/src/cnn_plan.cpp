// A cnn_plan (cnn_plan.hpp): one chunk row count's primitives. Convolutions
// are created with format_tag::any so oneDNN picks its blocked or nhwc JIT
// kernels; pools, batch norm and ReLU work on whatever format reaches them;
// a stage whose primitive wants another format gets a reorder in front (and
// one behind for its gradient). ReLU is a loop (its backward needs only the
// output's sign), or runs inside a batch norm right before it. All built
// once, run every step. In bf16 (stage_plan::compute) a conv or hidden dense
// layer reads bf16: its reorder in front also converts (so it always has
// one), and so do the ones of its weights and of its diff_dst
// (cnn_bf16.cpp); it writes f32, so the stages around it are unchanged.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "cnn_stage_plan.hpp"

namespace atrain::detail {

namespace {

using K = cnn_layer::kind;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using md = dnnl::memory::desc;
using slots = std::vector<std::pair<int, md>>;
using dnnl::memory;

constexpr float bn_epsilon = 1e-5f;

memory::dim D(std::size_t v) {
  return static_cast<memory::dim>(v);
}

md shape_md(std::size_t rows, const image_shape& s, bool flat, tag t = tag::nchw) {
  if (flat)
    return {{D(rows), D(s.size())}, dt::f32, tag::nc};
  return {{D(rows), D(s.channels), D(s.height), D(s.width)}, dt::f32, t};
}

/// Equal descs, or plain dense ones of a single channel (nchw and nhwc of one
/// channel put every element at the same place): no reorder needed.
bool same_layout(const md& a, const md& b) {
  if (a == b)
    return true;
  if (a.data_type() != b.data_type())
    return false;
  const auto plain = [](const md& d) {
    return d.data.format_kind == dnnl_blocked && d.data.format_desc.blocking.inner_nblks == 0 &&
           d.data.offset0 == 0;
  };
  return a.data.ndims == 4 && a.dims() == b.dims() && a.dims()[1] == 1 && plain(a) && plain(b) &&
         a.get_size() == b.get_size();
}

/// oneDNN's reference kernels are its slow fallbacks: a format they would
/// get is rejected when another exists.
bool is_ref(const char* impl) {
  return std::string(impl).find("ref") != std::string::npos;
}

/// ReLU's forward and backward (a = max(z, 0), so dz = da where a > 0). The
/// loads are unconditional and the pointers distinct, so both vectorize (a
/// branch per element would mispredict on random signs).
void relu_forward(const float* __restrict z, float* __restrict a, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k)
    a[k] = std::max(z[k], 0.0f);
}

void relu_backward(const float* __restrict a, const float* __restrict da, float* __restrict dz,
                   std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    const float d = da[k];
    dz[k] = a[k] > 0.0f ? d : 0.0f;
  }
}

}  // namespace

bound_primitive make_reorder(const md& from, const md& to, const dnnl::engine& eng) {
  return bound_primitive(dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to)), eng,
                         {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

aligned_buffer::aligned_buffer(std::size_t bytes) {
  const std::size_t n = ((bytes + 63) / 64) * 64;
  void* p = std::aligned_alloc(64, n == 0 ? 64 : n);
  if (p == nullptr)
    throw std::bad_alloc();
  std::memset(p, 0, n == 0 ? 64 : n);
  p_.reset(static_cast<float*>(p));
}

void aligned_buffer::release::operator()(float* p) const noexcept {
  std::free(p);
}

namespace {

constexpr auto train = dnnl::prop_kind::forward_training;

/// Forward pd of a conv from src/dst formats; its backward pds alongside.
/// src, weights and diff_dst in sp.compute; dst and every gradient in f32
/// (oneDNN 2.6 supports f32 outputs of bf16 convs in all three directions).
void conv_pds(stage_plan& sp, const md& src, const md& dst, bool needs_data,
              const dnnl::engine& eng) {
  const md w_any(sp.w_plain.dims(), sp.compute, tag::any);
  const md dw_any(sp.w_plain.dims(), dt::f32, tag::any);
  sp.conv = {
    {train, sp.alg, with_type(src, sp.compute), w_any, sp.b, dst, sp.strides, sp.pad, sp.pad}, eng};
  const md s = sp.conv.src_desc(), d = sp.conv.dst_desc();
  const md dd = with_type(d, sp.compute);
  sp.conv_bw = {{sp.alg, s, dw_any, sp.b, dd, sp.strides, sp.pad, sp.pad}, eng, sp.conv};
  if (needs_data)
    sp.conv_bd = {
      {sp.alg, with_type(s, dt::f32), w_any, dd, sp.strides, sp.pad, sp.pad}, eng, sp.conv};
}

bool conv_is_fast(const stage_plan& sp, bool needs_data) {
  return !is_ref(sp.conv.impl_info_str()) && !is_ref(sp.conv_bw.impl_info_str()) &&
         !(needs_data && is_ref(sp.conv_bd.impl_info_str()));
}

/// Channels padded up to a block: work and memory spent on zeros.
bool pads_channels(const md& d) {
  return d.data.padded_dims[1] != d.data.dims[1];
}

/// Tries the formats in turn: the incoming one, oneDNN's own choice
/// (blocked), then nhwc (oneDNN 2.6 runs a conv of few input channels from
/// nchw or blocked formats on reference kernels, but nhwc on brgconv/JIT).
/// Keeps the first whose forward and backward all get JIT kernels without
/// padding channels (LeNet's 6 would take the memory of 16), else the first
/// fast one.
void choose_conv(stage_plan& sp, const cnn_stage& s, std::size_t rows, bool needs_data,
                 const dnnl::engine& eng) {
  const md any_dst = shape_md(rows, s.out, false, tag::any);
  const std::pair<md, md> tries[] = {
    {sp.given, any_dst},
    {shape_md(rows, s.in, false, tag::any), any_dst},
    {shape_md(rows, s.in, false, tag::nhwc), shape_md(rows, s.out, false, tag::nhwc)}};
  const std::pair<md, md>* fast = nullptr;
  for (const auto& t : tries) {
    conv_pds(sp, t.first, t.second, needs_data, eng);
    if (!conv_is_fast(sp, needs_data))
      continue;
    if (!pads_channels(sp.conv.src_desc()) && !pads_channels(sp.conv.dst_desc()))
      return;
    fast = fast != nullptr ? fast : &t;
  }
  if (fast != nullptr)
    conv_pds(sp, fast->first, fast->second, needs_data, eng);
}

/// A conv's forward in the chosen formats, with its weights reorder.
void build_conv(stage_plan& sp, const cnn_stage& s, std::size_t rows, bool needs_data,
                const dnnl::engine& eng) {
  const auto& l = s.spec;
  sp.alg = dnnl::algorithm::convolution_direct;
  sp.w_plain = md{{D(l.out), D(s.in.channels), D(l.kernel_h), D(l.kernel_w)}, dt::f32, tag::oihw};
  sp.b = md{{D(l.out)}, dt::f32, tag::x};
  choose_conv(sp, s, rows, needs_data, eng);
  sp.src = sp.conv.src_desc();
  sp.dst = sp.conv.dst_desc();
  sp.w = sp.conv.weights_desc();
  if (sp.w != sp.w_plain) {
    sp.w_buf = aligned_buffer(sp.w.get_size());
    sp.w_to_fwd = make_reorder(sp.w_plain, sp.w, eng);
  }
  sp.fwd = bound_primitive(dnnl::convolution_forward(sp.conv), eng,
                           {{DNNL_ARG_SRC, sp.src},
                            {DNNL_ARG_WEIGHTS, sp.w},
                            {DNNL_ARG_BIAS, sp.b},
                            {DNNL_ARG_DST, sp.dst}});
}

/// Dense layers read plain activations (nchw flattened, or nc) and plain
/// weights, so the flat buffer binds to them directly.
void build_dense(stage_plan& sp, const cnn_stage& s, std::size_t rows, const dnnl::engine& eng) {
  const auto& l = s.spec;
  sp.src = shape_md(rows, s.in, s.flat_in);
  sp.dst = shape_md(rows, s.out, true);
  if (s.flat_in)
    sp.w = md{{D(l.out), D(s.in.size())}, dt::f32, tag::oi};
  else
    sp.w = md{{D(l.out), D(s.in.channels), D(s.in.height), D(s.in.width)}, dt::f32, tag::oihw};
  sp.b = md{{D(l.out)}, dt::f32, tag::x};
  if (sp.compute != dt::f32) {
    sp.w_plain = sp.w;
    build_dense_bf16(sp, sp.src, sp.dst, eng);
    return;
  }
  sp.dense = {{train, sp.src, sp.w, sp.b, sp.dst}, eng};
  sp.fwd = bound_primitive(dnnl::inner_product_forward(sp.dense), eng,
                           {{DNNL_ARG_SRC, sp.src},
                            {DNNL_ARG_WEIGHTS, sp.w},
                            {DNNL_ARG_BIAS, sp.b},
                            {DNNL_ARG_DST, sp.dst}});
}

void build_pool(stage_plan& sp, const cnn_stage& s, std::size_t rows, const dnnl::engine& eng) {
  sp.alg = s.spec.type == K::max_pool ? dnnl::algorithm::pooling_max
                                      : dnnl::algorithm::pooling_avg_exclude_padding;
  sp.src = sp.given;
  const md any_dst = shape_md(rows, s.out, false, tag::any);
  sp.pool = {{train, sp.alg, sp.src, any_dst, sp.strides, sp.kernel, sp.pad, sp.pad}, eng};
  sp.dst = sp.pool.dst_desc();
  slots args{{DNNL_ARG_SRC, sp.src}, {DNNL_ARG_DST, sp.dst}};
  if (sp.pool.workspace_desc().get_size() != 0) {  // max: where each maximum came from
    sp.ws = aligned_buffer(sp.pool.workspace_desc().get_size());
    args.emplace_back(DNNL_ARG_WORKSPACE, sp.pool.workspace_desc());
  }
  sp.fwd = bound_primitive(dnnl::pooling_forward(sp.pool), eng, args);
}

/// Batch norm; with a ReLU fused in (one pass over the activations instead
/// of three), training keeps a workspace of where the output was positive.
void build_norm(stage_plan& sp, const cnn_stage& s, const dnnl::engine& eng) {
  using F = dnnl::normalization_flags;
  const F flags = F::use_scale_shift | (sp.relu_fused ? F::fuse_norm_relu : F::none);
  sp.src = sp.dst = sp.given;
  sp.norm = {{train, sp.src, bn_epsilon, flags}, eng};
  sp.stats.mean.resize(s.in.channels);
  sp.stats.var.resize(s.in.channels);
  slots args{{DNNL_ARG_SRC, sp.src},
             {DNNL_ARG_SCALE_SHIFT, sp.norm.weights_desc()},
             {DNNL_ARG_DST, sp.dst},
             {DNNL_ARG_MEAN, sp.norm.mean_desc()},
             {DNNL_ARG_VARIANCE, sp.norm.variance_desc()}};
  if (sp.relu_fused) {
    sp.ws = aligned_buffer(sp.norm.workspace_desc().get_size());
    args.emplace_back(DNNL_ARG_WORKSPACE, sp.norm.workspace_desc());
  }
  sp.fwd = bound_primitive(dnnl::batch_normalization_forward(sp.norm), eng, args);
  dnnl::batch_normalization_forward::primitive_desc ipd(
    {dnnl::prop_kind::forward_inference, sp.src, bn_epsilon, flags | F::use_global_stats}, eng);
  sp.infer = bound_primitive(dnnl::batch_normalization_forward(ipd), eng,
                             {{DNNL_ARG_SRC, sp.src},
                              {DNNL_ARG_MEAN, ipd.mean_desc()},
                              {DNNL_ARG_VARIANCE, ipd.variance_desc()},
                              {DNNL_ARG_SCALE_SHIFT, ipd.weights_desc()},
                              {DNNL_ARG_DST, sp.dst}});
}

/// Forward primitives of a stage reading `given`; a reorder in front when
/// its primitive reads another format.
void build_forward(stage_plan& sp, const cnn_stage& s, std::size_t rows, bool first,
                   const dnnl::engine& eng) {
  const auto& l = s.spec;
  sp.strides = {D(l.stride), D(l.stride)};
  sp.pad = {D(l.pad), D(l.pad)};
  sp.kernel = {D(l.kernel_h), D(l.kernel_w)};
  switch (l.type) {
    case K::conv:
      build_conv(sp, s, rows, !first, eng);
      break;
    case K::dense:
      build_dense(sp, s, rows, eng);
      break;
    case K::max_pool:
    case K::avg_pool:
      build_pool(sp, s, rows, eng);
      break;
    case K::batch_norm:
      build_norm(sp, s, eng);
      break;
    case K::relu:
      sp.src = sp.dst = sp.given;
      break;
  }
  if (!same_layout(sp.given, sp.src)) {
    sp.src_buf = aligned_buffer(sp.src.get_size());
    sp.to_src = make_reorder(sp.given, sp.src, eng);
  }
  sp.diff_src = with_type(sp.src, dt::f32);
  sp.diff_dst = with_type(sp.dst, sp.compute);
}

/// Backward primitives of a conv; the input stage (`first`) needs no data
/// gradient.
void build_conv_backward(stage_plan& sp, bool first, const dnnl::engine& eng) {
  const md dw = sp.conv_bw.diff_weights_desc();
  if (dw != sp.w_plain) {
    sp.dw_buf = aligned_buffer(dw.get_size());
    sp.dw_to_plain = make_reorder(dw, sp.w_plain, eng);
  }
  sp.bwd_w = bound_primitive(dnnl::convolution_backward_weights(sp.conv_bw), eng,
                             {{DNNL_ARG_SRC, sp.src},
                              {DNNL_ARG_DIFF_DST, sp.diff_dst},
                              {DNNL_ARG_DIFF_WEIGHTS, dw},
                              {DNNL_ARG_DIFF_BIAS, sp.b}});
  if (first)
    return;
  sp.w_bwd = sp.conv_bd.weights_desc();
  sp.bwd_reads_fwd_weights = sp.w_bwd == sp.w && sp.w_bwd != sp.w_plain;
  if (sp.w_bwd != sp.w_plain && !sp.bwd_reads_fwd_weights) {
    sp.w_bwd_buf = aligned_buffer(sp.w_bwd.get_size());
    sp.w_to_bwd = make_reorder(sp.w_plain, sp.w_bwd, eng);
  }
  sp.bwd_data = bound_primitive(dnnl::convolution_backward_data(sp.conv_bd), eng,
                                {{DNNL_ARG_DIFF_DST, sp.diff_dst},
                                 {DNNL_ARG_WEIGHTS, sp.w_bwd},
                                 {DNNL_ARG_DIFF_SRC, sp.diff_src}});
}

void build_dense_backward(stage_plan& sp, bool first, const dnnl::engine& eng) {
  sp.bwd_w = bound_primitive(
    dnnl::inner_product_backward_weights({{sp.src, sp.w, sp.b, sp.dst}, eng, sp.dense}), eng,
    {{DNNL_ARG_SRC, sp.src},
     {DNNL_ARG_DIFF_DST, sp.dst},
     {DNNL_ARG_DIFF_WEIGHTS, sp.w},
     {DNNL_ARG_DIFF_BIAS, sp.b}});
  if (!first)
    sp.bwd_data = bound_primitive(
      dnnl::inner_product_backward_data({{sp.src, sp.w, sp.dst}, eng, sp.dense}), eng,
      {{DNNL_ARG_DIFF_DST, sp.dst}, {DNNL_ARG_WEIGHTS, sp.w}, {DNNL_ARG_DIFF_SRC, sp.src}});
}

void build_pool_backward(stage_plan& sp, const dnnl::engine& eng) {
  slots args{{DNNL_ARG_DIFF_DST, sp.dst}};
  if (sp.ws)
    args.emplace_back(DNNL_ARG_WORKSPACE, sp.pool.workspace_desc());
  args.emplace_back(DNNL_ARG_DIFF_SRC, sp.src);
  sp.bwd_data = bound_primitive(
    dnnl::pooling_backward(
      {{sp.alg, sp.src, sp.dst, sp.strides, sp.kernel, sp.pad, sp.pad}, eng, sp.pool}),
    eng, args);
}

/// Batch norm's backward yields its data gradient and its parameters' at once.
/// With a fused ReLU, diff_dst is the gradient of the ReLU's output.
void build_norm_backward(stage_plan& sp, const dnnl::engine& eng) {
  using F = dnnl::normalization_flags;
  const F flags = F::use_scale_shift | (sp.relu_fused ? F::fuse_norm_relu : F::none);
  dnnl::batch_normalization_backward::primitive_desc bpd(
    {dnnl::prop_kind::backward, sp.dst, sp.src, bn_epsilon, flags}, eng, sp.norm);
  slots args{{DNNL_ARG_SRC, sp.src},
             {DNNL_ARG_MEAN, sp.norm.mean_desc()},
             {DNNL_ARG_VARIANCE, sp.norm.variance_desc()},
             {DNNL_ARG_DIFF_DST, sp.dst},
             {DNNL_ARG_SCALE_SHIFT, sp.norm.weights_desc()},
             {DNNL_ARG_DIFF_SRC, sp.src},
             {DNNL_ARG_DIFF_SCALE_SHIFT, bpd.diff_weights_desc()}};
  if (sp.relu_fused)
    args.emplace_back(DNNL_ARG_WORKSPACE, sp.norm.workspace_desc());
  sp.bwd_data = bound_primitive(dnnl::batch_normalization_backward(bpd), eng, args);
}

void build_backward(stage_plan& sp, const cnn_stage& s, bool first, const dnnl::engine& eng) {
  build_diff_dst_conversion(sp, eng);
  switch (s.spec.type) {
    case K::conv:
      build_conv_backward(sp, first, eng);
      break;
    case K::dense:
      if (sp.compute != dt::f32)
        build_dense_backward_bf16(sp, first, eng);
      else
        build_dense_backward(sp, first, eng);
      break;
    case K::max_pool:
    case K::avg_pool:
      if (!first)
        build_pool_backward(sp, eng);
      break;
    case K::batch_norm:
      build_norm_backward(sp, eng);
      break;
    case K::relu:
      break;
  }
  // Where the data gradient lands in the primitive's format before going
  // back to the previous stage's (batch norm writes one even at the input).
  // It is f32 where src may be bf16: compared by layout, not by to_src.
  const bool writes_data = !first || s.spec.type == K::batch_norm;
  const bool moves = !same_layout(sp.given, sp.diff_src);
  if (writes_data && (moves || first))
    sp.diff_src_buf = aligned_buffer(sp.diff_src.get_size());
  if (!first && moves)
    sp.from_diff_src = make_reorder(sp.diff_src, sp.given, eng);
}

}  // namespace

// ---------------------------------------------------------------------------

cnn_plan::cnn_plan(const std::vector<cnn_stage>& stages, std::size_t rows, const dnnl::engine& eng,
                   bool bf16)
  : stages_(stages), rows_(rows), eng_(eng), st_(stages.size()) {
  md given = shape_md(rows, stages.front().in, false);  // the dataset's nchw rows
  for (std::size_t i = 0; i < stages.size(); ++i) {
    stage_plan& sp = st_[i];
    sp.given = given;
    const auto type = [&](std::size_t j) { return stages[j].spec.type; };
    sp.absorbed = i > 0 && type(i) == K::relu && type(i - 1) == K::batch_norm;
    if (sp.absorbed) {  // the batch norm's output is already the ReLU's
      sp.src = sp.dst = given;
      act_.push_back(act_.back());
      continue;
    }
    sp.relu_fused = type(i) == K::batch_norm && i + 1 < stages.size() && type(i + 1) == K::relu;
    // bf16: convs and hidden dense layers; the head (last) stays f32.
    const bool matmul = type(i) == K::conv || (type(i) == K::dense && i + 1 < stages.size());
    sp.compute = bf16 && matmul ? dt::bf16 : dt::f32;
    build_forward(sp, stages[i], rows, i == 0, eng_);
    act_.push_back(act_buf_.emplace_back(sp.dst.get_size()).data());
    given = sp.dst;
  }
}

cnn_plan::~cnn_plan() = default;

const float* cnn_plan::logits() const noexcept {
  return act_.back();
}

float* cnn_plan::dlogits() {
  if (!backward_built_) {
    backward_built_ = true;
    for (std::size_t i = 0; i < stages_.size(); ++i) {
      if (st_[i].absorbed) {
        diff_.push_back(diff_.back());
        continue;
      }
      diff_.push_back(diff_buf_.emplace_back(st_[i].dst.get_size()).data());
      build_backward(st_[i], stages_[i], i == 0, eng_);
    }
  }
  return diff_.back();
}

std::vector<bn_stats> cnn_plan::stats() const {
  std::vector<bn_stats> out;
  for (const auto& sp : st_)
    out.push_back(sp.stats);
  return out;
}

/// Stage i's input in its primitive's format (reordered by forward).
const float* cnn_plan::stage_input(std::size_t i, const float* x) const {
  if (st_[i].to_src)
    return st_[i].src_buf.data();
  return i == 0 ? x : act_[i - 1];
}

void cnn_plan::forward(dnnl::stream& s, const float* x, const float* params,
                       const std::vector<bn_stats>* global) {
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    if (st_[i].absorbed)
      continue;
    if (st_[i].to_src)
      st_[i].to_src.run(s, {i == 0 ? x : act_[i - 1], st_[i].src_buf.data()});
    forward_stage(s, i, stage_input(i, x), params, global);
  }
}

void cnn_plan::forward_stage(dnnl::stream& s, std::size_t i, const float* src, const float* params,
                             const std::vector<bn_stats>* global) {
  const cnn_stage& st = stages_[i];
  stage_plan& sp = st_[i];
  float* dst = act_[i];
  const float* w = params + st.weight_off;
  switch (st.spec.type) {
    case K::conv:
    case K::dense:  // f32 dense layers read the buffer's plain weights
      if (sp.w_to_fwd) {
        sp.w_to_fwd.run(s, {w, sp.w_buf.data()});
        w = sp.w_buf.data();
      }
      sp.fwd.run(s, {src, w, params + st.bias_off, dst});
      break;
    case K::max_pool:
    case K::avg_pool:
      if (sp.ws)
        sp.fwd.run(s, {src, dst, sp.ws.data()});
      else
        sp.fwd.run(s, {src, dst});
      break;
    case K::batch_norm:
      if (global != nullptr)
        sp.infer.run(s, {src, (*global)[i].mean.data(), (*global)[i].var.data(), w, dst});
      else if (sp.relu_fused)
        sp.fwd.run(s, {src, w, dst, sp.stats.mean.data(), sp.stats.var.data(), sp.ws.data()});
      else
        sp.fwd.run(s, {src, w, dst, sp.stats.mean.data(), sp.stats.var.data()});
      break;
    case K::relu:  // also over blocked padding, which stays 0
      relu_forward(src, dst, sp.dst.get_size() / sizeof(float));
      break;
  }
}

void cnn_plan::backward(dnnl::stream& s, const float* x, const float* params, float* grad) {
  for (std::size_t i = stages_.size(); i-- > 0;) {
    if (st_[i].absorbed)
      continue;
    backward_stage(s, i, stage_input(i, x), params, grad);
    if (st_[i].from_diff_src)
      st_[i].from_diff_src.run(s, {st_[i].diff_src_buf.data(), diff_[i - 1]});
  }
}

void cnn_plan::backward_stage(dnnl::stream& s, std::size_t i, const float* src, const float* params,
                              float* grad) {
  const cnn_stage& st = stages_[i];
  stage_plan& sp = st_[i];
  const float* dout = diff_[i];
  if (sp.to_diff_dst) {  // bf16
    sp.to_diff_dst.run(s, {dout, sp.diff_dst_buf.data()});
    dout = sp.diff_dst_buf.data();
  }
  // d objective / d input, in the primitive's format; none for the input rows.
  float* din = sp.diff_src_buf ? sp.diff_src_buf.data() : i > 0 ? diff_[i - 1] : nullptr;
  const float* w = params + st.weight_off;
  switch (st.spec.type) {
    case K::conv:
    case K::dense: {  // f32 dense layers: plain, no reorders
      float* dw = sp.dw_buf ? sp.dw_buf.data() : grad + st.weight_off;
      sp.bwd_w.run(s, {src, dout, dw, grad + st.bias_off});
      if (sp.dw_to_plain)
        sp.dw_to_plain.run(s, {dw, grad + st.weight_off});
      if (i == 0)
        break;
      if (sp.w_to_bwd) {
        sp.w_to_bwd.run(s, {w, sp.w_bwd_buf.data()});
        w = sp.w_bwd_buf.data();
      } else if (sp.bwd_reads_fwd_weights) {
        w = sp.w_buf.data();  // reordered by this step's forward
      }
      sp.bwd_data.run(s, {dout, w, din});
      break;
    }
    case K::max_pool:
    case K::avg_pool:
      if (i == 0)
        break;
      if (sp.ws)
        sp.bwd_data.run(s, {dout, sp.ws.data(), din});
      else
        sp.bwd_data.run(s, {dout, din});
      break;
    case K::batch_norm: {
      const float* mean = sp.stats.mean.data();
      const float* var = sp.stats.var.data();
      if (sp.relu_fused)
        sp.bwd_data.run(s, {src, mean, var, dout, w, din, grad + st.weight_off, sp.ws.data()});
      else
        sp.bwd_data.run(s, {src, mean, var, dout, w, din, grad + st.weight_off});
      break;
    }
    case K::relu:
      if (i > 0)
        relu_backward(act_[i], dout, din, sp.dst.get_size() / sizeof(float));
      break;
  }
}

}  // namespace atrain::detail
