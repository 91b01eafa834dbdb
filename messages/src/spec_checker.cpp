// The checks an algorithm's spec block shares with the rest of validate().
#include "atrain/messages/spec_checker.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace atrain {

void spec_checker::bad(const std::string& path, const std::string& reason) {
  problems_.push_back(s_.where(path) + ": " + reason);
}

void spec_checker::positive(const std::string& path, double x) {
  if (std::isfinite(x) && !(x > 0))
    bad(path, "must be > 0 (got " + num(x) + ")");
}

void spec_checker::non_negative(const std::string& path, double x) {
  if (std::isfinite(x) && !(x >= 0))
    bad(path, "must be >= 0 (got " + num(x) + ")");
}

void spec_checker::period(const std::string& path, double x, const char* what) {
  if (!std::isfinite(x))
    return;
  if (!(x > 0))
    bad(path, "must be > 0 (got " + num(x) + ")");
  else if (x < limits::min_period_seconds)
    bad(path, "must be >= " + num(limits::min_period_seconds) + " " + what +
                ", the floor for periods and per-gradient times (got " + num(x) + ")");
}

void spec_checker::schedule(const std::string& block, double step_size, double decay) {
  positive("algorithm." + block + ".step_size", step_size);
  non_negative("algorithm." + block + ".decay", decay);
}

void spec_checker::straggler_policy(const std::string& block, proto::StragglerPolicy policy) {
  if (!proto::StragglerPolicy_IsValid(policy))
    bad("algorithm." + block + ".straggler_policy",
        "must be WAIT or SKIP (got " + std::to_string(static_cast<int>(policy)) + ")");
}

void spec_checker::node_exists(const std::string& path, std::uint32_t node) {
  if (spec().nodes() > 0 && node >= spec().nodes())
    bad(path, "node " + std::to_string(node) +
                " does not exist (nodes = " + std::to_string(spec().nodes()) + ")");
}

std::string spec_checker::num(double x) {
  if (std::isnan(x))
    return "nan";
  if (std::isinf(x))
    return x > 0 ? "inf" : "-inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (std::strtod(buf, nullptr) == x)
      break;
  }
  return buf;
}

}  // namespace atrain
