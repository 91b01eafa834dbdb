// --set overrides: "field.path=value" applied through protobuf reflection.
#include "atrain/messages/spec.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

namespace atrain {
namespace {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct component {
  std::string name;
  int index = -1;  // -1: no [i]
};

// Throws the message text (without the "--set" prefix) as std::string on error.
std::vector<component> split_path(const std::string& path) {
  std::vector<component> out;
  std::size_t pos = 0;
  while (true) {
    const auto dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    component c;
    const auto open = part.find('[');
    if (open != std::string::npos) {
      if (part.back() != ']')
        throw std::string("malformed index in '" + part + "'");
      const std::string idx = part.substr(open + 1, part.size() - open - 2);
      if (idx.empty() || idx.size() > 9 || idx.find_first_not_of("0123456789") != std::string::npos)
        throw std::string("malformed index in '" + part + "'");
      c.index = std::stoi(idx);
      part = part.substr(0, open);
    }
    if (part.empty())
      throw std::string("empty field name in path");
    for (char ch : part) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_')
        throw std::string("malformed field name '" + part + "'");
    }
    c.name = part;
    out.push_back(c);
    if (dot == std::string::npos)
      break;
    pos = dot + 1;
  }
  return out;
}

const FD* find_field(const pb::Message& m, const std::string& name) {
  const FD* f = m.GetDescriptor()->FindFieldByName(name);
  if (!f)
    throw std::string("no field '" + name + "' in " + m.GetDescriptor()->full_name());
  return f;
}

// ---- scalar value parsing (errors thrown as std::string reason) ----

bool parse_bool(const std::string& v) {
  const std::string l = lower(v);
  if (l == "true" || l == "1" || l == "yes" || l == "on")
    return true;
  if (l == "false" || l == "0" || l == "no" || l == "off")
    return false;
  throw std::string("not a boolean (true or false)");
}

std::int64_t parse_int(const std::string& v, std::int64_t lo, std::int64_t hi) {
  if (v.empty() || std::isspace(static_cast<unsigned char>(v[0])))
    throw std::string("not an integer");
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 0);
  if (end == v.c_str() || *end != '\0')
    throw std::string("not an integer");
  if (errno == ERANGE || x < lo || x > hi)
    throw std::string("integer out of range");
  return x;
}

std::uint64_t parse_uint(const std::string& v, std::uint64_t hi) {
  if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])))
    throw std::string("not an unsigned integer");
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 0);
  if (end == v.c_str() || *end != '\0')
    throw std::string("not an unsigned integer");
  if (errno == ERANGE || x > hi)
    throw std::string("unsigned integer out of range");
  return x;
}

double parse_double(const std::string& v) {
  if (v.empty() || std::isspace(static_cast<unsigned char>(v[0])))
    throw std::string("not a number");
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);  // accepts nan, inf, 1e-3
  if (end == v.c_str() || *end != '\0')
    throw std::string("not a number");
  return x;  // overflow gives +-inf; validate() refuses non-finite values
}

std::string parse_string(const std::string& v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
    return v.substr(1, v.size() - 2);
  return v;
}

const pb::EnumValueDescriptor* parse_enum(const FD* f, const std::string& v) {
  const pb::EnumDescriptor* e = f->enum_type();
  if (const auto* ev = e->FindValueByName(v))
    return ev;
  const std::string l = lower(v);
  for (int i = 0; i < e->value_count(); ++i) {
    if (lower(e->value(i)->name()) == l)
      return e->value(i);
  }
  std::string names;
  for (int i = 0; i < e->value_count(); ++i)
    names += (i ? ", " : "") + e->value(i)->name();
  throw std::string("no value '" + v + "' in enum " + e->full_name() + " (one of " + names + ")");
}

// index >= 0: set element; index == -1: singular; index == -2: append.
void set_scalar(pb::Message& m, const FD* f, int index, const std::string& raw) {
  const pb::Reflection* r = m.GetReflection();
  const std::string v = trim(raw);
#define ATRAIN_SET(Kind, value)                                                                    \
  do {                                                                                             \
    if (index == -1)                                                                               \
      r->Set##Kind(&m, f, value);                                                                  \
    else if (index == -2)                                                                          \
      r->Add##Kind(&m, f, value);                                                                  \
    else                                                                                           \
      r->SetRepeated##Kind(&m, f, index, value);                                                   \
  } while (0)
  switch (f->cpp_type()) {
    case FD::CPPTYPE_INT32:
      ATRAIN_SET(Int32,
                 static_cast<std::int32_t>(parse_int(v, std::numeric_limits<std::int32_t>::min(),
                                                     std::numeric_limits<std::int32_t>::max())));
      break;
    case FD::CPPTYPE_INT64:
      ATRAIN_SET(Int64, parse_int(v, std::numeric_limits<std::int64_t>::min(),
                                  std::numeric_limits<std::int64_t>::max()));
      break;
    case FD::CPPTYPE_UINT32:
      ATRAIN_SET(UInt32, static_cast<std::uint32_t>(
                           parse_uint(v, std::numeric_limits<std::uint32_t>::max())));
      break;
    case FD::CPPTYPE_UINT64:
      ATRAIN_SET(UInt64, parse_uint(v, std::numeric_limits<std::uint64_t>::max()));
      break;
    case FD::CPPTYPE_DOUBLE:
      ATRAIN_SET(Double, parse_double(v));
      break;
    case FD::CPPTYPE_FLOAT:
      ATRAIN_SET(Float, static_cast<float>(parse_double(v)));
      break;
    case FD::CPPTYPE_BOOL:
      ATRAIN_SET(Bool, parse_bool(v));
      break;
    case FD::CPPTYPE_STRING:
      ATRAIN_SET(String, parse_string(v));
      break;
    case FD::CPPTYPE_ENUM:
      ATRAIN_SET(EnumValue, parse_enum(f, v)->number());
      break;
    case FD::CPPTYPE_MESSAGE:
      throw std::string("internal: message field treated as scalar");
  }
#undef ATRAIN_SET
}

// "[a, b, c]" -> {"a","b","c"}; "[]" -> {}.
std::vector<std::string> split_list(const std::string& v) {
  if (v.size() < 2 || v.front() != '[' || v.back() != ']')
    throw std::string("repeated field: write the whole list as [v1,v2,...]");
  const std::string body = trim(v.substr(1, v.size() - 2));
  std::vector<std::string> out;
  if (body.empty())
    return out;
  std::size_t pos = 0;
  while (true) {
    const auto comma = body.find(',', pos);
    out.push_back(
      trim(body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return out;
}

class text_errors final : public pb::io::ErrorCollector {
public:
  void AddError(int, pb::io::ColumnNumber column, const std::string& message) override {
    if (first.empty())
      first = "column " + std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};

// Message-typed field (singular or repeated, whole value): parse "name: VALUE" in text
// format into a scratch copy of the parent, then move that field over.
void set_message_field(pb::Message& parent, const FD* f, const std::string& v) {
  std::unique_ptr<pb::Message> scratch(parent.New());
  text_errors errs;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errs);
  if (f->is_repeated() && (v.empty() || v.front() != '['))
    throw std::string("repeated field: write the whole list as [{...},{...}]");
  if (!f->is_repeated() && (v.empty() || v.front() != '{'))
    throw std::string("message field: write {field: value ...} or set one of its fields");
  if (!parser.ParseFromString(f->name() + ": " + v, scratch.get()))
    throw std::string("not a valid " + f->message_type()->full_name() + " in text format (" +
                      errs.first + ")");
  parent.GetReflection()->ClearField(&parent, f);
  parent.MergeFrom(*scratch);  // only f is set in scratch; selects f's oneof case
}

}  // namespace

void apply_override(loaded_spec& s, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos)
    throw spec_error("--set " + assignment + ": expected field.path=value");
  const std::string path_text = trim(assignment.substr(0, eq));
  const std::string value = trim(assignment.substr(eq + 1));

  std::vector<component> path;
  try {
    path = split_path(path_text);
  } catch (const std::string& reason) {
    throw spec_error("--set " + path_text + ": " + reason);
  }

  // Navigate on a copy first, so a failing override leaves the spec untouched.
  proto::ExperimentSpec copy = s.spec;
  std::string normalised;
  try {
    pb::Message* m = &copy;
    for (std::size_t i = 0; i < path.size(); ++i) {
      const component& c = path[i];
      const FD* f = find_field(*m, c.name);
      const pb::Reflection* r = m->GetReflection();
      normalised += (i ? "." : "") + c.name;
      if (c.index >= 0) {
        if (!f->is_repeated())
          throw std::string("'" + c.name + "' is not a repeated field");
        const int size = r->FieldSize(*m, f);
        if (c.index >= size)
          throw std::string("index " + std::to_string(c.index) + " out of range ('" + c.name +
                            "' has " + std::to_string(size) + " elements)");
        normalised += "[" + std::to_string(c.index) + "]";
      }
      const bool last = i + 1 == path.size();
      if (!last) {
        if (f->cpp_type() != FD::CPPTYPE_MESSAGE)
          throw std::string("'" + c.name + "' is not a message");
        if (f->is_repeated() && c.index < 0)
          throw std::string("'" + c.name + "' is repeated: address an element as " + c.name +
                            "[i]");
        m = f->is_repeated() ? r->MutableRepeatedMessage(m, f, c.index) : r->MutableMessage(m, f);
        continue;
      }
      // Last component: assign.
      try {
        if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
          if (c.index >= 0) {
            pb::Message* elem = r->MutableRepeatedMessage(m, f, c.index);
            if (value.size() < 2 || value.front() != '{' || value.back() != '}')
              throw std::string("message field: write {field: value ...}");
            std::unique_ptr<pb::Message> tmp(elem->New());
            text_errors errs;
            pb::TextFormat::Parser parser;
            parser.RecordErrorsTo(&errs);
            if (!parser.ParseFromString(value.substr(1, value.size() - 2), tmp.get()))
              throw std::string("not a valid " + f->message_type()->full_name() +
                                " in text format (" + errs.first + ")");
            elem->CopyFrom(*tmp);
          } else {
            set_message_field(*m, f, value);
          }
        } else if (c.index >= 0) {
          set_scalar(*m, f, c.index, value);
        } else if (f->is_repeated()) {
          const auto items = split_list(value);
          r->ClearField(m, f);
          for (const auto& it : items)
            set_scalar(*m, f, -2, it);
        } else {
          set_scalar(*m, f, -1, value);
        }
      } catch (const std::string& reason) {
        throw spec_error("--set " + path_text + "=" + value + ": " + reason);
      }
    }
  } catch (const std::string& reason) {
    throw spec_error("--set " + path_text + ": " + reason);
  }
  s.spec = std::move(copy);
  s.overridden.insert(normalised);
}

}  // namespace atrain
