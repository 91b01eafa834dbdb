#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "atrain/kernels/dataset.hpp"
#include "shard_fixtures.hpp"

using namespace atrain;

namespace {

/// True if the shards hold each of 0..n-1 exactly once.
bool covers_once(const shards& s, std::size_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& shard : s) {
    for (std::uint32_t i : shard) {
      if (i >= n || seen[i]++ != 0)
        return false;
    }
  }
  return std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; });
}

bool each_sorted(const shards& s) {
  return std::all_of(s.begin(), s.end(),
                     [](const auto& v) { return std::is_sorted(v.begin(), v.end()); });
}

/// Balanced labels: `per_class` samples of each class, interleaved.
std::vector<std::int32_t> balanced_labels(std::size_t classes, std::size_t per_class) {
  std::vector<std::int32_t> labels(classes * per_class);
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<std::int32_t>(i % classes);
  return labels;
}

/// Dataset whose row i is (i, i + 0.5, -i) with label i % 3: rows identify indices.
dataset indexed_dataset(std::size_t n) {
  dataset d;
  d.dim = 3;
  d.classes = 3;
  for (std::size_t i = 0; i < n; ++i) {
    const auto f = static_cast<float>(i);
    d.features.insert(d.features.end(), {f, f + 0.5f, -f});
    d.labels.push_back(static_cast<std::int32_t>(i % 3));
  }
  return d;
}

/// Draws `batches` batches and returns the sample indices in draw order,
/// checking that every gathered row equals the dataset row.
std::vector<std::uint32_t> draw(minibatch_sampler& s, const dataset& d, std::size_t batches) {
  std::vector<std::uint32_t> order;
  for (std::size_t b = 0; b < batches; ++b) {
    const batch_view v = s.next();
    BOOST_REQUIRE_EQUAL(v.rows, s.batch_size());
    BOOST_REQUIRE_EQUAL(v.dim, d.dim);
    for (std::size_t r = 0; r < v.rows; ++r) {
      const auto i = static_cast<std::uint32_t>(v.x[r * v.dim]);
      BOOST_REQUIRE_LT(i, d.size());
      BOOST_REQUIRE(std::equal(v.x + r * v.dim, v.x + (r + 1) * v.dim, d.row(i)));
      BOOST_REQUIRE_EQUAL(v.y[r], d.labels[i]);
      order.push_back(i);
    }
  }
  return order;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sharding)

BOOST_AUTO_TEST_CASE(iid_covers_and_balances) {
  for (std::size_t nodes : {1u, 3u, 10u, 64u}) {
    const shards s = shard_iid(1003, nodes, 42);
    BOOST_TEST(s.size() == nodes);
    BOOST_TEST(covers_once(s, 1003));
    BOOST_TEST(each_sorted(s));
    const auto [lo, hi] = std::minmax_element(
      s.begin(), s.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
    BOOST_TEST(hi->size() - lo->size() <= 1u, "nodes " << nodes);
  }
  // More nodes than samples: sizes 1 and 0.
  const shards tiny = shard_iid(3, 5, 1);
  BOOST_TEST(covers_once(tiny, 3));
  BOOST_TEST(std::count_if(tiny.begin(), tiny.end(), [](const auto& v) { return v.size() == 1; }) ==
             3);
  BOOST_CHECK_THROW((void)shard_iid(10, 0, 1), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(iid_deterministic_per_seed) {
  BOOST_TEST((shard_iid(1000, 7, 5) == shard_iid(1000, 7, 5)));
  BOOST_TEST((shard_iid(1000, 7, 5) != shard_iid(1000, 7, 6)));
  // Not just a contiguous split.
  BOOST_TEST(shard_iid(1000, 7, 5)[0].back() - shard_iid(1000, 7, 5)[0].front() > 143u);
}

BOOST_AUTO_TEST_CASE(label_skew_unequal_concentration) {
  const std::size_t classes = 10, nodes = 10;
  const auto labels = balanced_labels(classes, 500);
  double skewed = 0, flat = 0;
  const int trials = 5;
  for (int t = 0; t < trials; ++t) {
    const shards a = shard_label_skew_unequal(labels, classes, nodes, 0.1, 100 + t);
    const shards b = shard_label_skew_unequal(labels, classes, nodes, 100.0, 100 + t);
    for (const shards* s : {&a, &b}) {
      BOOST_TEST(covers_once(*s, labels.size()));
      BOOST_TEST(each_sorted(*s));
      BOOST_TEST(std::none_of(s->begin(), s->end(), [](const auto& v) { return v.empty(); }));
    }
    skewed += test::mean_max_class_fraction(a, labels, classes) / trials;
    flat += test::mean_max_class_fraction(b, labels, classes) / trials;
  }
  BOOST_TEST_MESSAGE("mean max-class fraction: alpha=0.1 " << skewed << ", alpha=100 " << flat);
  BOOST_TEST(skewed > 0.45);  // ~0.6 typical (single runs 0.47..0.76)
  BOOST_TEST(flat < 0.15);    // ~0.115 typical; uniform would be 0.1
  BOOST_TEST(skewed > 3 * flat);
}

BOOST_AUTO_TEST_CASE(label_skew_unequal_deterministic_and_nonempty) {
  const auto labels = balanced_labels(4, 50);
  BOOST_TEST((shard_label_skew_unequal(labels, 4, 8, 0.5, 9) ==
              shard_label_skew_unequal(labels, 4, 8, 0.5, 9)));
  BOOST_TEST((shard_label_skew_unequal(labels, 4, 8, 0.5, 9) !=
              shard_label_skew_unequal(labels, 4, 8, 0.5, 10)));

  // Tiny alpha puts each class on one node: most nodes would be empty and
  // must each get a sample moved from the largest shard.
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const shards s = shard_label_skew_unequal(labels, 4, 30, 1e-4, seed);
    BOOST_TEST(covers_once(s, labels.size()));
    BOOST_TEST(std::none_of(s.begin(), s.end(), [](const auto& v) { return v.empty(); }));
  }
  // As many nodes as samples: one each.
  const shards one = shard_label_skew_unequal(balanced_labels(2, 5), 2, 10, 0.3, 1);
  BOOST_TEST(covers_once(one, 10));
  BOOST_TEST(std::all_of(one.begin(), one.end(), [](const auto& v) { return v.size() == 1; }));
  // A class with no samples is fine.
  BOOST_TEST(covers_once(shard_label_skew_unequal(labels, 6, 3, 1.0, 1), labels.size()));

  BOOST_CHECK_THROW((void)shard_label_skew_unequal(labels, 4, 0, 1.0, 1), std::invalid_argument);
  BOOST_CHECK_THROW((void)shard_label_skew_unequal(labels, 4, 201, 1.0, 1), std::invalid_argument);
  BOOST_CHECK_THROW((void)shard_label_skew_unequal(labels, 4, 3, 0.0, 1), std::invalid_argument);
  BOOST_CHECK_THROW((void)shard_label_skew_unequal(labels, 3, 3, 1.0, 1), std::invalid_argument);
  BOOST_CHECK_THROW((void)shard_label_skew_unequal({0, -1, 1}, 2, 1, 1.0, 1),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(sampler_epochs_and_rows) {
  const dataset d = indexed_dataset(200);
  std::vector<std::uint32_t> shard;
  for (std::uint32_t i = 3; i < 200; i += 4)
    shard.push_back(i);  // 50 indices
  std::vector<std::uint32_t> sorted_shard = shard;

  minibatch_sampler s(d, shard, 7, 11);
  BOOST_TEST(s.batch_size() == 7u);
  std::vector<std::uint32_t> idx = s.indices();
  std::sort(idx.begin(), idx.end());
  BOOST_TEST(idx == sorted_shard);

  // 50 batches of 7 = 7 epochs of 50 exactly; batches straddle epoch ends.
  const std::vector<std::uint32_t> order = draw(s, d, 50);
  std::vector<std::vector<std::uint32_t>> epochs;
  for (std::size_t e = 0; e < 7; ++e) {
    std::vector<std::uint32_t> ep(order.begin() + static_cast<std::ptrdiff_t>(e * 50),
                                  order.begin() + static_cast<std::ptrdiff_t>((e + 1) * 50));
    epochs.push_back(ep);
    std::sort(ep.begin(), ep.end());
    BOOST_TEST(ep == sorted_shard, "epoch " << e << " visits each index once");
  }
  BOOST_TEST(epochs[0] != epochs[1]);  // reshuffled per epoch
  BOOST_TEST(epochs[0] != shard);      // shuffled at all

  // Same seed, same stream; another seed, another stream.
  minibatch_sampler same(d, shard, 7, 11);
  BOOST_TEST(draw(same, d, 50) == order);
  minibatch_sampler other(d, shard, 7, 12);
  BOOST_TEST(draw(other, d, 50) != order);
  // The batch size does not change the draw order, only how it is cut.
  minibatch_sampler wide(d, shard, 25, 11);
  BOOST_TEST(draw(wide, d, 14) == order);
}

BOOST_AUTO_TEST_CASE(sampler_batch_larger_than_shard) {
  const dataset d = indexed_dataset(20);
  const std::vector<std::uint32_t> shard = {2, 5, 7, 11, 13};
  minibatch_sampler s(d, shard, 12, 3);
  const std::vector<std::uint32_t> order = draw(s, d, 5);  // 60 draws = 12 epochs
  for (std::size_t e = 0; e < 12; ++e) {
    std::vector<std::uint32_t> ep(order.begin() + static_cast<std::ptrdiff_t>(e * 5),
                                  order.begin() + static_cast<std::ptrdiff_t>((e + 1) * 5));
    std::sort(ep.begin(), ep.end());
    BOOST_TEST(ep == shard);
  }
}

BOOST_AUTO_TEST_CASE(sampler_over_iid_shards_of_a_dataset) {
  const dataset d = indexed_dataset(103);
  const shards parts = shard_iid(d.size(), 4, 77);
  std::vector<int> seen(d.size(), 0);
  for (std::size_t k = 0; k < parts.size(); ++k) {
    minibatch_sampler s(d, parts[k], 5, derive_seed(77, k));
    const std::size_t n = parts[k].size();
    const auto order = draw(s, d, (n + 4) / 5);
    for (std::size_t j = 0; j < n; ++j)
      ++seen[order[j]];
  }
  BOOST_TEST(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
}

BOOST_AUTO_TEST_CASE(sampler_rejects_bad_arguments) {
  const dataset d = indexed_dataset(10);
  BOOST_CHECK_THROW(minibatch_sampler(d, {1, 2}, 0, 1), std::invalid_argument);
  BOOST_CHECK_THROW(minibatch_sampler(d, {}, 4, 1), std::invalid_argument);
  BOOST_CHECK_THROW(minibatch_sampler(d, {1, 10}, 4, 1), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
