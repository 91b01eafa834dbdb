// The messages tests' spec fixture: a valid base spec with its own tiny data
// files, textual edits, and a table of bad specs each refused at a field path,
// line and reason. Shared with the engine's check_spec tests
// (tests/actors/check_spec_test.cpp), which check the algorithms' own blocks.
#pragma once

#include <boost/test/unit_test.hpp>

#include "atrain/messages/spec.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace spec_fixture {

namespace fs = std::filesystem;
using atrain::spec_error;

// A private directory holding the spec's own tiny dataset files, so the tests do not
// depend on data/ being present.
struct temp_dir {
  fs::path path;
  temp_dir() {
    path = fs::temp_directory_path() / ("atrain-test-messages-" + std::to_string(::getpid()));
    fs::create_directories(path);
    std::ofstream(path / "tiny.libsvm") << "+1 1:0.5 3:1\n-1 2:1\n+1 1:1 2:0.25\n-1 3:0.5\n";
    std::ofstream(path / "images.idx") << "not really idx";
    std::ofstream(path / "labels.idx") << "not really idx";
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

inline temp_dir& tmp() {
  static temp_dir d;
  return d;
}

inline const std::string label = "spec.textproto";

// A valid spec exercising most fields. Cases below edit it textually.
inline const std::string base_spec = R"(# base spec for the messages tests
name: "base"
seed: 7
clock: VIRTUAL
nodes: 4
dataset {
  format: LIBSVM
  train_path: "tiny.libsvm"
  test_path: "tiny.libsvm"
  dimension: 3
}
shard {
  policy: IID
}
model {
  logistic_regression {
    l2: 0.0001
  }
  batch_size: 8
}
algorithm {
  rfast {
    variant: PHI
    step_size: 0.05
    phi_min: 0.05
    decay: 0.001
  }
}
topology {
  builder: EXPLICIT
  r_edges { from: 0 to: 1 }
  r_edges { from: 1 to: 2 }
  r_edges { from: 2 to: 3 }
  c_edges { from: 3 to: 2 }
  c_edges { from: 2 to: 1 }
  c_edges { from: 1 to: 0 }
}
cost {
  tau_seconds: 0.01
  jitter: 0.1
  slowdown { node: 2 factor: 3 }
}
link {
  latency_seconds: 0.001
  bandwidth_bytes_per_second: 1e9
  loss: 0.01
  duplicate: 0.01
  reorder: 0.01
  reorder_delay_seconds: 0.002
}
stop {
  time_seconds: 10
  target_accuracy: 0.8
  stop_at_target: true
}
eval {
  period_seconds: 0.5
}
out_dir: "out"
)";

inline atrain::loaded_spec parse(const std::string& text,
                                 const std::vector<std::string>& overrides = {}) {
  return atrain::parse_spec(text, label, tmp().path.string(), overrides);
}

// 1-based line of the first occurrence of `snippet` in `text` (0 when absent).
inline int line_of(const std::string& text, const std::string& snippet) {
  const auto pos = text.find(snippet);
  if (pos == std::string::npos)
    return 0;
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

inline std::string edit(std::string text,
                        const std::vector<std::pair<std::string, std::string>>& edits) {
  for (const auto& [from, to] : edits) {
    if (from.empty()) {  // {"", TEXT}: the whole spec is TEXT
      text = to;
      continue;
    }
    const auto pos = text.find(from);
    BOOST_REQUIRE_MESSAGE(pos != std::string::npos, "edit target not in spec: " << from);
    text.replace(pos, from.size(), to);
  }
  return text;
}

inline std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

// Runs load + `check` (validate, or the engine's check_spec); returns the
// spec_error message ("" if none was thrown).
template <class Check>
std::string refusal(Check check, const std::string& text,
                    const std::vector<std::string>& overrides = {}) {
  try {
    check(parse(text, overrides));
  } catch (const spec_error& e) {
    return e.what();
  }
  return {};
}

enum class at { line, parse_line, absent, set };

struct bad_case {
  const char* name;
  std::vector<std::pair<std::string, std::string>> edits;  // applied to base_spec in order
  std::vector<std::string> overrides;
  at where;
  std::string line_snippet;  // at::line / at::parse_line: the error's line holds this text
  std::string path;          // expected field path ("" for pure syntax errors)
  std::string reason;        // expected substring of the reason
};

inline const std::string rfast_block =
  "rfast {\n    variant: PHI\n    step_size: 0.05\n    phi_min: 0.05\n    decay: 0.001\n  }";
inline const std::string c_edges_lines =
  "  c_edges { from: 3 to: 2 }\n  c_edges { from: 2 to: 1 }\n  c_edges { from: 1 to: 0 }\n";

// `check` refuses base_spec edited as `c` says, with a line starting with the
// expected prefix and naming c.path and c.reason.
template <class Check>
void expect_refused(const bad_case& c, Check check) {
  BOOST_TEST_CONTEXT("case: " << c.name) {
    const std::string text = edit(base_spec, c.edits);
    const std::string msg = refusal(check, text, c.overrides);
    BOOST_TEST_REQUIRE(!msg.empty());

    std::string prefix;
    switch (c.where) {
      case at::line:
      case at::parse_line: {
        const int line = line_of(text, c.line_snippet);
        BOOST_TEST_REQUIRE(line > 0);
        prefix = label + ":" + std::to_string(line) + ":";
        if (c.where == at::line)
          prefix += " " + c.path + ": ";
        break;
      }
      case at::absent:
        prefix = label + ": " + c.path + ": ";
        break;
      case at::set:
        prefix = "--set " + c.path;
        break;
    }
    bool found = false;
    for (const auto& l : split_lines(msg)) {
      if (l.rfind(prefix, 0) != 0)
        continue;
      if (c.where == at::parse_line) {  // "FILE:LINE:COL: reason"
        const auto rest = l.substr(prefix.size());
        if (rest.empty() || !std::isdigit(static_cast<unsigned char>(rest[0])))
          continue;
      }
      if (l.find(c.path) != std::string::npos && l.find(c.reason) != std::string::npos)
        found = true;
    }
    BOOST_TEST(found, "expected a line starting with '" << prefix << "' naming '" << c.path
                                                        << "' and '" << c.reason << "', got:\n"
                                                        << msg);
  }
}

}  // namespace spec_fixture
