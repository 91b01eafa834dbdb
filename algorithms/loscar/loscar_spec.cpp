// LOSCAR's spec block: algorithm.loscar.*.
#include "algorithms/loscar/loscar.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

void loscar_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  const auto& l = a.loscar();
  c.schedule("loscar", l);
  if (!(l.sparsity() > 0 && l.sparsity() <= 1))
    c.bad("algorithm.loscar.sparsity",
          "must be in (0, 1]: the fraction of coordinates averaged per round (got " +
            spec_checker::num(l.sparsity()) + ")");
  if (!l.has_local_steps())
    c.period("algorithm.loscar.round_seconds", l.round_seconds());
  else if (l.local_steps() < 1)
    c.bad("algorithm.loscar.local_steps", "must be >= 1 (got 0)");
  if (!proto::Loscar::Merge_IsValid(l.merge()))
    c.bad("algorithm.loscar.merge", "unknown merge " + std::to_string(l.merge()));
  if (l.blocking() && l.has_overlap_steps() && l.overlap_steps() > 0)
    c.bad("algorithm.loscar.overlap_steps", "must be 0 (or unset) when blocking is set");
  c.node_exists("algorithm.loscar.aggregator", l.aggregator());
}

std::shared_ptr<const algorithm_config> loscar_parse_block(const proto::AlgorithmSpec& a) {
  const auto& b = a.loscar();
  auto c = config_with_steps<loscar_config>(b);
  c->sparsity = b.sparsity();
  c->round_seconds = b.round_seconds();
  if (b.has_local_steps())
    c->local_steps = b.local_steps();
  if (b.has_overlap_steps())
    c->overlap_steps = b.overlap_steps();
  c->blocking = b.blocking();
  c->merge = b.merge() == proto::Loscar::NAIVE ? loscar_merge_rule::naive
                                               : loscar_merge_rule::delay_corrected;
  c->aggregator = b.aggregator();
  return c;
}

}  // namespace atrain
