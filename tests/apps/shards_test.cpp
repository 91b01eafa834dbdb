// `atrain shards`: the exported split is the plan's (node i's rows are
// plan.shard[i], which node i's minibatch sampler draws from) and partitions
// the training set; the test-set fields name the rows the evaluator uses.
// The JSON is read back by a small parser here, not by the writer's code.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
#include <regex>
#include <string>
#include <vector>

#include "atrain/engine.hpp"
#include "shards.hpp"
#include "source_dir.hpp"

namespace {

using rows = std::vector<std::uint32_t>;

/// The list of integer lists after "shards": in `json`.
std::vector<rows> read_shards(const std::string& json) {
  auto pos = json.find("\"shards\":");
  BOOST_REQUIRE(pos != std::string::npos);
  pos = json.find('[', pos);
  BOOST_REQUIRE(pos != std::string::npos);
  std::vector<rows> out;
  int depth = 0;
  for (auto i = pos; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '[') {
      if (++depth == 2)
        out.emplace_back();
    } else if (c == ']') {
      if (--depth == 0)
        return out;
    } else if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      BOOST_REQUIRE(depth == 2);
      std::size_t used = 0;
      out.back().push_back(static_cast<std::uint32_t>(std::stoul(json.substr(i), &used)));
      i += used - 1;
    }
  }
  BOOST_FAIL("unterminated shards list");
  return out;
}

/// The first match of `pattern`'s group 1 in `json`.
std::string field(const std::string& json, const std::string& pattern) {
  std::smatch m;
  BOOST_REQUIRE_MESSAGE(std::regex_search(json, m, std::regex{pattern}), pattern);
  return m[1].str();
}

struct exported {
  std::shared_ptr<const atrain::run_plan> plan;
  std::string json;
};

exported export_split(const std::vector<std::string>& overrides) {
  auto spec = atrain::load_spec(atrain::test::source_dir() + "/config/quickstart.textproto", overrides);
  auto plan = atrain::prepare_run(spec);
  return {plan, atrain::cli::shards_json(spec, *plan)};
}

/// Every training row 0..n-1 in exactly one shard.
void check_partition(const std::vector<rows>& shards, std::size_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& s : shards)
    for (auto r : s) {
      BOOST_REQUIRE(r < n);
      ++seen[r];
    }
  BOOST_TEST(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(n));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shards_export)

BOOST_AUTO_TEST_CASE(iid_split_is_the_plans_and_partitions_the_training_set) {
  const auto e = export_split({"nodes=5"});
  const auto shards = read_shards(e.json);
  BOOST_REQUIRE(shards.size() == 5u);
  for (std::size_t i = 0; i < shards.size(); ++i)
    BOOST_TEST(shards[i] == e.plan->shard[i]);
  const std::size_t n = 32561;  // a9a's rows
  BOOST_TEST(std::stoul(field(e.json, R"re("train": \{[^}]*"rows": (\d+))re")) == n);
  check_partition(shards, n);
  for (const auto& s : shards) {  // IID: equal sizes (within one), ascending
    BOOST_TEST((s.size() == n / 5 || s.size() == n / 5 + 1));
    BOOST_TEST(std::is_sorted(s.begin(), s.end()));
  }
  BOOST_TEST(field(e.json, R"re("shard_policy": "(\w+)")re") == "IID");
  BOOST_TEST(field(e.json, R"re("test": \{"same_as_train": (\w+))re") == "false");
  BOOST_TEST(std::stoul(field(e.json, R"re("test": \{[^}]*"rows": (\d+))re")) == 16281u);
  BOOST_TEST(field(e.json, R"re("test": \{[^}]*"path": "([^"]*)")re").find("/data/a9a.t.gz") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(another_seed_and_label_skew_are_exported_as_drawn) {
  // A different seed draws different shards; the export follows the plan.
  const auto a = export_split({"nodes=4"});
  const auto b = export_split({"nodes=4", "seed=2"});
  const auto sa = read_shards(a.json);
  const auto sb = read_shards(b.json);
  BOOST_TEST(sa[0] != sb[0]);
  for (std::size_t i = 0; i < 4; ++i)
    BOOST_TEST(sb[i] == b.plan->shard[i]);
  const auto skew = export_split({"nodes=4", "shard={policy: LABEL_SKEW dirichlet_alpha: 0.1}",
                                  "dataset.max_train_samples=3000"});
  const auto ss = read_shards(skew.json);
  BOOST_REQUIRE(ss.size() == 4u);
  for (std::size_t i = 0; i < 4; ++i)
    BOOST_TEST(ss[i] == skew.plan->shard[i]);
  check_partition(ss, 3000);
  BOOST_TEST(field(skew.json, R"re("shard_policy": "(\w+)")re") == "LABEL_SKEW");
}

BOOST_AUTO_TEST_CASE(without_a_test_file_the_test_set_is_the_training_set) {
  const auto e = export_split({"nodes=2", "dataset.test_path=", "dataset.max_train_samples=1000",
                               "eval.train_loss_samples=100"});
  BOOST_TEST(field(e.json, R"re("test": \{"same_as_train": (\w+))re") == "true");
  BOOST_TEST(std::stoul(field(e.json, R"re("test": \{[^}]*"rows": (\d+))re")) == 1000u);
  // The train-loss rows are the plan's 100, not the whole set.
  const auto pos = e.json.find("\"train_eval_rows\":");
  BOOST_REQUIRE(pos != std::string::npos);
  const auto list = e.json.substr(pos, e.json.find(']', pos) - pos);
  BOOST_TEST(std::count(list.begin(), list.end(), ',') + 1 == 100);
  BOOST_TEST(e.plan->train_eval_rows.size() == 100u);
}

BOOST_AUTO_TEST_CASE(the_split_summary_is_exported_with_sizes_histograms_and_zeta2) {
  auto spec = atrain::load_spec(atrain::test::source_dir() + "/config/quickstart.textproto",
                                {"nodes=4", "shard={policy: PATHOLOGICAL classes_per_node: 1}",
                                 "dataset.max_train_samples=2000"});
  auto plan = atrain::prepare_run(spec);
  const auto split = atrain::describe_split(*plan, true);
  const auto json = atrain::cli::shards_json(spec, *plan, &split);
  // shard_rows and the histograms are counted here from the exported shards.
  const auto shards = read_shards(json);
  const auto rows_at = json.find("\"shard_rows\": [");
  BOOST_REQUIRE(rows_at != std::string::npos);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    BOOST_TEST(split.shard_rows(static_cast<int>(i)) == shards[i].size());
    std::uint64_t ones = 0;
    for (auto r : shards[i])
      ones += plan->train->labels[r] == 1 ? 1 : 0;
    BOOST_TEST(split.class_histogram(static_cast<int>(i)).rows(1) == ones);
  }
  BOOST_TEST(std::stod(field(json, R"re("zeta2_x0": ([0-9.e+-]+))re")) == split.zeta2_x0(),
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(split.zeta2_x0() > 0);
  BOOST_TEST(split.sigma2_x0() > 0);
  BOOST_TEST(field(json, R"re("batch_size": (\d+))re") == "32");
}

BOOST_AUTO_TEST_SUITE_END()
