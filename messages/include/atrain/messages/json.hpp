#pragma once
/// atrain's one JSON mapping, shared by report.json, compare.json and
/// events.jsonl: integers (32 and 64 bits) are JSON numbers written exactly
/// (a uint64 above 2^53 keeps every digit: readers that hold numbers as IEEE
/// doubles, such as JavaScript, round it; Python reads it exactly), doubles
/// are the shortest text that reads back to the same double, non-finite
/// doubles are null, strings are escaped per RFC 8259.
#include <cstdint>
#include <string>

#include <google/protobuf/message.h>

namespace atrain::json {

[[nodiscard]] std::string quote(const std::string& s);
[[nodiscard]] std::string number(double x);
[[nodiscard]] std::string integer(std::uint64_t x);
[[nodiscard]] std::string integer(std::int64_t x);

/// A protobuf message with proto field names: every scalar and repeated
/// field, zero values included; unset proto3 `optional` fields and unset
/// sub-messages are absent; enums by name; bytes as base64. `indent` > 0
/// pretty-prints with that many spaces per level; 0 gives one line.
[[nodiscard]] std::string message(const google::protobuf::Message& m, int indent = 2);

}  // namespace atrain::json
