// Run report -> JSON.
#include <boost/test/unit_test.hpp>

#include "atrain/messages/json.hpp"
#include "atrain/messages/spec.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

#include <string>

BOOST_AUTO_TEST_SUITE(report_json)

namespace {
bool has(const std::string& json, const std::string& s) {
  return json.find(s) != std::string::npos;
}
}  // namespace

BOOST_AUTO_TEST_CASE(zero_counters_are_printed_and_unset_optional_is_absent) {
  atrain::proto::RunReport r;
  r.set_name("ring-8");
  r.set_algorithm("rfast");
  r.set_nodes(8);
  r.mutable_final()->set_test_accuracy(0.84);
  const std::string json = atrain::report_to_json(r);
  BOOST_TEST(has(json, "\"name\": \"ring-8\""), json);
  BOOST_TEST(has(json, "\"nodes\": 8"), json);
  // Zero-valued counters still appear, as JSON numbers (64-bit ones too).
  BOOST_TEST(has(json, "\"packets_dropped\": 0,"), json);
  BOOST_TEST(has(json, "\"gradients_total\": 0,"), json);
  BOOST_TEST(has(json, "\"staleness_max\": 0"), json);
  BOOST_TEST(has(json, "\"trace_events\": 0,"), json);
  BOOST_TEST(has(json, "\"seed\": 0,"), json);
  BOOST_TEST(has(json, "\"test_accuracy\": 0.84"), json);
  BOOST_TEST(has(json, "\"train_loss\": 0"), json);  // inside final
  // Proto field names, not lowerCamelCase.
  BOOST_TEST(!has(json, "gradientsTotal"), json);
  // Unset optional: absent.
  BOOST_TEST(!has(json, "time_to_target"), json);
  BOOST_TEST(json.back() == '\n');
}

BOOST_AUTO_TEST_CASE(time_to_target_present_when_set) {
  atrain::proto::RunReport r;
  r.set_time_to_target(12.5);
  BOOST_TEST(has(atrain::report_to_json(r), "\"time_to_target\": 12.5"));
  r.set_time_to_target(0);  // reached at time zero is still "reached"
  BOOST_TEST(has(atrain::report_to_json(r), "\"time_to_target\": 0"));
  r.clear_time_to_target();
  BOOST_TEST(!has(atrain::report_to_json(r), "time_to_target"));
}

BOOST_AUTO_TEST_CASE(repeated_rows_and_nodes) {
  atrain::proto::RunReport r;
  auto* m = r.add_metrics();
  m->set_time_seconds(1.5);
  m->set_gradients(100);
  auto* n = r.add_per_node();
  n->set_node(0);
  r.add_warnings("slow node 3");
  const std::string json = atrain::report_to_json(r);
  BOOST_TEST(has(json, "\"metrics\": ["), json);
  BOOST_TEST(has(json, "\"gradients\": 100,"), json);
  BOOST_TEST(has(json, "\"dropped\": 0"), json);  // zero inside a repeated message
  BOOST_TEST(has(json, "\"node\": 0"), json);
  BOOST_TEST(has(json, "\"slow node 3\""), json);
}

BOOST_AUTO_TEST_CASE(integers_are_numbers_even_above_2_to_the_53) {
  atrain::proto::RunReport r;
  r.set_seed(std::numeric_limits<std::uint64_t>::max());
  r.set_gradients_total((std::uint64_t{1} << 53) + 1);  // not representable as a double
  const std::string json = atrain::report_to_json(r);
  BOOST_TEST(has(json, "\"seed\": 18446744073709551615,"), json);
  BOOST_TEST(has(json, "\"gradients_total\": 9007199254740993,"), json);
  BOOST_TEST(!has(json, "\"seed\": \""), json);
  BOOST_TEST(atrain::json::integer(std::int64_t{-42}) == "-42");
}

BOOST_AUTO_TEST_CASE(doubles_round_trip_and_non_finite_is_null) {
  for (double x : {0.1, 1.0 / 3.0, 0.845, 12.5, 1e-300, 6.02214076e23, -2.5, 0.0}) {
    const auto text = atrain::json::number(x);
    BOOST_TEST(std::strtod(text.c_str(), nullptr) == x, text);
  }
  BOOST_TEST(atrain::json::number(0.845) == "0.845");
  BOOST_TEST(atrain::json::number(3.0) == "3");
  BOOST_TEST(atrain::json::number(std::nan("")) == "null");
  BOOST_TEST(atrain::json::number(std::numeric_limits<double>::infinity()) == "null");
  atrain::proto::RunReport r;
  r.set_consensus_error(std::nan(""));
  BOOST_TEST(has(atrain::report_to_json(r), "\"consensus_error\": null,"));
}

BOOST_AUTO_TEST_CASE(strings_are_escaped_and_empty_repeated_is_an_empty_list) {
  BOOST_TEST(atrain::json::quote("a\"b\\c\nd\x01") == "\"a\\\"b\\\\c\\nd\\u0001\"");
  atrain::proto::RunReport r;
  const std::string json = atrain::report_to_json(r);
  BOOST_TEST(has(json, "\"metrics\": []"), json);
  BOOST_TEST(!has(json, "\"final\""), json);  // unset sub-message: absent
  r.add_warnings("x");
  r.add_warnings("y");
  BOOST_TEST(has(atrain::report_to_json(r), "\"warnings\": [\"x\", \"y\"]"));
  BOOST_TEST(atrain::json::message(r, 0).find('\n') == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
