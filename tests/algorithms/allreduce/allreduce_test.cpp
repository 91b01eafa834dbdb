/// Ring-AllReduce SGD (ALGORITHMS.md §4): the ring state machine gives the
/// exact sum for any n and d, with 2(n-1)/n d floats per rank per round, in
/// any delivery order and with duplicates; the algorithm reaches the
/// quickstart target, also over lossy acknowledged links.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "algorithms/ring/ring.hpp"
#include "ring_fixtures.hpp"

namespace t = atrain::test;
using atrain::ring_allreduce;

BOOST_AUTO_TEST_SUITE(allreduce)

BOOST_AUTO_TEST_CASE(chunks_cover_d_and_differ_by_at_most_one) {
  for (std::uint32_t n = 1; n <= 9; ++n)
    for (std::size_t d : {0, 1, 7, 123, 1000}) {
      std::size_t next = 0, lo = d, hi = 0;
      for (std::uint32_t c = 0; c < n; ++c) {
        const auto [b, e] = atrain::ring_chunk(d, n, c);
        BOOST_TEST(b == next);
        next = e;
        lo = std::min(lo, e - b);
        hi = std::max(hi, e - b);
      }
      BOOST_TEST(next == d);
      BOOST_TEST(hi - lo <= 1u);
    }
}

BOOST_AUTO_TEST_CASE(ring_sum_is_exact_for_n_2_to_9_and_d_not_divisible_by_n) {
  // Each coordinate of the ring's result is the float sum of the n inputs,
  // added up in one ring order (n-1 roundings of at most 2^-24 relative
  // each); the reference is the double sum. So |ring - exact| <=
  // (n-1) 2^-24 sum_j |v_j| (up to second order); we allow 2^-23, twice that.
  // All ranks must agree bit for bit (the all-gather copies one sum).
  std::mt19937 gen{42};
  std::normal_distribution<float> normal{0.0F, 3.0F};
  for (std::uint32_t n = 2; n <= 9; ++n)
    for (std::size_t d : {1, 7, 123, 1000}) {
      const std::size_t rounds = 3;
      std::vector<std::vector<std::vector<float>>> v(rounds, std::vector<std::vector<float>>(n));
      for (auto& round : v)
        for (auto& x : round) {
          x.resize(d);
          for (auto& e : x)
            e = normal(gen);
        }
      const auto res = t::simulate_ring(v, {}, n, d, 1000 * n + static_cast<std::uint32_t>(d));
      const double eps = std::ldexp(1.0, -23);
      for (std::size_t k = 0; k < rounds; ++k) {
        for (std::uint32_t r = 0; r < n; ++r) {
          BOOST_REQUIRE(res.sums[k][r].size() == d);
          BOOST_TEST(res.sums[k][r] == res.sums[k][0], "rank " << r << " disagrees with rank 0");
          BOOST_TEST(res.counts[k][r] == static_cast<double>(n));  // no counts on the wire: n
          // 2(n-1)/n d floats per round: all chunks but (r+1) in the
          // reduce-scatter, all but (r+2) in the all-gather; chunk sizes are
          // within one of d/n.
          const double want = 2.0 * (n - 1) * static_cast<double>(d) / n;
          BOOST_TEST(std::abs(static_cast<double>(res.floats_sent[k][r]) - want) < 2.0,
                     "n=" << n << " d=" << d << " rank " << r << ": " << res.floats_sent[k][r]
                          << " floats sent, 2(n-1)/n d = " << want);
        }
        double worst = 0;
        for (std::size_t c = 0; c < d; ++c) {
          double exact = 0, magnitude = 0;
          for (std::uint32_t j = 0; j < n; ++j) {
            exact += v[k][j][c];
            magnitude += std::abs(v[k][j][c]);
          }
          const double err = std::abs(res.sums[k][0][c] - exact);
          worst = std::max(worst, err / magnitude);
          BOOST_TEST(err <= (n - 1) * eps * magnitude,
                     "n=" << n << " d=" << d << " round " << k << " coordinate " << c << ": ring "
                          << res.sums[k][0][c] << ", exact " << exact);
        }
        BOOST_TEST_MESSAGE("n=" << n << " d=" << d << " round " << k << ": worst relative error "
                                << worst);
      }
    }
}

BOOST_AUTO_TEST_CASE(a_coded_ring_ends_with_one_sum_on_every_rank) {
  // link.codec: chunks travel coded, so the sum is not exact, but every rank
  // holds the same floats (the rank completing a chunk keeps what the others
  // decode). Each of the n codings adds at most half a quantum of the chunk's
  // largest partial sum: fp16 2^-11 of the value, int8 1/254 of the block's
  // largest magnitude; the bound below is n times the latter over the sum of
  // magnitudes, which covers both.
  std::mt19937 gen{7};
  std::normal_distribution<float> normal{0.0F, 3.0F};
  namespace codec = atrain::codec;
  for (const codec::codec_config c : {codec::codec_config{codec::codec_kind::fp16},
                                      codec::codec_config{codec::codec_kind::int8, 64}})
    for (std::uint32_t n = 2; n <= 6; ++n)
      for (std::size_t d : {7, 1000}) {
        std::vector<std::vector<std::vector<float>>> v(2, std::vector<std::vector<float>>(n));
        for (auto& round : v)
          for (auto& x : round) {
            x.resize(d);
            for (auto& e : x)
              e = normal(gen);
          }
        const auto res = t::simulate_ring(v, {}, n, d, 77 * n, 1, c);
        const auto raw = t::simulate_ring(v, {}, n, d, 77 * n);
        for (std::size_t k = 0; k < v.size(); ++k) {
          double magnitude_max = 0, worst = 0;
          for (std::size_t i = 0; i < d; ++i) {
            double m = 0;
            for (std::uint32_t j = 0; j < n; ++j)
              m += std::abs(v[k][j][i]);
            magnitude_max = std::max(magnitude_max, m);
          }
          for (std::uint32_t r = 0; r < n; ++r)
            BOOST_TEST(res.sums[k][r] == res.sums[k][0], "rank " << r << " disagrees with rank 0");
          for (std::size_t i = 0; i < d; ++i) {
            double exact = 0;
            for (std::uint32_t j = 0; j < n; ++j)
              exact += v[k][j][i];
            worst = std::max(worst, std::abs(res.sums[k][0][i] - exact));
          }
          BOOST_TEST(worst <= n * magnitude_max / 254.0,
                     codec::to_string(c.kind) << " n=" << n << " d=" << d << ": " << worst);
          if (d == 1000)  // 2 or ~1 bytes a value against 4, plus a 12-byte header per chunk
            BOOST_TEST(res.floats_sent[k][0] < 0.6 * raw.floats_sent[k][0]);
        }
      }
}

BOOST_AUTO_TEST_CASE(one_rank_is_its_own_sum) {
  ring_allreduce ring{0, 1, 5};
  const std::vector<float> x{1, 2, 3, 4, 5};
  BOOST_TEST(ring.begin(x.data()).empty());
  BOOST_TEST(ring.finished());
  BOOST_TEST(ring.sum() == x);
}

BOOST_AUTO_TEST_CASE(bad_chunks_are_invalid_duplicates_are_ignored) {
  // Rank 1 of 3, d = 7: chunks 3, 2, 2. At step 0 it receives chunk 0 (3 floats).
  ring_allreduce ring{1, 3, 7};
  std::vector<ring_allreduce::send> out;
  using verdict = ring_allreduce::verdict;
  const atrain::float_blob good{std::vector<float>{1, 2, 3}};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  BOOST_TEST(
    (ring.offer(0, 0, atrain::float_blob{std::vector<float>{1, 2}}, out) == verdict::invalid));
  BOOST_TEST(
    (ring.offer(0, 0, atrain::float_blob{std::vector<float>{1, nan, 3}}, out) == verdict::invalid));
  BOOST_TEST((ring.offer(0, 4, good, out) == verdict::invalid));   // only steps 0..3
  BOOST_TEST((ring.offer(2, 0, good, out) == verdict::invalid));   // two rounds ahead
  BOOST_TEST((ring.offer(0, 0, good, out) == verdict::accepted));  // early: stashed
  BOOST_TEST((ring.offer(0, 0, good, out) == verdict::duplicate));
  BOOST_TEST(out.empty());
  const std::vector<float> x(7, 1.0F);
  out = ring.begin(x.data());  // sends step 0, applies the stashed chunk, sends step 1
  BOOST_TEST(out.size() == 2u);
  BOOST_TEST((ring.offer(0, 0, good, out) == verdict::duplicate));
}

BOOST_AUTO_TEST_CASE(reaches_the_quickstart_target_on_8_nodes) {
  const auto r = t::ring_run("allreduce.textproto", {});
  BOOST_REQUIRE(r.has_time_to_target());
  BOOST_TEST(r.final().test_accuracy() >= 0.845);
  BOOST_TEST_MESSAGE("allreduce: time to 0.845 " << r.time_to_target() << " s (virtual), "
                                                 << r.gradients_total() << " gradients");
  const double rounds = t::check_ring_traffic(r, 124);
  // One round per gradient: node 0 has started its last round or is computing for it.
  const double grads = static_cast<double>(r.per_node(0).gradients());
  BOOST_TEST(rounds <= grads);
  BOOST_TEST(rounds >= grads - 1);
}

BOOST_AUTO_TEST_CASE(same_seed_same_trace) {
  t::expect_replay("allreduce.textproto");
}

BOOST_AUTO_TEST_CASE(reaches_the_target_over_lossy_acknowledged_links) {
  t::expect_target_over_lossy_links("allreduce.textproto");
}

BOOST_AUTO_TEST_SUITE_END()
