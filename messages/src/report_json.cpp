// atrain's JSON mapping (json.hpp) and the run report through it.
#include "atrain/messages/json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "atrain/messages/spec.hpp"

namespace atrain {

namespace json {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string number(double x) {
  if (!std::isfinite(x))
    return "null";
  char buf[40];
  if (x == std::floor(x) && std::fabs(x) < 1e15) {  // integral: no exponent (30, not 3e+01)
    std::snprintf(buf, sizeof buf, "%.0f", x);
    return buf;
  }
  // Shortest %g text that reads back to x (at most 17 digits).
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (std::strtod(buf, nullptr) == x)
      break;
  }
  return buf;
}

std::string integer(std::uint64_t x) {
  return std::to_string(x);
}
std::string integer(std::int64_t x) {
  return std::to_string(x);
}

namespace {

namespace pb = google::protobuf;

std::string base64(const std::string& in) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6)
      out += table[(v >> k) & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size())
      v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += i + 1 < in.size() ? table[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

void write_message(const pb::Message& m, int indent, int depth, std::string& out);

/// Element `index` of a repeated field, or the singular field (index < 0).
void write_value(const pb::Message& m, const pb::FieldDescriptor* f, int index, int indent,
                 int depth, std::string& out) {
  const auto* r = m.GetReflection();
  const bool rep = index >= 0;
  using FD = pb::FieldDescriptor;
  switch (f->cpp_type()) {
    case FD::CPPTYPE_INT32:
      out += std::to_string(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
      break;
    case FD::CPPTYPE_INT64:
      out += integer(
        static_cast<std::int64_t>(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f)));
      break;
    case FD::CPPTYPE_UINT32:
      out += std::to_string(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
      break;
    case FD::CPPTYPE_UINT64:
      out += integer(
        static_cast<std::uint64_t>(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f)));
      break;
    case FD::CPPTYPE_DOUBLE:
      out += number(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
      break;
    case FD::CPPTYPE_FLOAT:
      out += number(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
      break;
    case FD::CPPTYPE_BOOL:
      out += (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
      break;
    case FD::CPPTYPE_ENUM: {
      const auto* e = rep ? r->GetRepeatedEnum(m, f, index) : r->GetEnum(m, f);
      out += quote(e->name());
      break;
    }
    case FD::CPPTYPE_STRING: {
      const auto s = rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
      out += quote(f->type() == FD::TYPE_BYTES ? base64(s) : s);
      break;
    }
    case FD::CPPTYPE_MESSAGE:
      write_message(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f), indent, depth,
                    out);
      break;
  }
}

void newline(int indent, int depth, std::string& out) {
  if (indent > 0)
    out += '\n' + std::string(static_cast<std::size_t>(indent * depth), ' ');
}

void write_message(const pb::Message& m, int indent, int depth, std::string& out) {
  const auto* d = m.GetDescriptor();
  const auto* r = m.GetReflection();
  out += '{';
  bool first = true;
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    // Presence: proto3 optional and sub-messages print only when set.
    if (!f->is_repeated() && f->has_presence() && !r->HasField(m, f))
      continue;
    out += first ? "" : ",";
    first = false;
    newline(indent, depth + 1, out);
    out += quote(f->name()) + (indent > 0 ? ": " : ":");
    if (!f->is_repeated()) {
      write_value(m, f, -1, indent, depth + 1, out);
      continue;
    }
    const int n = r->FieldSize(m, f);
    out += '[';
    for (int k = 0; k < n; ++k) {
      out += k ? "," : "";
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE)
        newline(indent, depth + 2, out);
      else if (k && indent > 0)
        out += ' ';
      write_value(m, f, k, indent, depth + 2, out);
    }
    if (n > 0 && f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE)
      newline(indent, depth + 1, out);
    out += ']';
  }
  if (!first)
    newline(indent, depth, out);
  out += '}';
}

}  // namespace

std::string message(const google::protobuf::Message& m, int indent) {
  std::string out;
  write_message(m, indent, 0, out);
  return out;
}

}  // namespace json

std::string report_to_json(const proto::RunReport& report) {
  return json::message(report) + "\n";
}

}  // namespace atrain
