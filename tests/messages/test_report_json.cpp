// Run report -> JSON.
#include <boost/test/unit_test.hpp>

#include "atrain/messages/spec.hpp"

#include <string>

BOOST_AUTO_TEST_SUITE(report_json)

namespace {
bool has(const std::string& json, const std::string& s) { return json.find(s) != std::string::npos; }
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
  // Zero-valued counters still appear (64-bit integers are strings in proto JSON).
  BOOST_TEST(has(json, "\"packets_dropped\": \"0\""), json);
  BOOST_TEST(has(json, "\"gradients_total\": \"0\""), json);
  BOOST_TEST(has(json, "\"staleness_max\": 0"), json);
  BOOST_TEST(has(json, "\"trace_events\": \"0\""), json);
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
  BOOST_TEST(has(json, "\"gradients\": \"100\""), json);
  BOOST_TEST(has(json, "\"dropped\": \"0\""), json);    // zero inside a repeated message
  BOOST_TEST(has(json, "\"node\": 0"), json);
  BOOST_TEST(has(json, "\"slow node 3\""), json);
}

BOOST_AUTO_TEST_SUITE_END()
