// The fused passes (fused_ops.hpp) against the steps done one after the
// other in plain loops, bit for bit, and the finiteness each pass reports of
// what it writes for sending. In-neighbour counts on both sides of max_fused (8).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "atrain/kernels/fused_ops.hpp"
#include "random_vectors.hpp"

using namespace atrain;

namespace {

constexpr std::size_t n = 1037;  // not a multiple of any vector width
const std::size_t in_counts[] = {0, 1, 5, 8, 9, 17};

std::vector<float> randf(std::uint64_t seed) {
  return test::randf(n, seed);
}

std::vector<double> randd(std::uint64_t seed) {
  return test::randd(n, seed);
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// One tracker wake's inputs, and the wake done step by step.
struct wake_case {
  std::vector<float> g = randf(1);
  std::vector<double> z = randd(2), rho_old = randd(4);
  std::vector<float> g_prev = randf(3);
  std::vector<std::vector<double>> hat, used;
  std::vector<double> c;
  double c_self = 0.3, scale = 1.7;

  explicit wake_case(std::size_t k) {
    for (std::size_t j = 0; j < k; ++j) {
      hat.push_back(randd(10 + j));
      used.push_back(randd(50 + j));
      c.push_back(0.1 + 0.05 * static_cast<double>(j));
    }
  }

  void start(std::vector<double>& z_out, std::vector<float>& g_prev_out,
             std::vector<double>& rho_new, std::vector<float>& d) const {
    z_out = z;
    g_prev_out = g_prev;
    rho_new.assign(n, 0.0);
    d.assign(n, 0.0f);
  }

  /// z, g_prev, rho_new, d after the fused pass; returns its answer.
  bool fused(std::vector<double>& z_out, std::vector<float>& g_prev_out,
             std::vector<double>& rho_new, std::vector<float>& d) const {
    start(z_out, g_prev_out, rho_new, d);
    std::vector<vec::tracking_news> news;
    for (std::size_t j = 0; j < hat.size(); ++j)
      news.push_back({hat[j].data(), used[j].data(), c[j]});
    return vec::track_wake({g.data(), z_out.data(), g_prev_out.data(), rho_old.data(),
                            rho_new.data(), d.data(), c_self, scale},
                           news, n);
  }

  /// The documented order, one step after the other; volatile keeps every
  /// product rounded on its own (no fused multiply-add).
  void stepwise(std::vector<double>& z_out, std::vector<float>& g_prev_out,
                std::vector<double>& rho_new, std::vector<float>& d) const {
    start(z_out, g_prev_out, rho_new, d);
    for (std::size_t i = 0; i < n; ++i) {
      const double gi = g[i];
      z_out[i] += gi - static_cast<double>(g_prev_out[i]);
      g_prev_out[i] = g[i];
      rho_new[i] = rho_old[i] + z_out[i];
      z_out[i] *= c_self;
      volatile double scaled = z_out[i] * scale;
      d[i] = static_cast<float>(scaled);
    }
    for (std::size_t j = 0; j < hat.size(); ++j)
      for (std::size_t i = 0; i < n; ++i) {
        volatile double term = c[j] * (hat[j][i] - used[j][i]);
        z_out[i] += term;
      }
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(fused_ops)

BOOST_AUTO_TEST_CASE(track_wake_is_the_steps_in_order_bit_for_bit) {
  for (auto k : in_counts) {
    BOOST_TEST_CONTEXT("in-neighbours " << k) {
      const wake_case w(k);
      std::vector<double> z1, r1, z2, r2;
      std::vector<float> gp1, gp2;
      std::vector<float> d1, d2;
      BOOST_TEST(w.fused(z1, gp1, r1, d1));
      w.stepwise(z2, gp2, r2, d2);
      BOOST_TEST(same_bits(z1, z2));
      BOOST_TEST(same_bits(gp1, gp2));
      BOOST_TEST(same_bits(r1, r2));
      BOOST_TEST(same_bits(d1, d2));
    }
  }
}

BOOST_AUTO_TEST_CASE(track_wake_reports_a_running_sum_that_is_not_finite) {
  const double inf = std::numeric_limits<double>::infinity();
  for (auto k : in_counts) {
    BOOST_TEST_CONTEXT("in-neighbours " << k) {
      std::vector<double> z, r;
      std::vector<float> gp;
      std::vector<float> d;
      wake_case overflow(k);  // finite inputs whose sum leaves double's range
      overflow.rho_old[n - 1] = std::numeric_limits<double>::max();
      overflow.z[n - 1] = std::numeric_limits<double>::max();
      overflow.g_prev[n - 1] = overflow.g[n - 1];
      BOOST_TEST(!overflow.fused(z, gp, r, d));
      BOOST_TEST(std::isinf(r[n - 1]));
      wake_case nan_in(k);
      nan_in.g[3] = std::numeric_limits<float>::quiet_NaN();
      BOOST_TEST(!nan_in.fused(z, gp, r, d));
      wake_case inf_in(k);
      inf_in.rho_old[0] = -inf;
      BOOST_TEST(!inf_in.fused(z, gp, r, d));
      // News alone (hat, used) never reaches rho_new: it is still finite.
      wake_case news_only(k);
      if (k > 0) {
        news_only.hat[0][5] = inf;
        BOOST_TEST(news_only.fused(z, gp, r, d));
        BOOST_TEST(std::isinf(z[5]));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(descend_weighted_sum_is_the_steps_in_order_and_reports_v) {
  const float step = 0.05f;
  for (auto k : in_counts) {
    BOOST_TEST_CONTEXT("others " << k) {
      const auto x0 = randf(7), d = randf(8);
      std::vector<std::vector<float>> others;
      std::vector<const float*> parts;
      std::vector<double> w{0.4};
      for (std::size_t j = 0; j < k; ++j) {
        others.push_back(randf(20 + j));
        w.push_back(0.6 / static_cast<double>(k));
      }
      for (const auto& o : others)
        parts.push_back(o.data());
      auto x = x0;
      std::vector<float> v(n);
      BOOST_TEST(vec::descend_weighted_sum(x.data(), d.data(), step, v.data(), parts, w, n));
      std::vector<float> x_ref(n), v_ref(n);
      for (std::size_t i = 0; i < n; ++i) {
        volatile float moved = step * d[i];
        v_ref[i] = x0[i] - moved;
        double acc = 0.0;
        volatile double term = w[0] * static_cast<double>(v_ref[i]);
        acc += term;
        for (std::size_t j = 0; j < k; ++j) {
          term = w[j + 1] * static_cast<double>(others[j][i]);
          acc += term;
        }
        x_ref[i] = static_cast<float>(acc);
      }
      BOOST_TEST(same_bits(v, v_ref));
      BOOST_TEST(same_bits(x, x_ref));
      // A direction past float's range makes a v that no receiver would take.
      auto d_bad = d;
      d_bad[n / 2] = std::numeric_limits<float>::max();
      auto x_big = x0;
      x_big[n / 2] = -std::numeric_limits<float>::max();
      BOOST_TEST(
        !vec::descend_weighted_sum(x_big.data(), d_bad.data(), 2.0f, v.data(), parts, w, n));
      BOOST_TEST(std::isinf(v[n / 2]));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
