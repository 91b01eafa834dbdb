// Run report -> JSON (proto field names, zero values printed, unset optionals absent).
#include "atrain/messages/spec.hpp"

#include <google/protobuf/util/json_util.h>

namespace atrain {

std::string report_to_json(const proto::RunReport& report) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;  // zero counters appear
  options.preserve_proto_field_names = true;
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(report, &out, options);
  if (!status.ok()) {
    // Only possible with invalid UTF-8 in a string field; say so rather than crash.
    throw std::runtime_error("report_to_json: " + status.ToString());
  }
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

}  // namespace atrain
