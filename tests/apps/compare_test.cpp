// `atrain compare`'s aggregation and table, checked against figures worked
// out by hand (the end-to-end run is the CTest cli_compare, checked by
// tests/apps/check_compare.py against the per-run reports).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <sstream>

#include "compare.hpp"

using namespace atrain::cli;

namespace {

run_figures run(std::uint64_t seed, std::optional<double> ttt, double acc, double grads,
                std::vector<double> stale = {}) {
  run_figures f;
  f.seed = seed;
  f.completed = true;
  f.time_to_target = ttt;
  f.final_accuracy = acc;
  f.gradients = grads;
  f.bytes_per_node = 1000.0 * grads;
  f.node_staleness = std::move(stale);
  return f;
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s)
    n += c == '\n';
  return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(compare)

BOOST_AUTO_TEST_CASE(summarize_is_mean_and_sample_std) {
  // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum to 32, sample
  // variance 32 / 7.
  const auto s = summarize({2, 4, 4, 4, 5, 5, 7, 9});
  BOOST_TEST(s.n == 8u);
  BOOST_TEST(s.mean == 5.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.std == std::sqrt(32.0 / 7.0), boost::test_tools::tolerance(1e-12));
  const auto one = summarize({3.5});
  BOOST_TEST(one.n == 1u);
  BOOST_TEST(one.mean == 3.5);
  BOOST_TEST(one.std == 0.0);
  BOOST_TEST(summarize({}).n == 0u);
}

BOOST_AUTO_TEST_CASE(aggregates_speedups_and_table) {
  std::vector<algorithm_result> rs(4);
  rs[0].name = "rfast";
  rs[0].runs = {run(1, 1.0, 0.846, 800, {1, 3}), run(2, 1.5, 0.850, 1200, {2, 5})};
  rs[0].runs[0].worst_node_accuracy = 0.80;  // the others scored no node
  rs[0].runs[1].worst_node_accuracy = 0.82;
  rs[1].name = "allreduce";
  rs[1].runs = {run(1, 2.0, 0.845, 400), run(2, 3.0, 0.847, 600)};
  rs[2].name = "dasgd";  // one seed misses the target
  rs[2].runs = {run(1, 0.5, 0.846, 300), run(2, std::nullopt, 0.840, 900)};
  rs[3].name = "osgp";  // one run failed: left out of every figure
  rs[3].runs = {run(1, 3.0, 0.848, 100), run(2, 9.0, 0.1, 5)};
  rs[3].runs[1].completed = false;
  rs[3].runs[1].error = "boom";
  aggregate(rs);

  const auto tol = boost::test_tools::tolerance(1e-12);
  BOOST_TEST(rs[0].completed == 2u);
  BOOST_TEST(rs[0].reached == 2u);
  BOOST_TEST(rs[0].time_to_target.mean == 1.25, tol);
  // sample std of {1, 1.5}: |1.5 - 1| / sqrt(2)
  BOOST_TEST(rs[0].time_to_target.std == 0.5 / std::sqrt(2.0), tol);
  BOOST_TEST(rs[0].final_accuracy.mean == 0.848, tol);
  BOOST_TEST(rs[0].gradients.mean == 1000.0, tol);
  BOOST_TEST(rs[0].worst_node_accuracy.n == 2u);
  BOOST_TEST(rs[0].worst_node_accuracy.mean == 0.81, tol);
  BOOST_TEST(rs[1].worst_node_accuracy.n == 0u);
  BOOST_TEST(rs[0].node_staleness.size() == 2u);
  BOOST_TEST(rs[0].node_staleness[0] == 1.5, tol);
  BOOST_TEST(rs[0].node_staleness[1] == 4.0, tol);
  // allreduce mean 2.5 s, rfast 1.25 s: twice as fast.
  BOOST_TEST(rs[0].speedup.has_value());
  BOOST_TEST(*rs[0].speedup == 2.0, tol);
  BOOST_TEST(*rs[1].speedup == 1.0, tol);
  BOOST_TEST(rs[2].reached == 1u);
  BOOST_TEST(!rs[2].all_reached());
  BOOST_TEST(!rs[2].speedup.has_value());
  BOOST_TEST(rs[3].completed == 1u);
  BOOST_TEST(rs[3].failed == 1u);
  BOOST_TEST(rs[3].final_accuracy.mean == 0.848, tol);
  BOOST_TEST(*rs[3].speedup == 2.5 / 3.0, tol);

  const auto table = markdown_table(rs, 0.845);
  BOOST_TEST_MESSAGE(table);
  BOOST_TEST(count_lines(table) == 2u + rs.size());
  BOOST_TEST(table.find("| rfast | 2 | 1.250 ± 0.354 | 0.8480 ± 0.0028 | 0.8100 ± 0.0141 | 1000 | "
                        "1.00 MB | 2.00× |") != std::string::npos);
  BOOST_TEST(table.find("| dasgd | 2 | not reached (1/2) |") != std::string::npos);
  BOOST_TEST(table.find("| osgp | 1 (1 failed) | 3.000 | 0.8480 | — | 100 | 100.0 kB | 0.83× |") !=
             std::string::npos);

  // Without allreduce there is no speed-up column figure.
  rs.erase(rs.begin() + 1);
  aggregate(rs);
  for (const auto& r : rs)
    BOOST_TEST(!r.speedup.has_value());
  BOOST_TEST(markdown_table(rs, 0.845).find("×") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(parses_its_own_flags) {
  compare_args a;
  BOOST_TEST(parse_compare({"spec.textproto", "--algorithms", "rfast,dasgd", "--seeds", "3",
                            "--set", "link.loss=0.1", "--algorithms=osgp", "--no-progress"},
                           a));
  BOOST_TEST(a.common.spec == "spec.textproto");
  BOOST_TEST((a.algorithms == std::vector<std::string>{"rfast", "dasgd", "osgp"}));
  BOOST_TEST(a.seeds == 3u);
  BOOST_TEST(a.common.overrides.size() == 1u);
  BOOST_TEST(a.common.progress.has_value());
  BOOST_TEST(!*a.common.progress);
  compare_args bad;
  BOOST_TEST(!parse_compare({"spec.textproto", "--algorithms", "rfast", "--seeds", "0"}, bad));
  compare_args none;
  BOOST_TEST(!parse_compare({"spec.textproto"}, none));
}

BOOST_AUTO_TEST_SUITE_END()
