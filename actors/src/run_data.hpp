#pragma once
// The training data of a plan (run_plan.cpp): loaded, verified and split, whole on the
// driver, only its own nodes' shards on an `atrain node` host.
#include <memory>
#include <string>
#include <vector>

#include "atrain/kernels.hpp"
#include "atrain/messages/spec.hpp"

namespace atrain::plan_detail {

/// Throws spec_error "FILE: FIELD: why".
[[noreturn]] void refuse(const loaded_spec& ls, const std::string& field, const std::string& why);

/// The spec's test (or training) set, whole; its sha256 checked when the spec gives one.
[[nodiscard]] std::shared_ptr<const dataset> load(const loaded_spec& ls, bool test,
                                                  std::size_t dim);

struct train_data {
  std::shared_ptr<const dataset> train;  // whole, or the local shards node after node
  shards shard;                          // every node's rows of the whole set
  std::size_t rows = 0;                  // rows of the whole set
  std::vector<std::size_t> offset;       // per node: its first row in train (local only)
};

/// The training set split over n nodes. `local` null: the whole set. Otherwise only the
/// rows of the nodes in *local (ids >= n ignored) are kept, in that order; the IDX
/// loader then decodes only those rows (the other formats load whole and compact).
[[nodiscard]] train_data load_train(const loaded_spec& ls, std::size_t n,
                                    const std::vector<std::uint32_t>* local);

}  // namespace atrain::plan_detail
