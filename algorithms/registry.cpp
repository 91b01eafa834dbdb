/// Every algorithm of this engine, one line each. A descriptor is defined in
/// its algorithm's own file; atrain/actors/algorithm.hpp says what it holds.
#include <stdexcept>

#include "atrain/actors/algorithm.hpp"

// clang-format off
#define ATRAIN_EACH_ALGORITHM(X) \
  X(rfast)                       \
  X(centralized)                 \
  X(allreduce)                   \
  X(local_sgd)                   \
  X(dpsgd)                       \
  X(adpsgd)                      \
  X(dasgd)                       \
  X(loscar)                      \
  X(sgp)                         \
  X(osgp)                        \
  X(async_ps)                     \
  X(diloco)
// clang-format on

namespace atrain {

#define ATRAIN_DECLARE(name) algorithm_descriptor name##_algorithm();
ATRAIN_EACH_ALGORITHM(ATRAIN_DECLARE)
#undef ATRAIN_DECLARE

const std::vector<algorithm_descriptor>& algorithm_registry() {
#define ATRAIN_ENTRY(name) name##_algorithm(),
  static const std::vector<algorithm_descriptor> all{ATRAIN_EACH_ALGORITHM(ATRAIN_ENTRY)};
#undef ATRAIN_ENTRY
  return all;
}

const algorithm_descriptor* find_algorithm(proto::AlgorithmSpec::KindCase kind) {
  for (const auto& d : algorithm_registry())
    if (d.kind == kind)
      return &d;
  return nullptr;
}

const algorithm_descriptor& algorithm_of(const proto::ExperimentSpec& spec) {
  if (const auto* d = find_algorithm(spec.algorithm().kind_case()))
    return *d;
  throw std::invalid_argument("algorithm '" + algorithm_name_of(spec) +
                              "' is accepted by the spec but not implemented by this engine yet");
}

std::string algorithm_name_of(const proto::ExperimentSpec& spec) {
  const auto* d = find_algorithm(spec.algorithm().kind_case());
  if (d == nullptr)
    return "unknown";
  return d->label ? d->label(*d->parse(spec.algorithm())) : std::string{d->name};
}

}  // namespace atrain
