// SGP's and OSGP's spec blocks: algorithm.sgp.*, algorithm.osgp.*.
#include <algorithm>

#include "algorithms/sgp/sgp.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void sgp_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("sgp", a.sgp());
}

void osgp_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("osgp", a.osgp());
}

std::shared_ptr<const algorithm_config> sgp_parse_block(const proto::AlgorithmSpec& a) {
  return config_with_steps<push_sum_config>(a.sgp());
}

std::shared_ptr<const algorithm_config> osgp_parse_block(const proto::AlgorithmSpec& a) {
  auto c = config_with_steps<push_sum_config>(a.osgp());
  c->overlap = true;
  c->max_ahead = std::max<std::uint32_t>(1, a.osgp().max_staleness());
  return c;
}

}  // namespace atrain
