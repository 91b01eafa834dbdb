// SGP's and OSGP's spec blocks: algorithm.sgp.*, algorithm.osgp.*.
#include "algorithms/sgp/sgp.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void sgp_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("sgp", a.sgp());
}

void osgp_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("osgp", a.osgp());
}

}  // namespace atrain
