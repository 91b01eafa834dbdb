// SGP's and OSGP's spec blocks: algorithm.sgp.*, algorithm.osgp.*.
#include <algorithm>

#include "algorithms/sgp/sgp.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void pushsum_check_joins(spec_checker& c) {
  const auto& f = c.spec().faults();
  if (f.join_size() > 0 && f.crash_size() > 0)
    c.bad("faults.crash", "sgp and osgp cannot combine crashes with joins yet (a restarted node "
                          "would not know who has joined)");
}

void sgp_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("sgp", a.sgp());
  pushsum_check_joins(c);
}

void osgp_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("osgp", a.osgp());
  pushsum_check_joins(c);
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
