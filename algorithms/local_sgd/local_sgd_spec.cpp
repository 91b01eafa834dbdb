// Local SGD's spec block: algorithm.local_sgd.*.
#include <algorithm>

#include "algorithms/local_sgd/local_sgd.hpp"
#include "algorithms/ring/ring.hpp"
#include "atrain/actors/algorithm.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void local_sgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  ring_check_codec(c);
  const auto& l = a.local_sgd();
  c.schedule("local_sgd", l);
  if (l.local_steps() < 1)
    c.bad("algorithm.local_sgd.local_steps", "must be >= 1 (got 0)");
  c.straggler_policy("local_sgd", l.straggler_policy());
}

std::shared_ptr<const algorithm_config> local_sgd_parse_block(const proto::AlgorithmSpec& a) {
  const auto& b = a.local_sgd();
  auto c = config_with_steps<local_sgd_config>(b);
  c->local_steps = std::max<std::uint32_t>(1, b.local_steps());
  c->stragglers = straggler_policy_of(b.straggler_policy());
  return c;
}

}  // namespace atrain
