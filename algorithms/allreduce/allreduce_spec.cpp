// All-reduce SGD's spec block: algorithm.allreduce.*.
#include "algorithms/allreduce/allreduce.hpp"
#include "algorithms/ring/ring.hpp"
#include "atrain/actors/algorithm.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void allreduce_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  ring_check_codec(c);
  c.schedule("allreduce", a.allreduce());
  c.straggler_policy("allreduce", a.allreduce().straggler_policy());
}

std::shared_ptr<const algorithm_config> allreduce_parse_block(const proto::AlgorithmSpec& a) {
  const auto& b = a.allreduce();
  auto c = config_with_steps<allreduce_config>(b);
  c->stragglers = straggler_policy_of(b.straggler_policy());
  return c;
}

}  // namespace atrain
