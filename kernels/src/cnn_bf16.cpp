// The bf16 compute path of the CNN (cnn.hpp: cnn_config::bf16): the support
// check, and the pieces cnn_plan.cpp builds for a bf16 stage. A conv there is
// the f32 one's construction with bf16 src/weights/diff_dst descs (cnn_plan.cpp
// parameterises it by stage_plan::compute); dense layers, which run plain in
// f32, get their own construction here.
#include <stdexcept>
#include <string>

#include "atrain/kernels/cnn.hpp"
#include "cnn_stage_plan.hpp"

namespace atrain {

namespace {

std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::all:
      return "all";
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
  }
  return "unknown (" + std::to_string(static_cast<int>(isa)) + ")";
}

}  // namespace

bool cnn_bf16_supported() {
  // The ISA values are nested bit sets: avx512_core_amx contains
  // avx512_core_bf16's bits, avx2_vnni does not. oneDNN 2.6 would emulate
  // bf16 on plain avx512_core, several times slower than f32: refused.
  const auto need = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & need) == need;
}

namespace detail {

void require_bf16() {
  if (!cnn_bf16_supported())
    throw std::invalid_argument(
      "cnn: bf16 needs a CPU with AVX512_BF16; this one's oneDNN ISA is " +
      isa_name(dnnl::get_effective_cpu_isa()) + " (set cnn_config::bf16 = false)");
}

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

md with_type(const md& d, dt t) {
  md out = d;  // blocking strides and offsets count elements, not bytes
  out.data.data_type = static_cast<dnnl_data_type_t>(t);
  return out;
}

void build_dense_bf16(stage_plan& sp, const md& src, const md& dst, const dnnl::engine& eng) {
  constexpr auto train = dnnl::prop_kind::forward_training;
  sp.src = with_type(src, dt::bf16);
  sp.dst = dst;
  sp.b = md{{dst.dims()[1]}, dt::f32, tag::x};
  const md w_any(sp.w_plain.dims(), dt::bf16, tag::any);
  sp.dense = {{train, sp.src, w_any, sp.b, sp.dst}, eng};
  sp.w = sp.dense.weights_desc();
  sp.w_buf = aligned_buffer(sp.w.get_size());
  sp.w_to_fwd = make_reorder(sp.w_plain, sp.w, eng);
  sp.fwd = bound_primitive(dnnl::inner_product_forward(sp.dense), eng,
                           {{DNNL_ARG_SRC, sp.src},
                            {DNNL_ARG_WEIGHTS, sp.w},
                            {DNNL_ARG_BIAS, sp.b},
                            {DNNL_ARG_DST, sp.dst}});
}

void build_dense_backward_bf16(stage_plan& sp, bool first, const dnnl::engine& eng) {
  const md dw_any(sp.w_plain.dims(), dt::f32, tag::any);
  const dnnl::inner_product_backward_weights::primitive_desc bw({sp.src, dw_any, sp.b, sp.diff_dst},
                                                                eng, sp.dense);
  const md dw = bw.diff_weights_desc();
  if (dw != sp.w_plain) {
    sp.dw_buf = aligned_buffer(dw.get_size());
    sp.dw_to_plain = make_reorder(dw, sp.w_plain, eng);
  }
  sp.bwd_w = bound_primitive(dnnl::inner_product_backward_weights(bw), eng,
                             {{DNNL_ARG_SRC, sp.src},
                              {DNNL_ARG_DIFF_DST, sp.diff_dst},
                              {DNNL_ARG_DIFF_WEIGHTS, dw},
                              {DNNL_ARG_DIFF_BIAS, sp.b}});
  if (first)
    return;
  const md w_any(sp.w_plain.dims(), dt::bf16, tag::any);
  const dnnl::inner_product_backward_data::primitive_desc bd({sp.diff_src, w_any, sp.diff_dst}, eng,
                                                             sp.dense);
  sp.w_bwd = bd.weights_desc();
  sp.bwd_reads_fwd_weights = sp.w_bwd == sp.w;
  if (!sp.bwd_reads_fwd_weights) {
    sp.w_bwd_buf = aligned_buffer(sp.w_bwd.get_size());
    sp.w_to_bwd = make_reorder(sp.w_plain, sp.w_bwd, eng);
  }
  sp.bwd_data = bound_primitive(dnnl::inner_product_backward_data(bd), eng,
                                {{DNNL_ARG_DIFF_DST, sp.diff_dst},
                                 {DNNL_ARG_WEIGHTS, sp.w_bwd},
                                 {DNNL_ARG_DIFF_SRC, sp.diff_src}});
}

void build_diff_dst_conversion(stage_plan& sp, const dnnl::engine& eng) {
  if (sp.diff_dst == sp.dst)
    return;
  sp.diff_dst_buf = aligned_buffer(sp.diff_dst.get_size());
  sp.to_diff_dst = make_reorder(sp.dst, sp.diff_dst, eng);
}

}  // namespace detail

}  // namespace atrain
