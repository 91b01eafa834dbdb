// Centralized SGD's spec block: algorithm.centralized.*.
#include "algorithms/centralized/centralized.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void centralized_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("centralized", a.centralized());
}

std::shared_ptr<const algorithm_config> centralized_parse_block(const proto::AlgorithmSpec& a) {
  return config_with_steps<centralized_config>(a.centralized());
}

}  // namespace atrain
