// All-reduce SGD's spec block: algorithm.allreduce.*.
#include "algorithms/allreduce/allreduce.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void allreduce_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("allreduce", a.allreduce());
  c.straggler_policy("allreduce", a.allreduce().straggler_policy());
}

}  // namespace atrain
