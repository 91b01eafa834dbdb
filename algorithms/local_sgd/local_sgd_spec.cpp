// Local SGD's spec block: algorithm.local_sgd.*.
#include "algorithms/local_sgd/local_sgd.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void local_sgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  const auto& l = a.local_sgd();
  c.schedule("local_sgd", l);
  if (l.local_steps() < 1)
    c.bad("algorithm.local_sgd.local_steps", "must be >= 1 (got 0)");
  c.straggler_policy("local_sgd", l.straggler_policy());
}

}  // namespace atrain
