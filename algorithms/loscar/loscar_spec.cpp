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

}  // namespace atrain
