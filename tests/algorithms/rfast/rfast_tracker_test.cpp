/// R-FAST's tracker arithmetic without actors: the fused wake (correct, push
/// and direction in one pass; the in-neighbours absorbed in one pass) gives
/// the same bits as the separate steps, and the running sums it publishes
/// reuse their buffers only once nobody holds them.
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <random>

#include "algorithms/rfast/rfast.hpp"
#include "atrain/messages/blob_pool.hpp"

namespace {

using atrain::double_blob;
using atrain::rfast_tracker;

constexpr std::size_t dim = 1031;  // not a multiple of any vector width

std::vector<rfast_tracker::in_neighbour> neighbours() {
  return {{1, 0.25, 0, {}, 0, {}, 0}, {4, 0.2, 0, {}, 0, {}, 0}, {6, 0.15, 0, {}, 0, {}, 0}};
}

std::vector<float> random_floats(std::mt19937& gen) {
  std::normal_distribution<float> n{0.0f, 3.0f};
  std::vector<float> v(dim);
  for (auto& x : v)
    x = n(gen);
  return v;
}

double_blob random_sum(std::mt19937& gen) {
  std::normal_distribution<double> n{0.0, 10.0};
  std::vector<double> v(dim);
  for (auto& x : v)
    x = n(gen);
  return double_blob{std::move(v)};
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// z after step 3 as the tracker computed it before the fused pass: one
/// pass over z per in-neighbour with news, in neighbour order.
std::vector<double> absorbed_one_by_one(const rfast_tracker& t) {
  std::vector<double> z = t.z();
  for (const auto& nb : t.in_c()) {
    if (nb.rho_hat.ptr() == nb.rho_tilde.ptr())
      continue;
    const double* hat = nb.rho_hat.ptr();
    const double* used = nb.rho_tilde.ptr();
    const double c = nb.c;
    for (std::size_t k = 0; k < z.size(); ++k)
      z[k] += c * (hat[k] - used[k]);
  }
  return z;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rfast_tracker_arithmetic)

BOOST_AUTO_TEST_CASE(the_fused_wake_equals_the_separate_steps_bit_for_bit) {
  for (const bool phi : {true, false}) {
    rfast_tracker fused{0, dim, 0.4, neighbours(), phi, 0.05};
    rfast_tracker plain{0, dim, 0.4, neighbours(), phi, 0.05};
    std::mt19937 gen{7};
    const auto g0 = random_floats(gen);
    fused.init(g0.data());
    plain.init(g0.data());
    std::vector<double_blob> held;  // some sums stay held, as a receiver would
    for (int wake = 1; wake <= 40; ++wake) {
      // News from some in-neighbours (not every one every wake).
      for (std::uint32_t j : {1u, 4u, 6u}) {
        if ((wake + j) % 3 == 0)
          continue;
        const auto rho = random_sum(gen);
        const double sigma = 0.01 * wake + j;
        fused.receive(j, static_cast<std::uint64_t>(wake), rho, sigma);
        plain.receive(j, static_cast<std::uint64_t>(wake), rho, sigma);
      }
      const auto g = random_floats(gen);
      std::vector<float> d_fused(dim);
      const auto rho_fused = fused.correct_push_direction(g.data(), d_fused.data());
      const auto z_expected = absorbed_one_by_one(fused);
      fused.absorb();
      BOOST_TEST_REQUIRE(same_bits(fused.z(), z_expected), "wake " << wake);
      plain.correct(g.data());
      const auto rho_plain = plain.push();
      const auto d_plain = plain.direction();
      BOOST_TEST_REQUIRE(same_bits(rho_fused.vec(), rho_plain.vec()), "wake " << wake);
      BOOST_TEST_REQUIRE(same_bits(d_fused, d_plain), "wake " << wake);
      plain.absorb();
      BOOST_TEST_REQUIRE(same_bits(fused.z(), plain.z()), "wake " << wake);
      BOOST_TEST_REQUIRE(same_bits(fused.g_prev(), plain.g_prev()));
      BOOST_TEST(fused.phi() == plain.phi());
      BOOST_TEST(fused.sigma_sent() == plain.sigma_sent());
      if (wake % 5 == 0)
        held.push_back(rho_fused);
    }
    // Every held sum is still the value it was published with.
    BOOST_TEST(held.size() == 8u);
    for (std::size_t k = 1; k < held.size(); ++k)
      BOOST_TEST(held[k].ptr() != held[k - 1].ptr());
  }
}

BOOST_AUTO_TEST_CASE(absorb_adds_each_in_neighbours_news_once) {
  rfast_tracker t{0, dim, 0.5, neighbours(), false, 0.05};
  std::mt19937 gen{3};
  const auto g0 = random_floats(gen);
  t.init(g0.data());
  const auto rho1 = random_sum(gen), rho4 = random_sum(gen);
  t.receive(1, 1, rho1, 0.0);
  t.receive(4, 1, rho4, 0.0);
  const std::vector<double> before = t.z();
  t.absorb();
  for (std::size_t k = 0; k < dim; ++k) {
    const double expected = before[k] + 0.25 * rho1.vec()[k] + 0.2 * rho4.vec()[k];
    BOOST_TEST_REQUIRE(std::abs(t.z()[k] - expected) <= 1e-12 * (1 + std::abs(expected)));
  }
  const std::vector<double> once = t.z();
  t.absorb();  // nothing new: z unchanged
  BOOST_TEST(same_bits(t.z(), once));
}

BOOST_AUTO_TEST_CASE(a_pool_reuses_a_buffer_only_once_nobody_holds_it) {
  atrain::blob_pool<double> pool;
  auto a = pool.publish(pool.take(16));
  const double* first = a.ptr();
  auto b = pool.publish(pool.take(16));
  BOOST_TEST(b.ptr() != first);  // `a` is still held
  auto receiver = a;             // a receiver keeps it
  a = {};
  auto c = pool.publish(pool.take(16));
  BOOST_TEST(c.ptr() != first);  // still held by the receiver
  // The receiver lets go: the next take() gets that buffer back.
  receiver = {};
  auto d = pool.take(16);
#if defined(__SANITIZE_THREAD__)
  BOOST_TEST(d->data() != nullptr);  // no reuse under ThreadSanitizer
#else
  BOOST_TEST(d->data() == first);
#endif
  // A buffer of another size is never handed out for this one.
  auto e = pool.take(8);
  BOOST_TEST(e->size() == 8u);
  BOOST_TEST(pool.kept() <= 3u);
}

BOOST_AUTO_TEST_SUITE_END()
