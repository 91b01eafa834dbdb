// D-PSGD's spec block: algorithm.dpsgd.*.
#include "algorithms/dpsgd/dpsgd.hpp"
#include "atrain/actors/algorithm.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void dpsgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  c.schedule("dpsgd", a.dpsgd());
  c.straggler_policy("dpsgd", a.dpsgd().straggler_policy());
  if (!proto::Dpsgd::Order_IsValid(a.dpsgd().order()))
    c.bad("algorithm.dpsgd.order", "must be OVERLAP or SEND_AFTER_GRADIENT (got " +
                                     std::to_string(static_cast<int>(a.dpsgd().order())) + ")");
  // Joins switch every node's weights at one round, decided while no round
  // begins: built for WAIT's rounds, and not combined with a restart's.
  const auto& f = c.spec().faults();
  if (f.join_size() > 0 && a.dpsgd().straggler_policy() == proto::SKIP)
    c.bad("faults.join", "dpsgd takes joins with straggler_policy WAIT only (SKIP mixes "
                         "without waiting for the round a join is decided at)");
  if (f.join_size() > 0 && f.crash_size() > 0)
    c.bad("faults.crash", "dpsgd cannot combine crashes with joins yet (a restarted node "
                          "would not know who has joined)");
}

std::shared_ptr<const algorithm_config> dpsgd_parse_block(const proto::AlgorithmSpec& a) {
  const auto& b = a.dpsgd();
  auto c = config_with_steps<dpsgd_config>(b);
  c->stragglers = straggler_policy_of(b.straggler_policy());
  c->overlap = b.order() == proto::Dpsgd::OVERLAP;
  return c;
}

}  // namespace atrain
