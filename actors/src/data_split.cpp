// The report's description of a run's data split (proto DataSplit): sizes, class
// histograms and the gradient heterogeneity at x0 (docs/ALGORITHMS.md, "Shards").
#include "atrain/actors/run_plan.hpp"

#include "atrain/kernels/optimum.hpp"

namespace atrain {
namespace {

// Class histograms beyond this many cells would swamp report.json.
constexpr std::uint64_t max_histogram_cells = 65536;
// sigma^2's per-row variance from at most this many rows per shard: single-row gradients
// of an MLP cost ~1 ms each (all rows of a9a's shards at 16 nodes).
constexpr std::size_t noise_rows = 2048;

}  // namespace

proto::DataSplit describe_split(const run_plan& plan, bool minibatch_noise) {
  proto::DataSplit out;
  out.set_policy(
    proto::ShardSpec::Policy_Name(plan.spec.shard().policy() == proto::ShardSpec::POLICY_UNSPECIFIED
                                    ? proto::ShardSpec::IID
                                    : plan.spec.shard().policy()));
  for (const auto& s : plan.shard)
    out.add_shard_rows(s.size());
  const auto& train = *plan.train;
  if (plan.nodes() * train.classes <= max_histogram_cells) {
    for (const auto& h : class_histograms(train, plan.shard))
      out.add_class_histogram()->mutable_rows()->Add(h.begin(), h.end());
  } else {
    out.set_histograms_omitted(true);
  }
  auto m = plan.prototype->clone();
  const std::size_t batch = minibatch_noise ? plan.batch_size : 0;
  const auto h = measure_heterogeneity(*m, train, plan.shard, plan.x0.data(), batch, noise_rows,
                                       plan.zeta2_rows);
  out.set_zeta2_rows_per_shard(static_cast<std::uint32_t>(plan.zeta2_rows));
  out.set_zeta2_x0(h.zeta2);
  if (minibatch_noise)
    out.set_sigma2_x0(h.sigma2);
  return out;
}

bool add_optimum_heterogeneity(const run_plan& plan, proto::DataSplit& split) {
  const auto& m = plan.spec.model();
  if (!m.has_logistic_regression() && !(m.has_mlp() && m.mlp().hidden_size() == 0))
    return false;
  auto model = plan.prototype->clone();
  const auto best = minimize_full_loss(*model, *plan.train, plan.x0);
  split.set_optimum_loss(best.loss);
  split.set_optimum_gradient_norm(best.gradient_norm);
  split.set_zeta2_optimum(
    measure_heterogeneity(*model, *plan.train, plan.shard, best.x.data(), 0).zeta2);
  return true;
}

}  // namespace atrain
