#pragma once
#include <optional>
#include <string>
#include <vector>

namespace atrain::cli {

struct parsed {
  std::string spec;
  std::vector<std::string> overrides;
  std::string out;
  std::string dot;
  std::optional<bool> progress;
  // multi-host runs (atrain run): see DESIGN.md "Across machines"
  std::vector<std::string> hosts;
  std::string secret_file;
  std::string tls_cert, tls_key, tls_ca;
  std::string resume;  // atrain run --resume FILE: a checkpoint of this spec
};

/// Parses SPEC and flags; prints what is wrong and returns false on bad input.
[[nodiscard]] bool parse(const std::vector<std::string>& args, parsed& p);

[[nodiscard]] int run(const parsed& p);
[[nodiscard]] int topology(const parsed& p);
[[nodiscard]] int check(const parsed& p);

} // namespace atrain::cli
