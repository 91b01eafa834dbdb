/// An `atrain node` host's plan (prepare_host_run) keeps only its nodes' training rows:
/// the same split as the driver's plan, each kept row equal to the driver's row, the
/// same minibatches from the same seed, checkpoints in rows of the whole set, and no
/// test set. IDX (MNIST, decoded row by row), LIBSVM (a9a, compacted after a whole
/// load) and the feature-skewed split (features needed to split) are all covered.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>

#include "fixtures.hpp"
#include "source_dir.hpp"

namespace {

using atrain::run_plan;

struct pair_of_plans {
  std::shared_ptr<const run_plan> whole;
  std::shared_ptr<const run_plan> host;
};

pair_of_plans plans(const std::string& config, const std::vector<std::string>& overrides,
                    const std::vector<std::uint32_t>& local) {
  const auto spec = atrain::load_spec(atrain::test::source_dir() + "/config/" + config, overrides);
  return {atrain::prepare_run(spec), atrain::prepare_host_run(spec, local)};
}

bool same_row(const atrain::dataset& a, std::size_t i, const atrain::dataset& b, std::size_t j) {
  return a.labels.at(i) == b.labels.at(j) &&
         std::memcmp(a.row(i), b.row(j), a.dim * sizeof(float)) == 0;
}

/// Everything the host plan promises, against the whole plan.
void expect_host_plan(const pair_of_plans& p, const std::vector<std::uint32_t>& local) {
  const auto& w = *p.whole;
  const auto& h = *p.host;
  BOOST_TEST(h.shard == w.shard);  // the same split: every node, rows of the whole set
  BOOST_TEST(h.train_rows == w.train->size());
  BOOST_TEST(h.train->dim == w.train->dim);
  BOOST_TEST(h.train->classes == w.train->classes);
  BOOST_TEST(h.test->size() == 0u);
  BOOST_TEST(h.test->dim == w.train->dim);
  BOOST_TEST(h.train_eval_rows.empty());
  BOOST_TEST(h.x0 == w.x0);
  std::size_t kept = 0;
  for (auto k : local)
    kept += w.shard.at(k).size();
  BOOST_TEST(h.train->size() == kept);
  BOOST_TEST(h.train->features.size() == kept * h.train->dim);
  for (std::uint32_t k = 0; k < w.nodes(); ++k) {
    const bool mine = std::find(local.begin(), local.end(), k) != local.end();
    if (!mine) {
      BOOST_CHECK_THROW((void)h.sampler_rows(k), std::out_of_range);
      continue;
    }
    const auto rows = h.sampler_rows(k);
    BOOST_REQUIRE(rows.size() == w.shard[k].size());
    for (std::size_t j = 0; j < rows.size(); ++j)
      BOOST_REQUIRE_MESSAGE(same_row(*h.train, rows[j], *w.train, w.shard[k][j]),
                            "node " << k << ", row " << j);
    // Checkpoints hold rows of the whole set: there and back.
    auto order = rows;
    std::reverse(order.begin(), order.end());
    const auto whole = h.whole_rows(k, order);
    for (std::size_t j = 0; j < order.size(); ++j)
      BOOST_REQUIRE(same_row(*h.train, order[j], *w.train, whole[j]));
    BOOST_TEST(h.train_rows_of(k, whole) == order);
    BOOST_TEST(w.whole_rows(k, whole) == whole);  // the driver's rows are the whole set's
    // The same minibatches from the same seed.
    atrain::minibatch_sampler a{*w.train, w.sampler_rows(k), 16, 99 + k};
    atrain::minibatch_sampler b{*h.train, rows, 16, 99 + k};
    for (int step = 0; step < 5; ++step) {
      const auto x = a.next();
      const auto y = b.next();
      BOOST_REQUIRE(std::equal(x.y, x.y + x.rows, y.y));
      BOOST_REQUIRE(std::memcmp(x.x, y.x, x.rows * x.dim * sizeof(float)) == 0);
    }
  }
  // A row outside the node's shard is refused, not mapped somewhere.
  const auto k = local.front();
  const auto outside = w.shard.at((k + 1) % w.nodes()).front();
  BOOST_CHECK_THROW((void)h.train_rows_of(k, {outside}), std::out_of_range);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(host_plan)

BOOST_AUTO_TEST_CASE(an_idx_host_decodes_only_its_shards) {
  const std::vector<std::vector<std::string>> splits = {
    {"shard.policy=IID"},
    {"shard.policy=LABEL_SKEW", "shard.dirichlet_alpha=0.3"},
    {"shard.policy=PATHOLOGICAL", "shard.classes_per_node=2"}};
  for (const auto& split : splits) {
    BOOST_TEST_CONTEXT(split.front()) {
      const std::vector<std::uint32_t> local = {3, 1};
      auto overrides = split;
      overrides.insert(overrides.end(), {"nodes=4", "dataset.max_train_samples=6000"});
      const auto p = plans("mnist_mlp.textproto", overrides, local);
      expect_host_plan(p, local);
      BOOST_TEST(p.host->train->size() * 2 == p.whole->train->size());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_libsvm_host_keeps_only_its_shards) {
  const std::vector<std::uint32_t> local = {0, 2, 4, 6};
  expect_host_plan(plans("quickstart.textproto", {}, local), local);
}

BOOST_AUTO_TEST_CASE(a_feature_skewed_host_keeps_only_its_shards) {
  const std::vector<std::uint32_t> local = {5};
  expect_host_plan(plans("quickstart.textproto",
                         {"shard.policy=FEATURE_SKEW", "dataset.max_train_samples=3000"}, local),
                   local);
}

// The host's refusals are the driver's: a bad split names its field on both.
BOOST_AUTO_TEST_CASE(a_host_refuses_what_the_driver_refuses) {
  const auto spec = atrain::load_spec(atrain::test::source_dir() + "/config/mnist_mlp.textproto",
                                      {"nodes=4", "dataset.max_train_samples=3",
                                       "shard.policy=LABEL_SKEW", "shard.dirichlet_alpha=0.3"});
  std::string driver;
  std::string host;
  try {
    (void)atrain::prepare_run(spec);
  } catch (const atrain::spec_error& e) {
    driver = e.what();
  }
  try {
    (void)atrain::prepare_host_run(spec, {0});
  } catch (const atrain::spec_error& e) {
    host = e.what();
  }
  BOOST_TEST(driver.find("nodes") != std::string::npos, driver);
  BOOST_TEST(host == driver);
}

BOOST_AUTO_TEST_SUITE_END()
