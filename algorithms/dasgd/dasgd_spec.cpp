// DASGD's spec block: algorithm.dasgd.*.
#include <algorithm>

#include "algorithms/dasgd/dasgd.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void dasgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("dasgd", a.dasgd());
}

std::shared_ptr<const algorithm_config> dasgd_parse_block(const proto::AlgorithmSpec& a) {
  const auto& b = a.dasgd();
  auto c = config_with_steps<dasgd_config>(b);
  c->broadcast_every = std::max<std::uint32_t>(1, b.broadcast_every());
  c->coalesce = b.coalesce();
  return c;
}

}  // namespace atrain
