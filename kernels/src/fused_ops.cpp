// Fused passes (fused_ops.hpp). Each is one loop over the coordinates reading
// every input stream at once, with the number of in-neighbours a template
// argument up to max_fused (the inner loop unrolled, the outer vectorised):
// measured on the 2-core EPYC VM at d = 203 530 with 5 in-neighbours, this
// streams 1.7x (tracker) and 2.3x (pull) faster than the same work in blocks
// of one page per stream, and faster than one pass per step.
#include "atrain/kernels/fused_ops.hpp"

#include "atrain/kernels/vector_ops.hpp"
#include "clones.hpp"

#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <utility>

namespace atrain::vec {

namespace {

// In-neighbours handled in one pass; more go on in further passes (or, for
// the pull, the unfused steps).
constexpr std::size_t max_fused = 8;

/// Calls f(std::integral_constant<K>) for the K == k in 0..max_fused.
template <class F, std::size_t... K>
ATRAIN_INLINE inline void with_count(std::size_t k, F&& f, std::index_sequence<K...>) {
  ((k == K ? f(std::integral_constant<std::size_t, K>{}) : void()), ...);
}

template <class F>
ATRAIN_INLINE inline void with_count(std::size_t k, F&& f) {
  with_count(k, f, std::make_index_sequence<max_fused + 1>{});
}

/// Inf and NaN have every exponent bit set: or-ing that test over a pass
/// vectorises (as all_finite's does) and costs nothing in a memory-bound loop.
ATRAIN_INLINE inline std::uint32_t non_finite(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
}

ATRAIN_INLINE inline std::uint64_t non_finite(double x) {
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  constexpr std::uint64_t exp_mask = 0x7ff0000000000000ull;
  return static_cast<std::uint64_t>((bits & exp_mask) == exp_mask);
}

template <std::size_t K>
ATRAIN_INLINE inline bool descend_pass(float* __restrict x, const float* __restrict d, float step,
                                       float* __restrict v, const float* const* others,
                                       const double* w, std::size_t n) {
  std::array<const float*, K> o;
  for (std::size_t k = 0; k < K; ++k)
    o[k] = others[k];
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float vi = x[i] - step * d[i];
    v[i] = vi;
    bad |= non_finite(vi);
    double acc = 0.0;  // (weighted_sum's start: 0 + -0.0 is +0.0)
    acc += w[0] * static_cast<double>(vi);
    for (std::size_t k = 0; k < K; ++k)
      acc += w[k + 1] * static_cast<double>(o[k][i]);
    x[i] = static_cast<float>(acc);
  }
  return bad == 0;
}

/// z += c (hat - used) for news[0, K), in turn, onto zk (coordinate i).
template <std::size_t K>
ATRAIN_INLINE inline double add_news(double zk, const std::array<tracking_news, K>& news,
                                     std::size_t i) {
  for (std::size_t k = 0; k < K; ++k)
    zk += news[k].c * (news[k].hat[i] - news[k].used[i]);
  return zk;
}

template <std::size_t K>
ATRAIN_INLINE inline std::array<tracking_news, K> first_news(const tracking_news* news) {
  std::array<tracking_news, K> out;
  for (std::size_t k = 0; k < K; ++k)
    out[k] = news[k];
  return out;
}

template <std::size_t K>
ATRAIN_INLINE inline bool wake_pass(const tracking_wake& w, const tracking_news* news,
                                    std::size_t n) {
  const auto nb = first_news<K>(news);
  const double c_self = w.c_self, scale = w.scale;
  const float* __restrict g = w.g;
  double* __restrict z = w.z;
  float* __restrict g_prev = w.g_prev;
  const double* __restrict rho_old = w.rho_old;
  double* __restrict rho_new = w.rho_new;
  float* __restrict d = w.d;
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double gk = g[i];
    double zk = z[i] + (gk - static_cast<double>(g_prev[i]));
    g_prev[i] = g[i];
    const double r = rho_old[i] + zk;
    rho_new[i] = r;
    bad |= non_finite(r);
    zk *= c_self;
    d[i] = static_cast<float>(zk * scale);
    z[i] = add_news(zk, nb, i);
  }
  return bad == 0;
}

template <std::size_t K>
ATRAIN_INLINE inline void news_pass(double* __restrict z, const tracking_news* news,
                                    std::size_t n) {
  const auto nb = first_news<K>(news);
  for (std::size_t i = 0; i < n; ++i)
    z[i] = add_news(z[i], nb, i);
}

/// The news from `first` on, max_fused per pass over z.
ATRAIN_INLINE inline void news_passes(double* z, const std::vector<tracking_news>& news,
                                      std::size_t first, std::size_t n) {
  for (std::size_t k = first; k < news.size(); k += max_fused) {
    const std::size_t count = std::min(max_fused, news.size() - k);
    with_count(count, [&](auto c) ATRAIN_INLINE { news_pass<c.value>(z, news.data() + k, n); });
  }
}

}  // namespace

ATRAIN_CLONES bool descend_weighted_sum(float* x, const float* d, float step, float* v,
                                        const std::vector<const float*>& others,
                                        const std::vector<double>& w, std::size_t n) {
  assert(others.size() + 1 == w.size());
  bool finite = true;
  if (others.size() <= max_fused) {
    with_count(others.size(), [&](auto c) ATRAIN_INLINE {
      finite = descend_pass<c.value>(x, d, step, v, others.data(), w.data(), n);
    });
    return finite;
  }
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = x[i] - step * d[i];
    bad |= non_finite(v[i]);
  }
  std::vector<const float*> parts{v};
  parts.insert(parts.end(), others.begin(), others.end());
  weighted_sum(parts, w, x, n);
  return bad == 0;
}

ATRAIN_CLONES bool track_wake(const tracking_wake& w, const std::vector<tracking_news>& news,
                              std::size_t n) {
  const std::size_t first = std::min(max_fused, news.size());
  bool finite = true;
  with_count(first, [&](auto c) ATRAIN_INLINE { finite = wake_pass<c.value>(w, news.data(), n); });
  news_passes(w.z, news, first, n);
  return finite;
}

ATRAIN_CLONES void absorb_news(double* z, const std::vector<tracking_news>& news, std::size_t n) {
  news_passes(z, news, 0, n);
}

}  // namespace atrain::vec
