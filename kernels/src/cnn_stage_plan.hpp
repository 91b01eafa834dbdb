#pragma once
// Internal to kernels/: one stage's primitives, formats and buffers within a
// cnn_plan (cnn_plan.cpp builds and runs them), and the pieces of the bf16
// compute path (cnn_bf16.cpp) that cnn_plan.cpp calls.
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "cnn_plan.hpp"
#include "dnnl_util.hpp"

namespace atrain::detail {

/// One stage's primitives, formats and buffers. `compute` is the type the
/// stage's primitive reads (src, weights, diff_dst): f32, or bf16 for convs
/// and hidden dense layers of a bf16 net. Its outputs (dst, diff_src,
/// diff_weights, diff_bias) are f32 either way, so every other stage, and
/// the parameter buffer, stay f32.
struct stage_plan {
  using md = dnnl::memory::desc;
  dnnl::memory::data_type compute = dnnl::memory::data_type::f32;
  md given;           // the format the previous stage wrote (or the input rows')
  md src, dst, w, b;  // what this stage's primitive reads and writes; w: weights as run
  md w_plain, w_bwd;  // conv/dense: flat-buffer weights (oihw/oi); backward data's weights
  md diff_src;        // backward data's output: src's layout in f32
  md diff_dst;        // what the backward primitives read: dst's layout in `compute`
  dnnl::memory::dims strides, pad, kernel;
  dnnl::algorithm alg = dnnl::algorithm::undef;
  dnnl::convolution_forward::primitive_desc conv;
  dnnl::convolution_backward_weights::primitive_desc conv_bw;
  dnnl::convolution_backward_data::primitive_desc conv_bd;
  dnnl::inner_product_forward::primitive_desc dense;
  dnnl::pooling_forward::primitive_desc pool;
  dnnl::batch_normalization_forward::primitive_desc norm;
  bound_primitive fwd, infer, bwd_data, bwd_w;
  bound_primitive to_src, from_diff_src;            // given <-> src when they differ
  bound_primitive w_to_fwd, w_to_bwd, dw_to_plain;  // weights: plain <-> chosen
  bound_primitive to_diff_dst;                      // bf16: f32 diff_dst -> compute type
  bool bwd_reads_fwd_weights = false;               // backward data shares w_buf
  bool relu_fused = false;  // batch norm: the ReLU after it runs inside (fuse_norm_relu)
  bool absorbed = false;    // ReLU: runs inside the batch norm before it
  // Raw storage (f32 or bf16, sized by the descs in bytes).
  aligned_buffer src_buf, diff_src_buf, w_buf, w_bwd_buf, dw_buf, diff_dst_buf, ws;
  bn_stats stats;
};

/// The same dims and layout (strides count elements) holding type t.
[[nodiscard]] dnnl::memory::desc with_type(const dnnl::memory::desc& d, dnnl::memory::data_type t);

[[nodiscard]] bound_primitive make_reorder(const dnnl::memory::desc& from,
                                           const dnnl::memory::desc& to, const dnnl::engine& eng);

/// A bf16 hidden dense layer's forward: bf16 src in the plain layout an f32
/// one would read (the stage's to_src converts), bf16 weights in the format
/// oneDNN picks (reordered from the plain f32 buffer), f32 dst.
void build_dense_bf16(stage_plan& sp, const dnnl::memory::desc& src, const dnnl::memory::desc& dst,
                      const dnnl::engine& eng);

/// Its backward: f32 diff weights and bias (reordered to plain if oneDNN
/// picks another format), f32 diff_src from bf16 diff_dst and weights.
void build_dense_backward_bf16(stage_plan& sp, bool first, const dnnl::engine& eng);

/// A stage whose backward primitives read diff_dst in another type than the
/// f32 the next stage writes gets a buffer and a reorder for it.
void build_diff_dst_conversion(stage_plan& sp, const dnnl::engine& eng);

}  // namespace atrain::detail
