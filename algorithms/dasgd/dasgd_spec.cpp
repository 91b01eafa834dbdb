// DASGD's spec block: algorithm.dasgd.*.
#include "algorithms/dasgd/dasgd.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void dasgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("dasgd", a.dasgd());
}

}  // namespace atrain
