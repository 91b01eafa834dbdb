#pragma once
// bench_kernels' FLOP accounting: the floating-point work of one CNN training
// step, and this core's FP32 peak measured with a loop of independent FMAs
// (and its bf16 peak, with vdpbf16ps, where it has AVX512_BF16).
#include <immintrin.h>
#include <time.h>

#include <cstddef>

#include "atrain/kernels/cnn.hpp"

namespace bench {

/// Multiply-adds of one row's forward pass through the convolutions and dense
/// layers (the head included), and of the first layer alone. Pools, ReLU,
/// batch norm and the loss are a few operations per activation: left out.
struct macs {
  double all = 0, first = 0;
};

inline macs cnn_forward_macs(const atrain::cnn_config& c) {
  using K = atrain::cnn_layer::kind;
  std::size_t ch = c.input.channels, h = c.input.height, w = c.input.width;
  macs m;
  auto all = c.layers;
  all.push_back({K::dense, c.classes, 0, 0, 1, 0});
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& l = all[i];
    double here = 0;
    if (l.type == K::conv || l.type == K::max_pool || l.type == K::avg_pool) {
      const std::size_t oh = (h + 2 * l.pad - l.kernel_h) / l.stride + 1;
      const std::size_t ow = (w + 2 * l.pad - l.kernel_w) / l.stride + 1;
      if (l.type == K::conv) {
        here = double(l.out) * double(ch * l.kernel_h * l.kernel_w * oh * ow);
        ch = l.out;
      }
      h = oh;
      w = ow;
    } else if (l.type == K::dense) {
      here = double(l.out) * double(ch * h * w);
      ch = l.out;
      h = w = 1;
    }
    m.all += here;
    if (i == 0)
      m.first = here;
  }
  return m;
}

/// FLOPs of one training step of `rows` rows: forward, backward-data and
/// backward-weights each cost the forward's multiply-adds (the usual 3x), 2
/// FLOPs per multiply-add; the first layer's backward-data is not needed.
inline double cnn_step_flops(const atrain::cnn_config& c, std::size_t rows) {
  const macs m = cnn_forward_macs(c);
  return 2.0 * double(rows) * (3.0 * m.all - m.first);
}

inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// FP32 FLOPs per CPU second of 16 independent chains of 512-bit FMAs (enough
/// to cover the FMA latency on every x86 core with AVX-512): the peak a kernel
/// could reach on this core. 0 without AVX-512.
__attribute__((target("avx512f"))) inline double avx512_fma_peak(double seconds) {
  if (!__builtin_cpu_supports("avx512f"))
    return 0;
  __m512 acc[16];
  for (int i = 0; i < 16; ++i)
    acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const double t0 = thread_cpu_seconds();
    double flops = 0, t = 0;
    do {
      for (int it = 0; it < 100000; ++it)
        for (int i = 0; i < 16; ++i)
          acc[i] = _mm512_fmadd_ps(acc[i], a, b);
      flops += 100000.0 * 16 * 16 * 2;
      t = thread_cpu_seconds() - t0;
    } while (t < seconds / 5);
    best = flops / t > best ? flops / t : best;
  }
  float sink = 0;
  alignas(64) float lanes[16];
  for (int i = 0; i < 16; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    for (float v : lanes)
      sink += v;
  }
  return sink == 12345.f ? 0 : best;  // keeps the loop alive
}

/// bf16 FLOPs per CPU second of 16 independent chains of 512-bit vdpbf16ps
/// (each: 32 bf16 products summed in pairs into 16 FP32 lanes, 64 FLOPs):
/// what bf16 convolutions could reach on this core. 0 without AVX512_BF16.
__attribute__((target("avx512f,avx512bf16"))) inline double avx512_bf16_peak(double seconds) {
  if (!__builtin_cpu_supports("avx512bf16"))
    return 0;
  __m512 acc[16];
  for (int i = 0; i < 16; ++i)
    acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7f), _mm512_set1_ps(2e-7f));
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const double t0 = thread_cpu_seconds();
    double flops = 0, t = 0;
    do {
      for (int it = 0; it < 100000; ++it)
        for (int i = 0; i < 16; ++i)
          acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
      flops += 100000.0 * 16 * 64;
      t = thread_cpu_seconds() - t0;
    } while (t < seconds / 5);
    best = flops / t > best ? flops / t : best;
  }
  float sink = 0;
  alignas(64) float lanes[16];
  for (int i = 0; i < 16; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    for (float v : lanes)
      sink += v;
  }
  return sink == 12345.f ? 0 : best;  // keeps the loop alive
}

}  // namespace bench
