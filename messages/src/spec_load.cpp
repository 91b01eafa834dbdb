// Spec loading: protobuf text format -> loaded_spec (with field line numbers).
#include "atrain/messages/spec.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace atrain {
namespace {

namespace pb = google::protobuf;
namespace fs = std::filesystem;

constexpr std::uintmax_t max_spec_bytes = 64u << 20;  // a spec is a few KB; refuse junk

struct parse_error {
  int line;  // 0-based, -1 = none
  int column;
  std::string message;
};

class collector final : public pb::io::ErrorCollector {
public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    errors.push_back({line, column, message});
  }
  std::vector<parse_error> errors;
};

class silent_collector final : public pb::io::ErrorCollector {
public:
  void AddError(int, pb::io::ColumnNumber, const std::string&) override {}
};

struct token {
  std::string text;
  int line;    // 0-based
  int column;  // 0-based
};

// Tokens of the (already successfully parsed) text, tokenized as TextFormat does.
std::vector<token> tokenize(const std::string& text) {
  std::vector<token> out;
  if (text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    return out;
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  silent_collector errors;
  pb::io::Tokenizer tok(&input, &errors);
  tok.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
  tok.set_allow_f_after_float(true);
  while (tok.Next())
    out.push_back({tok.current().text, tok.current().line, tok.current().column});
  return out;
}

bool before(int l1, int c1, int l2, int c2) {
  return l1 < l2 || (l1 == l2 && c1 < c2);
}

// Lines of the values in one occurrence of a repeated field: "f: 1", "f: [1, -2, 3]",
// "f { ... }", "f: [{...}, {...}]". The tree records one range per occurrence, not per
// list element, so the elements are found again in the token stream: from the range's
// first token (a binary search, tokens are in text order) to its end, so each
// occurrence costs its own tokens, not the whole text's.
void element_lines(const std::vector<token>& tokens,
                   const pb::TextFormat::ParseLocationRange& range, std::vector<int>& out) {
  bool expect_value = false;
  bool first = true;
  int depth = 0;
  const auto from = std::lower_bound(tokens.begin(), tokens.end(), range.start,
                                     [](const token& t, const pb::TextFormat::ParseLocation& at) {
                                       return before(t.line, t.column, at.line, at.column);
                                     });
  for (auto it = from; it != tokens.end(); ++it) {
    const token& t = *it;
    if (!before(t.line, t.column, range.end.line, range.end.column))
      break;
    if (first) {  // the field name
      first = false;
      expect_value = true;
      continue;
    }
    const bool open = t.text == "{" || t.text == "<";
    const bool close = t.text == "}" || t.text == ">";
    if (depth > 0) {
      depth += open ? 1 : close ? -1 : 0;
      continue;
    }
    if (t.text == ":" || t.text == "[" || t.text == ",") {
      expect_value = true;
    } else if (t.text == "]") {
      expect_value = false;
    } else if (expect_value) {
      out.push_back(t.line + 1);
      expect_value = false;
      if (open)
        depth = 1;
    }
  }
}

void record_lines(const pb::Message& m, const pb::TextFormat::ParseInfoTree& tree,
                  const std::vector<token>& tokens, const std::string& prefix,
                  std::map<std::string, int>& lines) {
  const pb::Descriptor* d = m.GetDescriptor();
  const pb::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    const std::string path = prefix.empty() ? f->name() : prefix + "." + f->name();
    const bool is_msg = f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE;
    if (f->is_repeated()) {
      const int n = r->FieldSize(m, f);
      if (n == 0)
        continue;
      // One range per occurrence of the field name in the text.
      std::vector<pb::TextFormat::ParseLocationRange> ranges;
      for (int k = 0;; ++k) {
        const auto range = tree.GetLocationRange(f, k);
        if (range.start.line < 0)
          break;
        ranges.push_back(range);
      }
      if (ranges.empty())
        continue;
      std::vector<int> elem_lines;
      for (const auto& range : ranges)
        element_lines(tokens, range, elem_lines);
      if (static_cast<int>(elem_lines.size()) != n) {  // should not happen; degrade gracefully
        elem_lines.clear();
        for (int k = 0; k < n; ++k)
          elem_lines.push_back(ranges[std::min<std::size_t>(k, ranges.size() - 1)].start.line + 1);
      }
      lines[path] = ranges.front().start.line + 1;
      for (int k = 0; k < n; ++k) {
        const std::string elem = path + "[" + std::to_string(k) + "]";
        lines[elem] = elem_lines[k];
        if (is_msg) {
          if (const auto* sub = tree.GetTreeForNested(f, k))
            record_lines(r->GetRepeatedMessage(m, f, k), *sub, tokens, elem, lines);
        }
      }
    } else {
      const auto loc = tree.GetLocation(f, -1);
      if (loc.line < 0)
        continue;
      lines[path] = loc.line + 1;
      if (is_msg) {
        if (const auto* sub = tree.GetTreeForNested(f, -1))
          record_lines(r->GetMessage(m, f), *sub, tokens, path, lines);
      }
    }
  }
}

// "a.b[2].c" -> "a.b[2]" -> "a.b" -> "a" -> "".
std::string parent_path(const std::string& p) {
  if (!p.empty() && p.back() == ']') {
    const auto open = p.rfind('[');
    return open == std::string::npos ? std::string() : p.substr(0, open);
  }
  const auto dot = p.rfind('.');
  return dot == std::string::npos ? std::string() : p.substr(0, dot);
}

// protobuf reports an unknown enum name at the token after it (often the next line);
// point at the name itself.
void fix_enum_position(const std::string& text, parse_error& e) {
  static const std::string marker = "Unknown enumeration value of \"";
  if (e.message.rfind(marker, 0) != 0 || e.line < 0)
    return;
  const auto end = e.message.find('"', marker.size());
  if (end == std::string::npos)
    return;
  const std::string name = e.message.substr(marker.size(), end - marker.size());
  const std::vector<token> tokens = tokenize(text);
  const token* last = nullptr;
  for (const auto& t : tokens) {
    if (!before(t.line, t.column, e.line, e.column))
      break;
    if (t.text == name)
      last = &t;
  }
  if (last) {
    e.line = last->line;
    e.column = last->column;
  }
}

std::string format_errors(const std::string& file, const std::string& text,
                          std::vector<parse_error> errors) {
  std::string msg;
  for (auto& e : errors) {
    fix_enum_position(text, e);
    std::ostringstream os;
    os << file;
    if (e.line >= 0) {
      os << ':' << e.line + 1;
      if (e.column >= 0)
        os << ':' << e.column + 1;
    }
    os << ": " << e.message;
    msg += (msg.empty() ? "" : "\n") + os.str();
  }
  if (msg.empty())
    msg = file + ": not a valid experiment spec (text format)";
  return msg;
}

}  // namespace

std::string loaded_spec::where(const std::string& field_path) const {
  // The field, one of its parents or one of its children was assigned by --set: the
  // file's line would point at a value that is not the one in effect.
  for (std::string p = field_path; !p.empty(); p = parent_path(p)) {
    if (overridden.count(p))
      return "--set " + field_path;
  }
  for (auto it = overridden.lower_bound(field_path); it != overridden.end(); ++it) {
    if (it->compare(0, field_path.size(), field_path) != 0)
      break;
    const char next = it->size() > field_path.size() ? (*it)[field_path.size()] : '\0';
    if (next == '.' || next == '[')
      return "--set " + field_path;
  }
  for (std::string p = field_path; !p.empty(); p = parent_path(p)) {
    const auto it = lines.find(p);
    if (it != lines.end())
      return file + ":" + std::to_string(it->second) + ": " + field_path;
  }
  return file + ": " + field_path;
}

loaded_spec parse_spec(const std::string& text, const std::string& file_label,
                       const std::string& base_dir, const std::vector<std::string>& overrides) {
  loaded_spec s;
  s.file = file_label;
  s.base_dir = base_dir.empty() ? std::string(".") : base_dir;

  collector errors;
  pb::TextFormat::ParseInfoTree tree;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  parser.AllowUnknownField(false);
  parser.AllowFieldNumber(false);
  const bool ok = parser.ParseFromString(text, &s.spec);
  if (!ok || !errors.errors.empty())
    throw spec_error(format_errors(file_label, text, errors.errors));
  record_lines(s.spec, tree, tokenize(text), "", s.lines);

  std::string msg;
  for (const auto& o : overrides) {
    try {
      apply_override(s, o);
    } catch (const spec_error& e) {
      msg += (msg.empty() ? "" : "\n") + std::string(e.what());
    }
  }
  if (!msg.empty())
    throw spec_error(msg);
  return s;
}

loaded_spec load_spec(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw spec_error(path + ": cannot open spec file: not found");
  if (!fs::is_regular_file(st))
    throw spec_error(path + ": cannot open spec file: not a regular file");
  const auto size = fs::file_size(path, ec);
  if (!ec && size > max_spec_bytes)
    throw spec_error(path + ": spec file too large (" + std::to_string(size) + " bytes)");

  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw spec_error(path + ": cannot open spec file: " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad())
    throw spec_error(path + ": cannot read spec file");

  std::string dir = fs::path(path).parent_path().string();
  return parse_spec(buf.str(), path, dir.empty() ? "." : dir, overrides);
}

std::string resolve_path(const loaded_spec& s, const std::string& p) {
  if (p.empty())
    return p;
  const fs::path q(p);
  if (q.is_absolute())
    return p;
  return (fs::path(s.base_dir.empty() ? "." : s.base_dir) / q).lexically_normal().string();
}

std::optional<std::pair<std::string, std::uint16_t>> parse_host_port(const std::string& s,
                                                                     std::string& why) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    why = "expected HOST:PORT";
    return std::nullopt;
  }
  const auto port = s.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos) {
    why = "the port must be a number";
    return std::nullopt;
  }
  const auto p = std::stoul(port);
  if (p > 65535) {
    why = "the port must be <= 65535";
    return std::nullopt;
  }
  auto host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')  // [::1]:7000
    host = host.substr(1, host.size() - 2);
  return std::make_pair(host, static_cast<std::uint16_t>(p));
}

std::string to_text(const proto::ExperimentSpec& spec) {
  pb::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(true);
  std::string out;
  printer.PrintToString(spec, &out);
  return out;
}

}  // namespace atrain
