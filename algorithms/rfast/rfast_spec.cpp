// R-FAST's spec block: algorithm.rfast.*.
#include <cmath>

#include "algorithms/rfast/rfast.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void rfast_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  const auto& r = a.rfast();
  using V = proto::RFast;
  if (r.variant() != V::PHI && r.variant() != V::PLAIN)
    c.bad("algorithm.rfast.variant",
          "must be PHI or PLAIN: the step-size scaling must be explicit (PHI descends along "
          "z / max(phi, phi_min) with an SGD-scale step; PLAIN descends along z and needs "
          "about (out_C + 1) times the SGD step on regular graphs, about 1/(4n) on trees)");
  c.schedule("rfast", r);
  if (r.has_phi_min() && std::isfinite(r.phi_min()) && !(r.phi_min() > 0 && r.phi_min() <= 1))
    c.bad("algorithm.rfast.phi_min",
          "must be in (0, 1] (got " + spec_checker::num(r.phi_min()) + ")");
}

std::shared_ptr<const algorithm_config> rfast_parse_block(const proto::AlgorithmSpec& a) {
  const auto& b = a.rfast();
  auto c = config_with_steps<rfast_config>(b);
  c->phi_scaled = b.variant() == proto::RFast::PHI;
  if (b.has_phi_min())
    c->phi_min = b.phi_min();
  if (b.has_stale_model_wakes())
    c->stale_model_wakes = b.stale_model_wakes();
  c->reroot = !b.has_reroot() || b.reroot();
  return c;
}

}  // namespace atrain
