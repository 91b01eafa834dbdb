// AD-PSGD's spec block: algorithm.adpsgd.*.
#include "algorithms/adpsgd/adpsgd.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void adpsgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("adpsgd", a.adpsgd());
}

std::shared_ptr<const algorithm_config> adpsgd_parse_block(const proto::AlgorithmSpec& a) {
  return config_with_steps<adpsgd_config>(a.adpsgd());
}

}  // namespace atrain
