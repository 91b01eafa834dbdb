// AD-PSGD's spec block: algorithm.adpsgd.*.
#include "algorithms/adpsgd/adpsgd.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void adpsgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("adpsgd", a.adpsgd());
}

}  // namespace atrain
