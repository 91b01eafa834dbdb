// What an algorithm's own check of its spec block is given (the descriptor's
// check_block, atrain/actors/algorithm.hpp): a place to report problems at a
// field path, collected with every other problem of validate() in the order
// found, and the checks the blocks share. validate() calls it through
// spec_facts::check_block, so messages/ never names an algorithm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "atrain/messages/spec.hpp"

namespace atrain {

class spec_checker {
public:
  explicit spec_checker(const loaded_spec& s) : s_(s) {}

  [[nodiscard]] const proto::ExperimentSpec& spec() const { return s_.spec; }

  /// "FILE:LINE: path: reason" (loaded_spec::where), after the problems found so far.
  void bad(const std::string& path, const std::string& reason);

  // Range checks skip non-finite doubles: validate() reports those once, as such.
  void positive(const std::string& path, double x);
  void non_negative(const std::string& path, double x);
  /// > 0 and at least limits::min_period_seconds (a tiny period is an endless
  /// stream of events); `what` is the unit in the message.
  void period(const std::string& path, double x, const char* what = "s");

  /// algorithm.BLOCK.step_size > 0 and algorithm.BLOCK.decay >= 0: every
  /// algorithm's step-size schedule.
  void schedule(const std::string& block, double step_size, double decay);
  template <class Block>
  void schedule(const std::string& block, const Block& b) {
    schedule(block, b.step_size(), b.decay());
  }
  /// algorithm.BLOCK.straggler_policy is WAIT or SKIP.
  void straggler_policy(const std::string& block, proto::StragglerPolicy policy);
  /// `node` is below spec().nodes() (unchecked while nodes is 0).
  void node_exists(const std::string& path, std::uint32_t node);

  /// Shortest decimal that reads back as x ("nan", "inf", "-inf" as such).
  [[nodiscard]] static std::string num(double x);

  [[nodiscard]] const std::vector<std::string>& problems() const { return problems_; }

protected:
  const loaded_spec& s_;

private:
  std::vector<std::string> problems_;
};

}  // namespace atrain
