#pragma once
/// Fused passes of the decentralised algorithms: several steps of a wake in
/// one pass over the vectors, each coordinate's arithmetic exactly that of
/// the steps done one after the other (the same bits), for memory traffic:
/// at d = 203 530 every separate pass streams megabytes.
#include <cstddef>
#include <vector>

namespace atrain::vec {

/// v = x - step d (in float), then x = w[0] v + sum_k w[k+1] others[k] as
/// weighted_sum would (accumulated in double, in that order). v and the
/// others must not overlap x. Returns whether every v is finite (all_finite
/// in the same pass: the v are sent, and their receivers would ask).
[[nodiscard]] bool descend_weighted_sum(float* x, const float* d, float step, float* v,
                                        const std::vector<const float*>& others,
                                        const std::vector<double>& w, std::size_t n);

/// Gradient tracking (R-FAST's tracker): an in-neighbour's news, z += c (hat - used).
struct tracking_news {
  const double* hat;
  const double* used;
  double c;
};

/// One tracker wake's vectors (all distinct) and scalars, for track_wake.
struct tracking_wake {
  const float* g;
  double* z;
  float* g_prev;
  const double* rho_old;
  double* rho_new;
  float* d;
  double c_self;
  double scale;
};

/// Per coordinate, in this order: z += g - g_prev; g_prev = g; rho_new =
/// rho_old + z; z *= c_self; d = float(z * scale); then z += c (hat - used)
/// for each news in turn. Returns whether every rho_new is finite.
[[nodiscard]] bool track_wake(const tracking_wake& w, const std::vector<tracking_news>& news,
                              std::size_t n);
/// z += c (hat - used) for each news in turn, per coordinate.
void absorb_news(double* z, const std::vector<tracking_news>& news, std::size_t n);

}  // namespace atrain::vec
