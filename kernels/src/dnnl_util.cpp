#include "dnnl_util.hpp"

#include <cassert>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace atrain::detail {

bound_primitive::bound_primitive(dnnl::primitive prim, const dnnl::engine& eng,
                                 const std::vector<std::pair<int, dnnl::memory::desc>>& slots)
  : prim_(std::move(prim)) {
  for (const auto& [arg, md] : slots) {
    mems_.emplace_back(md, eng, static_cast<void*>(DNNL_MEMORY_NONE));
    args_.emplace(arg, mems_.back());
  }
}

void bound_primitive::run(dnnl::stream& s, std::initializer_list<const float*> ptrs) {
  assert(ptrs.size() == mems_.size());
  auto m = mems_.begin();
  // oneDNN takes non-const handles; sources are only read.
  for (const float* p : ptrs)
    (m++)->set_data_handle(const_cast<float*>(p));
  prim_.execute(s, args_);
  s.wait();
}

void check_batch(const std::string& model, const batch_view& batch, std::size_t dim,
                 std::size_t classes) {
  if (batch.dim != dim)
    throw std::invalid_argument(model + ": batch has dim " + std::to_string(batch.dim));
  if (batch.rows == 0)
    throw std::invalid_argument(model + ": empty batch");
  const auto k = static_cast<std::int32_t>(classes);
  for (std::size_t i = 0; i < batch.rows; ++i)
    if (batch.y[i] < 0 || batch.y[i] >= k)
      throw std::invalid_argument(model + ": label " + std::to_string(batch.y[i]) + " at row " +
                                  std::to_string(i) + " is outside [0, " + std::to_string(k) + ")");
}

// ---------------------------------------------------------------------------

namespace {

/// 64-byte aligned float buffer.
struct aligned_free {
  void operator()(float* p) const noexcept { std::free(p); }
};
using fbuf = std::unique_ptr<float[], aligned_free>;

fbuf make_buf(std::size_t n) {
  const std::size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
  void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
  if (p == nullptr)
    throw std::bad_alloc();
  return fbuf(static_cast<float*>(p));
}

}  // namespace

namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
dnnl::memory::dim dim(std::size_t v) {
  return static_cast<dnnl::memory::dim>(v);
}
}  // namespace

/// Primitives and buffers of one layer for one chunk row count.
struct layer_plan {
  dnnl::memory::desc src, weights, bias, dst;
  dnnl::inner_product_forward::primitive_desc fwd_pd;
  bound_primitive fwd;       // dst = act(src W + b): {SRC, WEIGHTS, BIAS, DST}
  bound_primitive bwd_data;  // diff_src = diff_dst W^T: {DIFF_DST, WEIGHTS, DIFF_SRC}
  bound_primitive
    bwd_w;  // dW = src^T diff_dst, db = colsum: {SRC, DIFF_DST, DIFF_WEIGHTS, DIFF_BIAS}
};

struct dense_net::plan {
  std::size_t rows = 0;
  std::uint64_t last_use = 0;
  std::vector<layer_plan> layer;
  std::vector<fbuf> act;    // act[l], l = 1..L (act[0] is the input)
  std::vector<fbuf> delta;  // delta[l] = d objective / d pre-activation of act[l], l = 1..L
};

dense_net::dense_net(std::vector<std::size_t> widths)
  : widths_(std::move(widths)), eng_(dnnl::engine::kind::cpu, 0), strm_(eng_) {
  std::size_t off = 0;
  for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
    weight_off_.push_back(off);
    off += widths_[l] * widths_[l + 1];
    bias_off_.push_back(off);
    off += widths_[l + 1];
  }
}

dense_net::~dense_net() = default;

dense_net::plan& dense_net::plan_for(std::size_t rows) {
  ++clock_;
  for (auto& p : plans_) {
    if (p->rows == rows) {
      p->last_use = clock_;
      return *p;
    }
  }
  if (plans_.size() >= max_plans) {
    auto lru = std::min_element(plans_.begin(), plans_.end(), [](const auto& a, const auto& b) {
      return a->last_use < b->last_use;
    });
    plans_.erase(lru);
  }
  auto p = std::make_unique<plan>();
  p->rows = rows;
  p->last_use = clock_;
  const std::size_t L = layers();
  p->act.resize(L + 1);
  p->delta.resize(L + 1);
  p->layer.resize(L);
  for (std::size_t l = 0; l < L; ++l) {
    auto& lp = p->layer[l];
    const std::size_t in = widths_[l], out = widths_[l + 1];
    lp.src = {{dim(rows), dim(in)}, dt::f32, tag::nc};
    lp.weights = {{dim(out), dim(in)}, dt::f32, tag::io};  // W stored in x out, row-major
    lp.bias = {{dim(out)}, dt::f32, tag::x};
    lp.dst = {{dim(rows), dim(out)}, dt::f32, tag::nc};
    dnnl::post_ops po;
    if (l + 1 < L)
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    lp.fwd_pd = dnnl::inner_product_forward::primitive_desc(
      dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, lp.src, lp.weights,
                                        lp.bias, lp.dst),
      attr, eng_);
    lp.fwd = bound_primitive(dnnl::inner_product_forward(lp.fwd_pd), eng_,
                             {{DNNL_ARG_SRC, lp.src},
                              {DNNL_ARG_WEIGHTS, lp.weights},
                              {DNNL_ARG_BIAS, lp.bias},
                              {DNNL_ARG_DST, lp.dst}});
    p->act[l + 1] = make_buf(rows * out);
  }
  plans_.push_back(std::move(p));
  return *plans_.back();
}

const float* dense_net::forward(plan& p, const float* x, const float* params) {
  const std::size_t L = layers();
  for (std::size_t l = 0; l < L; ++l) {
    const float* src = l == 0 ? x : p.act[l].get();
    p.layer[l].fwd.run(strm_,
                       {src, params + weight_off_[l], params + bias_off_[l], p.act[l + 1].get()});
  }
  return p.act[L].get();
}

float* dense_net::delta_out(plan& p) {
  const std::size_t L = layers();
  if (!p.delta[L]) {
    for (std::size_t l = 1; l <= L; ++l)
      p.delta[l] = make_buf(p.rows * widths_[l]);
    for (std::size_t l = 0; l < L; ++l) {
      auto& lp = p.layer[l];
      lp.bwd_w = bound_primitive(
        dnnl::inner_product_backward_weights(dnnl::inner_product_backward_weights::primitive_desc(
          dnnl::inner_product_backward_weights::desc(lp.src, lp.weights, lp.bias, lp.dst), eng_,
          lp.fwd_pd)),
        eng_,
        {{DNNL_ARG_SRC, lp.src},
         {DNNL_ARG_DIFF_DST, lp.dst},
         {DNNL_ARG_DIFF_WEIGHTS, lp.weights},
         {DNNL_ARG_DIFF_BIAS, lp.bias}});
      if (l == 0)
        continue;  // no gradient for the input
      lp.bwd_data = bound_primitive(
        dnnl::inner_product_backward_data(dnnl::inner_product_backward_data::primitive_desc(
          dnnl::inner_product_backward_data::desc(lp.src, lp.weights, lp.dst), eng_, lp.fwd_pd)),
        eng_,
        {{DNNL_ARG_DIFF_DST, lp.dst}, {DNNL_ARG_WEIGHTS, lp.weights}, {DNNL_ARG_DIFF_SRC, lp.src}});
    }
  }
  return p.delta[L].get();
}

void dense_net::backward(plan& p, const float* x, const float* params, float* grad) {
  const std::size_t rows = p.rows;
  for (std::size_t l = layers(); l-- > 0;) {
    auto& lp = p.layer[l];
    const float* src = l == 0 ? x : p.act[l].get();
    const float* dout = p.delta[l + 1].get();
    lp.bwd_w.run(strm_, {src, dout, grad + weight_off_[l], grad + bias_off_[l]});
    if (l == 0)
      break;
    float* din = p.delta[l].get();
    lp.bwd_data.run(strm_, {dout, params + weight_off_[l], din});
    const float* a = p.act[l].get();  // post-ReLU: the derivative is 1 where a > 0
    const std::size_t n = rows * widths_[l];
    for (std::size_t i = 0; i < n; ++i)
      din[i] = a[i] > 0.0f ? din[i] : 0.0f;
  }
}

void dense_net::add(const float* from, float* to) const {
  const std::size_t n = num_params();
  for (std::size_t i = 0; i < n; ++i)
    to[i] += from[i];
}

}  // namespace atrain::detail
