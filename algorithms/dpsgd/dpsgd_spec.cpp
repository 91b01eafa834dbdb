// D-PSGD's spec block: algorithm.dpsgd.*.
#include "algorithms/dpsgd/dpsgd.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void dpsgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("dpsgd", a.dpsgd());
  c.straggler_policy("dpsgd", a.dpsgd().straggler_policy());
}

}  // namespace atrain
