// The parameter server's spec block: algorithm.async_ps.*.
#include "algorithms/async_ps/async_ps.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void async_ps_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("async_ps", a.async_ps());
  c.node_exists("algorithm.async_ps.server", a.async_ps().server());
}

std::shared_ptr<const algorithm_config> async_ps_parse_block(const proto::AlgorithmSpec& a) {
  const auto& b = a.async_ps();
  auto c = config_with_steps<async_ps_config>(b);
  c->server = b.server();
  return c;
}

}  // namespace atrain
