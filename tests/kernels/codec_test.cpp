// atrain::codec's formats against independent computations in double: fp16
// and bf16 rounding, int8's per-block bound, top-k against std::partial_sort,
// exact sizes, error feedback's conservation, and hostile blobs.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "atrain/kernels/codec.hpp"

using namespace atrain::codec;

namespace {

const float inf = std::numeric_limits<float>::infinity();

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<float> round_trip(const codec_config& c, const std::vector<float>& v) {
  const auto blob = encode(c, v.data(), v.size());
  auto r = decode(blob.data(), blob.size(), v.size());
  BOOST_REQUIRE_MESSAGE(r.ok(), r.error);
  BOOST_REQUIRE_EQUAL(r.values.size(), v.size());
  return r.values;
}

/// Round to nearest even with `stored` mantissa bits and minimum exponent emin,
/// in double (exact: scaling by a power of two); inf above max_finite.
float reference_round(float x, int stored, int emin, double max_finite) {
  if (x == 0 || !std::isfinite(x))
    return x;
  const double d = x;
  const int e = std::max(std::ilogb(d), emin);
  const double ulp = std::ldexp(1.0, e - stored);
  const double q = std::nearbyint(d / ulp) * ulp;
  if (std::abs(q) > max_finite)
    return std::copysign(inf, x);
  return static_cast<float>(q);
}

float reference_fp16(float x) {
  return reference_round(x, 10, -14, 65504.0);
}

float reference_bf16(float x) {
  return reference_round(x, 7, -126, static_cast<double>(from_bits(0x7f7f0000u)));
}

std::vector<float> random_vector(std::mt19937& g, std::size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v)
    x = u(g);
  return v;
}

/// Every float bit pattern but NaN, then midpoints between neighbours of the
/// narrow format (the ties round to nearest even decides).
std::vector<float> rounding_inputs(int stored, int emin, int emax) {
  std::mt19937 g(7);
  std::vector<float> v;
  for (int i = 0; i < 200000; ++i) {
    const float f = from_bits(static_cast<std::uint32_t>(g()));
    if (!std::isnan(f))
      v.push_back(f);
  }
  std::uniform_int_distribution<int> exp(emin, emax);
  std::uniform_int_distribution<int> mant(0, (1 << stored) - 1);
  for (int i = 0; i < 20000; ++i) {
    const int e = exp(g);
    const double tie = std::ldexp(2.0 * ((1 << stored) + mant(g)) + 1, e - stored - 1);
    v.push_back(static_cast<float>(i % 2 ? tie : -tie));
    const double sub = std::ldexp(2.0 * mant(g) + 1, emin - stored - 1);  // subnormal ties
    v.push_back(static_cast<float>(sub));
  }
  return v;
}

void check_rounding(codec_kind kind, float (*reference)(float), int stored, int emin, int emax,
                    double rel_bound) {
  const codec_config c{kind};
  const auto v = rounding_inputs(stored, emin, emax);
  const auto d = round_trip(c, v);
  std::size_t mismatches = 0;
  double worst = 0;
  const double smallest_normal = std::ldexp(1.0, emin);
  const double largest = kind == codec_kind::fp16 ? 65504.0 : 3.3e38;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (bits(d[i]) != bits(reference(v[i])))
      ++mismatches;
    const double a = std::abs(static_cast<double>(v[i]));
    if (a >= smallest_normal && a <= largest)
      worst = std::max(worst, std::abs(static_cast<double>(d[i]) - v[i]) / a);
  }
  BOOST_TEST_MESSAGE(to_string(kind) << ": " << v.size() << " inputs, " << mismatches
                                     << " differ from the double reference; worst relative "
                                     << "error in the normal range " << worst);
  BOOST_TEST(mismatches == 0u);
  BOOST_TEST(worst <= rel_bound);
  BOOST_TEST(worst > rel_bound / 2);  // the bound is tight: rounding did happen
}

}  // namespace

BOOST_AUTO_TEST_SUITE(codec)

BOOST_AUTO_TEST_CASE(fp16_rounds_to_nearest_even_like_the_double_reference) {
  check_rounding(codec_kind::fp16, reference_fp16, 10, -14, 15, std::ldexp(1.0, -11));
}

BOOST_AUTO_TEST_CASE(bf16_rounds_to_nearest_even_like_the_double_reference) {
  check_rounding(codec_kind::bf16, reference_bf16, 7, -126, 126, std::ldexp(1.0, -8));
}

BOOST_AUTO_TEST_CASE(representable_values_inf_and_nan_round_trip) {
  // Every finite fp16 value, built from its fields in double, comes back exactly.
  std::vector<float> halves;
  for (int e = 0; e < 31; ++e)
    for (int m = 0; m < 1024; ++m) {
      const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024.0 + m, e - 25);
      halves.push_back(static_cast<float>(mag));
      halves.push_back(static_cast<float>(-mag));
    }
  const auto h = round_trip({codec_kind::fp16}, halves);
  BOOST_TEST(std::memcmp(h.data(), halves.data(), 4 * halves.size()) == 0);
  // A float with 8 significant bits is a bf16 value.
  std::mt19937 g(3);
  std::vector<float> b(20000);
  for (auto& x : b)
    x = from_bits(static_cast<std::uint32_t>(g()) & 0xffff0000u);
  b.erase(std::remove_if(b.begin(), b.end(), [](float x) { return std::isnan(x); }), b.end());
  const auto bd = round_trip({codec_kind::bf16}, b);
  BOOST_TEST(std::memcmp(bd.data(), b.data(), 4 * b.size()) == 0);
  // Stated: inf stays inf, NaN stays a NaN, fp16 overflows to inf from 65520.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special{inf, -inf, nan, -nan, 65519.0f, 65520.0f, -1e6f};
  for (auto kind : {codec_kind::fp16, codec_kind::bf16, codec_kind::none}) {
    const auto s = round_trip({kind}, special);
    BOOST_TEST(s[0] == inf);
    BOOST_TEST(s[1] == -inf);
    BOOST_TEST(std::isnan(s[2]));
    BOOST_TEST(std::isnan(s[3]));
  }
  const auto s = round_trip({codec_kind::fp16}, special);
  BOOST_TEST(s[4] == 65504.0f);
  BOOST_TEST(s[5] == inf);
  BOOST_TEST(s[6] == -inf);
}

BOOST_AUTO_TEST_CASE(int8_error_is_at_most_half_a_scale_and_zeros_are_exact) {
  std::mt19937 g(11);
  for (std::uint32_t block : {1u, 7u, 256u}) {
    auto v = random_vector(g, 1000, -3, 3);
    for (std::size_t i = 0; i < v.size(); i += 5)
      v[i] = 0;                                         // zeros inside nonzero blocks
    std::fill(v.begin() + 256, v.begin() + 512, 0.0f);  // a zero block (block 256)
    v[900] *= 1e4f;                                     // one block with a wide range
    const codec_config c{codec_kind::int8, block};
    const auto d = round_trip(c, v);
    double worst = 0;
    std::size_t zeros_wrong = 0;
    for (std::size_t lo = 0; lo < v.size(); lo += block) {
      const std::size_t hi = std::min<std::size_t>(v.size(), lo + block);
      double mx = 0;
      for (std::size_t i = lo; i < hi; ++i)
        mx = std::max(mx, std::abs(static_cast<double>(v[i])));
      const double scale = mx / 127;
      for (std::size_t i = lo; i < hi; ++i) {
        const double err = std::abs(static_cast<double>(d[i]) - v[i]);
        if (v[i] == 0 && d[i] != 0)
          ++zeros_wrong;
        if (scale > 0)
          worst = std::max(worst, err / scale);
        BOOST_TEST(err <= scale / 2 * (1 + 1e-6) + 1.2e-7 * std::abs(v[i]));
      }
    }
    BOOST_TEST_MESSAGE("int8 block " << block << ": worst error " << worst << " scales");
    BOOST_TEST(zeros_wrong == 0u);
    if (block > 1)
      BOOST_TEST(worst > 0.4);  // rounding happened (a block of 1 is its own scale x 127)
  }
}

BOOST_AUTO_TEST_CASE(topk_keeps_exactly_the_k_largest_magnitudes) {
  std::mt19937 g(5);
  for (std::size_t n : {1, 10, 999, 5000}) {
    for (double fraction : {0.01, 0.05, 0.5, 1.0}) {
      auto v = random_vector(g, n, -1, 1);
      for (std::size_t i = 0; i < n; i += 3)
        v[i] = std::round(v[i] * 4) / 4;  // many equal magnitudes: ties go to the lower index
      const codec_config c{codec_kind::topk, 256, fraction};
      const std::size_t k = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::llround(fraction * static_cast<double>(n))));
      BOOST_TEST(topk_count(fraction, n) == std::min(k, n));
      std::vector<std::size_t> order(n);
      for (std::size_t i = 0; i < n; ++i)
        order[i] = i;
      std::partial_sort(order.begin(), order.begin() + std::min(k, n), order.end(),
                        [&](std::size_t a, std::size_t b) {
                          return std::abs(v[a]) > std::abs(v[b]) ||
                                 (std::abs(v[a]) == std::abs(v[b]) && a < b);
                        });
      const std::set<std::size_t> kept(order.begin(), order.begin() + std::min(k, n));
      const auto d = round_trip(c, v);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < n; ++i)
        wrong += kept.count(i) ? bits(d[i]) != bits(v[i]) : d[i] != 0.0f;
      BOOST_TEST(wrong == 0u, "n " << n << " fraction " << fraction);
    }
  }
}

BOOST_AUTO_TEST_CASE(encoded_size_is_exact_and_the_ratios_hold) {
  std::mt19937 g(9);
  const codec_config configs[] = {{codec_kind::none},          {codec_kind::fp16},
                                  {codec_kind::bf16},          {codec_kind::int8, 256},
                                  {codec_kind::int8, 3},       {codec_kind::topk, 256, 0.01},
                                  {codec_kind::topk, 256, 0.3}};
  for (const auto& c : configs)
    for (std::size_t n : {0, 1, 255, 256, 257, 1000}) {
      const auto v = random_vector(g, n, -1, 1);
      BOOST_TEST(encode(c, v.data(), n).size() == encoded_size(c, n));
    }
  const std::size_t n = 100000;
  const double fp32 = 4.0 * n;
  const double r_int8 = encoded_size({codec_kind::int8, 256}, n) / fp32;
  const double r_topk = encoded_size({codec_kind::topk, 256, 0.01}, n) / fp32;
  const double r_fp16 = encoded_size({codec_kind::fp16}, n) / fp32;
  BOOST_TEST_MESSAGE("bytes / fp32 bytes at n = " << n << ": fp16 and bf16 " << r_fp16
                                                  << ", int8 (block 256) " << r_int8
                                                  << ", top-k 1 % " << r_topk);
  BOOST_TEST(r_int8 <= 0.27);
  // 8 bytes per kept value = 0.02 of fp32 at 1 %, plus the 12-byte header.
  BOOST_TEST(r_topk <= 0.02 + header_bytes / fp32 + 1e-12);
  BOOST_TEST(r_fp16 <= 0.5 + header_bytes / fp32 + 1e-12);
}

BOOST_AUTO_TEST_CASE(error_feedback_conserves_what_it_was_given) {
  const std::size_t n = 1000;
  const int messages = 300;
  const codec_config kinds[] = {{codec_kind::fp16, 256, 0.01, true},
                                {codec_kind::bf16, 256, 0.01, true},
                                {codec_kind::int8, 256, 0.01, true},
                                {codec_kind::topk, 256, 0.05, true}};
  for (auto c : kinds) {
    std::mt19937 g(21);
    error_feedback_encoder with(c, n);
    error_feedback_encoder twin(c, n);  // the same stream gives the same bytes
    auto plain_config = c;
    plain_config.error_feedback = false;
    error_feedback_encoder plain(plain_config, n);
    std::vector<double> inputs(n), fed(n), unfed(n), tol(n);
    bool deterministic = true;
    for (int t = 0; t < messages; ++t) {
      auto v = random_vector(g, n, -1, 1.2f);  // a drift that plain rounding keeps losing
      for (std::size_t i = 0; i < n; ++i) {
        inputs[i] += v[i];
        // each message rounds v + residual and the residual once in float
        tol[i] += std::ldexp(std::abs(v[i]) + 2 * std::abs(with.residual()[i]), -23);
      }
      const auto blob = with.encode(v.data(), n);
      deterministic &= blob == twin.encode(v.data(), n);
      const auto d = decode(blob.data(), blob.size(), n);
      const auto pblob = plain.encode(v.data(), n);
      const auto p = decode(pblob.data(), pblob.size(), n);
      BOOST_REQUIRE(d.ok() && p.ok());
      for (std::size_t i = 0; i < n; ++i) {
        fed[i] += d.values[i];
        unfed[i] += p.values[i];
      }
    }
    double worst_conservation = 0, err_fed = 0, err_unfed = 0;
    std::size_t violations = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double gap = std::abs(fed[i] + with.residual()[i] - inputs[i]);
      violations += gap > tol[i] + 1e-9;  // + the double sums' own rounding
      worst_conservation = std::max(worst_conservation, gap);
      err_fed += std::abs(fed[i] - inputs[i]) / n;
      err_unfed += std::abs(unfed[i] - inputs[i]) / n;
    }
    BOOST_TEST_MESSAGE(to_string(c.kind)
                       << ": |sum decoded + residual - sum inputs| <= " << worst_conservation
                       << "; mean |sum decoded - sum inputs| " << err_fed << " with feedback, "
                       << err_unfed << " without (" << messages << " messages)");
    BOOST_TEST(violations == 0u, to_string(c.kind));
    BOOST_TEST(deterministic);
    BOOST_TEST(err_fed < 0.5 * err_unfed, to_string(c.kind));
    BOOST_TEST(std::all_of(plain.residual().begin(), plain.residual().end(),
                           [](float r) { return r == 0; }));
  }
}

BOOST_AUTO_TEST_SUITE_END()
