#pragma once
/// Seeded random numbers with portable distributions.
///
/// std::uniform_*_distribution output is implementation-defined, so a trace hash
/// would differ between standard libraries. Everything random in atrain goes
/// through this header: xoshiro256** seeded by splitmix64, with our own
/// uniform, normal and gamma draws.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

namespace atrain {

/// splitmix64 step: also the way to derive child seeds from (seed, stream id).
[[nodiscard]] inline std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Derive an independent seed for stream `stream` of a run seeded by `seed`.
[[nodiscard]] inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) noexcept {
  std::uint64_t s = seed ^ (0xd1b54a32d192ed03ULL * (stream + 1));
  (void)splitmix64(s);
  return splitmix64(s);
}

class rng {
public:
  using result_type = std::uint64_t;

  explicit rng(std::uint64_t seed = 0) noexcept { reseed(seed); }

  void reseed(std::uint64_t seed) noexcept {
    std::uint64_t s = seed;
    for (auto& w : s_)
      w = splitmix64(s);
  }

  /// The generator's whole state (checkpoints), and setting it back.
  [[nodiscard]] std::array<std::uint64_t, 4> state() const noexcept {
    return {s_[0], s_[1], s_[2], s_[3]};
  }
  void set_state(const std::array<std::uint64_t, 4>& s) noexcept {
    for (std::size_t k = 0; k < 4; ++k)
      s_[k] = s[k];
  }

  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

  result_type operator()() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform double in [0, 1) with 53 random bits.
  [[nodiscard]] double uniform() noexcept {
    return static_cast<double>((*this)() >> 11) * 0x1.0p-53;
  }

  /// Uniform double in [a, b).
  [[nodiscard]] double uniform(double a, double b) noexcept { return a + (b - a) * uniform(); }

  /// Uniform integer in [0, n), n > 0, without modulo bias (Lemire's method).
  [[nodiscard]] std::uint64_t below(std::uint64_t n) noexcept {
    unsigned __int128 m = static_cast<unsigned __int128>((*this)()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>((*this)()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  /// Bernoulli(p).
  [[nodiscard]] bool chance(double p) noexcept { return p > 0 && uniform() < p; }

  /// Standard normal (Box-Muller, one value per call).
  [[nodiscard]] double normal() noexcept {
    double u1 = uniform();
    while (u1 <= 0.0)
      u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  /// Gamma(shape, 1) by Marsaglia-Tsang; shape > 0.
  [[nodiscard]] double gamma(double shape) noexcept {
    if (shape < 1.0) {
      double u = uniform();
      while (u <= 0.0)
        u = uniform();
      return gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x = normal();
      double v = 1.0 + c * x;
      if (v <= 0)
        continue;
      v = v * v * v;
      const double u = uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x)
        return d * v;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v)))
        return d * v;
    }
  }

  /// Fisher-Yates shuffle of a random-access range.
  template <class It>
  void shuffle(It first, It last) noexcept {
    const auto n = static_cast<std::uint64_t>(last - first);
    for (std::uint64_t i = n; i > 1; --i) {
      auto j = below(i);
      using std::swap;
      swap(first[i - 1], first[j]);
    }
  }

private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept {
    return (x << k) | (x >> (64 - k));
  }
  std::uint64_t s_[4];
};

}  // namespace atrain
