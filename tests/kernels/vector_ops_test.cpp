// atrain::vec against plain loops, on sizes around the vector widths and the
// weighted_sum block size (1024).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "atrain/kernels/rng.hpp"
#include "atrain/kernels/vector_ops.hpp"
#include "random_vectors.hpp"

using namespace atrain;
namespace tt = boost::test_tools;

namespace {

const std::size_t sizes[] = {0, 1, 7, 16, 33, 1000, 2500};

using test::randd;
using test::randf;

/// Equal up to rounding (the library may fuse multiply-adds, the loop may not).
template <class T>
bool close(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size())
    return false;
  const double eps = sizeof(T) == 4 ? 1e-6 : 1e-14;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])) >
        eps * (std::abs(static_cast<double>(b[i])) + 1))
      return false;
  return true;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(vector_ops)

BOOST_AUTO_TEST_CASE(axpy_all_overloads) {
  for (auto n : sizes) {
    const auto xf = randf(n, 1);
    auto yf = randf(n, 2);
    auto ef = yf;
    for (std::size_t i = 0; i < n; ++i)
      ef[i] += 0.75f * xf[i];
    vec::axpy(0.75f, xf.data(), yf.data(), n);
    BOOST_TEST(close(yf, ef));

    const auto xd = randd(n, 3);
    auto yd = randd(n, 4);
    auto ed = yd;
    for (std::size_t i = 0; i < n; ++i)
      ed[i] += -1.25 * xd[i];
    vec::axpy(-1.25, xd.data(), yd.data(), n);
    BOOST_TEST(close(yd, ed));

    auto ym = randd(n, 5);
    auto em = ym;
    for (std::size_t i = 0; i < n; ++i)
      em[i] += 0.1 * static_cast<double>(xf[i]);
    vec::axpy(0.1, xf.data(), ym.data(), n);
    BOOST_TEST(close(ym, em));
  }
}

// Every ISA clone rounds alike: a*x is rounded before the add (no FMA), so
// the result is bit-exact against a loop whose product is forced to memory.
// Would fail on an AVX-512 machine if vector_ops.cpp were contracted again.
BOOST_AUTO_TEST_CASE(axpy_rounds_without_fma) {
  const std::size_t n = 4099;
  const auto x = randf(n, 11);
  auto y = randf(n, 12);
  auto expect = y;
  const float a = 0.3f;
  for (std::size_t i = 0; i < n; ++i) {
    volatile float product = a * x[i];
    expect[i] = expect[i] + product;
  }
  vec::axpy(a, x.data(), y.data(), n);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i)
    differ += y[i] != expect[i] ? 1 : 0;
  BOOST_TEST(differ == 0u);
}

BOOST_AUTO_TEST_CASE(scale_and_copy) {
  for (auto n : sizes) {
    auto xf = randf(n, 6);
    auto ef = xf;
    for (auto& v : ef)
      v *= -3.0f;
    vec::scale(-3.0f, xf.data(), n);
    BOOST_TEST(close(xf, ef));

    auto xd = randd(n, 7);
    auto ed = xd;
    for (auto& v : ed)
      v *= 0.3;
    vec::scale(0.3, xd.data(), n);
    BOOST_TEST(close(xd, ed));

    std::vector<float> f(n);
    vec::copy(xd.data(), f.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      BOOST_TEST(f[i] == static_cast<float>(xd[i]));
    std::vector<double> d(n);
    vec::copy(f.data(), d.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      BOOST_TEST(d[i] == static_cast<double>(f[i]));
  }
}

BOOST_AUTO_TEST_CASE(weighted_sum_matches_loop) {
  for (auto n : sizes) {
    std::vector<std::vector<float>> xs;
    std::vector<const float*> ptrs;
    const std::vector<double> w{0.5, -0.25, 1.0 / 3.0, 2.0};
    for (std::uint64_t k = 0; k < w.size(); ++k)
      xs.push_back(randf(n, 10 + k));
    for (auto& x : xs)
      ptrs.push_back(x.data());
    std::vector<float> y(n, 99.0f);
    vec::weighted_sum(ptrs, w, y.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      double e = 0;
      for (std::size_t k = 0; k < w.size(); ++k)
        e += w[k] * xs[k][i];
      BOOST_TEST(std::abs(y[i] - e) <= 1e-6 * (std::abs(e) + 1));
    }
    // y may be one of the inputs
    auto alias = xs[0];
    std::vector<const float*> ptrs2{alias.data(), xs[1].data()};
    vec::weighted_sum(ptrs2, {0.5, 0.5}, alias.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const double e = 0.5 * xs[0][i] + 0.5 * xs[1][i];
      BOOST_TEST(std::abs(alias[i] - e) <= 1e-6 * (std::abs(e) + 1));
    }
  }
  // accumulates in double: 1e8 + 1 - 1e8 is 1, not the 0 of a float sum
  const std::vector<float> big{1e8f, 1e8f}, one{1.0f, 1.0f};
  std::vector<float> r(2);
  vec::weighted_sum({big.data(), one.data(), big.data()}, {1.0, 1.0, -1.0}, r.data(), 2);
  BOOST_TEST(r[0] == 1.0f);
  BOOST_TEST(r[1] == 1.0f);
  // no terms: zeros
  std::vector<float> y(5, 1.0f);
  vec::weighted_sum({}, {}, y.data(), 5);
  for (float v : y)
    BOOST_TEST(v == 0.0f);
}

BOOST_AUTO_TEST_CASE(reductions) {
  for (auto n : sizes) {
    const auto x = randf(n, 20), y = randf(n, 21);
    const auto z = randd(n, 22);
    double dot = 0, sq = 0, dist = 0, s = 0;
    for (std::size_t i = 0; i < n; ++i) {
      dot += static_cast<double>(x[i]) * y[i];
      sq += static_cast<double>(x[i]) * x[i];
      const double diff = static_cast<double>(x[i]) - y[i];
      dist += diff * diff;
      s += z[i];
    }
    BOOST_TEST(vec::dot(x.data(), y.data(), n) == dot, tt::tolerance(1e-12));
    BOOST_TEST(vec::squared_norm(x.data(), n) == sq, tt::tolerance(1e-12));
    BOOST_TEST(vec::squared_distance(x.data(), y.data(), n) == dist, tt::tolerance(1e-12));
    BOOST_TEST(vec::sum(z.data(), n) == s, tt::tolerance(1e-12));
    BOOST_TEST(vec::squared_distance(x.data(), x.data(), n) == 0.0);
  }
}

BOOST_AUTO_TEST_CASE(all_finite_detects_nan_and_inf) {
  for (auto n : sizes) {
    auto x = randf(n, 30);
    BOOST_TEST(vec::all_finite(x.data(), n));
    if (n == 0)
      continue;
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity()}) {
      auto y = x;
      y[n - 1] = bad;
      BOOST_TEST(!vec::all_finite(y.data(), n));
      y = x;
      y[n / 2] = bad;
      BOOST_TEST(!vec::all_finite(y.data(), n));
    }
  }
}

// The float64 version against std::isfinite on every element, with the
// largest finite double and subnormals, which must pass.
BOOST_AUTO_TEST_CASE(all_finite_detects_nan_and_inf_in_doubles) {
  for (auto n : sizes) {
    const auto f = randf(n, 31);
    std::vector<double> x(f.begin(), f.end());
    if (n > 2) {
      x[0] = std::numeric_limits<double>::max();
      x[1] = std::numeric_limits<double>::denorm_min();
    }
    BOOST_TEST(vec::all_finite(x.data(), n) ==
               std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); }));
    BOOST_TEST(vec::all_finite(x.data(), n));
    for (std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
      if (n == 0)
        break;
      for (double bad :
           {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
            -std::numeric_limits<double>::infinity()}) {
        auto y = x;
        y[at] = bad;
        BOOST_TEST(!vec::all_finite(y.data(), n));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gather_scatter) {
  const auto x = randf(50, 40);
  const std::vector<std::uint32_t> idx{3, 0, 49, 17, 17, 8};
  std::vector<float> out(idx.size());
  vec::gather(x.data(), idx, out.data());
  for (std::size_t k = 0; k < idx.size(); ++k)
    BOOST_TEST(out[k] == x[idx[k]]);

  const std::vector<std::uint32_t> uniq{3, 0, 49, 17, 8};
  const auto v = randf(uniq.size(), 41);
  auto y = x;
  auto e = x;
  for (std::size_t k = 0; k < uniq.size(); ++k)
    e[uniq[k]] = v[k];
  vec::scatter(v.data(), uniq, y.data());
  BOOST_TEST(y == e, tt::per_element());

  // scatter_add accumulates repeated indices
  const auto w = randf(idx.size(), 42);
  y = x;
  e = x;
  for (std::size_t k = 0; k < idx.size(); ++k)
    e[idx[k]] += -0.5f * w[k];
  vec::scatter_add(-0.5f, w.data(), idx, y.data());
  BOOST_TEST(close(y, e));

  // empty index lists touch nothing
  vec::gather(x.data(), {}, nullptr);
  vec::scatter(nullptr, {}, y.data());
  vec::scatter_add(1.0f, nullptr, {}, y.data());
  BOOST_TEST(close(y, e));
}

BOOST_AUTO_TEST_SUITE_END()
