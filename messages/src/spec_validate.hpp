#pragma once
/// The spec validator's checker, shared by spec_validate.cpp (the data,
/// model, algorithm and topology blocks) and spec_validate_run.cpp (costs,
/// links, faults, stop, evaluation and checkpoints). Private to messages/.
#include <google/protobuf/descriptor.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "atrain/messages/spec.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain::validation {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

using limits::max_dimension;
using limits::max_nodes;

inline constexpr std::uint64_t saturated = std::numeric_limits<std::uint64_t>::max();

/// Products and sums of figures, saturating (a saturated figure exceeds every limit).
[[nodiscard]] std::uint64_t mul(std::uint64_t a, std::uint64_t b);
[[nodiscard]] std::uint64_t add(std::uint64_t a, std::uint64_t b);
[[nodiscard]] std::string figure(std::uint64_t x);
/// "134217728 (512 MiB of floats)"
[[nodiscard]] std::string floats(std::uint64_t x);
[[nodiscard]] bool valid_utf8(const std::string& s);
/// "path[i]"
[[nodiscard]] std::string idx(const std::string& path, int i);
/// "A, B, ... or Z": the cases of AlgorithmSpec's oneof, in field order.
[[nodiscard]] std::string algorithm_choices();

class checker : public spec_checker {
public:
  checker(const loaded_spec& s, const spec_facts& facts) : spec_checker(s), facts_(facts) {}

  void unit_closed(const std::string& path, double x) {
    if (std::isfinite(x) && !(x >= 0 && x <= 1))
      bad(path, "must be in [0, 1] (got " + num(x) + ")");
  }

  // Every double / float anywhere in the spec must be finite; every string valid UTF-8
  // (proto3 cannot serialize anything else, e.g. into a checkpoint).
  void generic_checks(const pb::Message& m, const std::string& prefix);
  void file_exists(const std::string& path, const std::string& value);

  void run();
  void model_size(std::uint64_t dim, std::uint64_t classes, bool known);
  /// The bounds on parameters, a node's batch values and the run's values;
  /// `per_row` names what values_per_row counts, `layers` describes the model.
  void size_bounds(std::uint64_t params, std::uint64_t values_per_row, const char* per_row,
                   const std::string& layers, bool known);

private:
  void deploy();
  void dataset();
  void model();
  void cnn();  // spec_validate_cnn.cpp
  void algorithm();
  void topology(bool nodes_ok);
  void cost(bool nodes_ok);
  void link();
  void codec();
  void faults(bool nodes_ok);
  void joins(bool nodes_ok);
  void window(const std::string& path, double from, double to);
  void node_in_range(const std::string& path, std::uint32_t node, bool nodes_ok);
  void stop_and_eval();
  void checkpoint();

  const spec_facts& facts_;
};

}  // namespace atrain::validation
