// Splitting sample indices across nodes: IID and the unequal-size Dirichlet label skew
// (the equal-size splits are in shard_skew.cpp and shard_feature.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "atrain/kernels/dataset.hpp"
#include "shard_internal.hpp"

namespace atrain {

namespace shard_detail {

std::vector<std::vector<std::uint32_t>>
rows_by_class(const char* what, const std::vector<std::int32_t>& labels, std::size_t classes) {
  std::vector<std::vector<std::uint32_t>> by_class(classes);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::int32_t c = labels[i];
    if (c < 0 || static_cast<std::size_t>(c) >= classes) {
      throw std::invalid_argument(std::string{what} + ": label " + std::to_string(c) +
                                  " at index " + std::to_string(i) + " outside [0, " +
                                  std::to_string(classes) + ")");
    }
    by_class[static_cast<std::size_t>(c)].push_back(static_cast<std::uint32_t>(i));
  }
  return by_class;
}

shards cut(const std::vector<std::uint32_t>& order, const std::vector<std::size_t>& sizes) {
  shards out(sizes.size());
  std::size_t pos = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    out[k].assign(order.begin() + static_cast<std::ptrdiff_t>(pos),
                  order.begin() + static_cast<std::ptrdiff_t>(pos + sizes[k]));
    pos += sizes[k];
  }
  return out;
}

}  // namespace shard_detail

namespace {

using shard_detail::sort_all;

// Stream ids so that the same run seed gives unrelated draws here and elsewhere.
constexpr std::uint64_t iid_stream = 0x5348'4152'4449'4944ULL;   // "SHARDIID"
constexpr std::uint64_t skew_stream = 0x5348'4152'4453'4b57ULL;  // "SHARDSKW"

}  // namespace

shards shard_iid(std::size_t samples, std::size_t nodes, std::uint64_t seed) {
  if (nodes == 0)
    throw std::invalid_argument("shard_iid: nodes must be > 0");
  if (samples > UINT32_MAX)
    throw std::invalid_argument("shard_iid: too many samples for 32-bit indices");
  std::vector<std::uint32_t> perm(samples);
  std::iota(perm.begin(), perm.end(), std::uint32_t{0});
  rng gen(derive_seed(seed, iid_stream));
  gen.shuffle(perm.begin(), perm.end());

  shards out = shard_detail::cut(perm, shard_detail::capacities(samples, nodes));
  sort_all(out);
  return out;
}

shards shard_label_skew_unequal(const std::vector<std::int32_t>& labels, std::size_t classes,
                                std::size_t nodes, double alpha, std::uint64_t seed) {
  constexpr const char* what = "shard_label_skew_unequal";
  if (!(alpha > 0) || !std::isfinite(alpha))
    throw std::invalid_argument(std::string{what} + ": alpha must be finite and > 0");
  shard_detail::check_counts(what, labels.size(), nodes);
  auto by_class = shard_detail::rows_by_class(what, labels, classes);

  rng gen(derive_seed(seed, skew_stream));
  shards out(nodes);
  std::vector<double> p(nodes);
  for (auto& members : by_class) {
    // Proportions ~ Dirichlet(alpha): normalised Gamma(alpha, 1) draws. Drawn
    // for every class (even an empty one) so the stream does not depend on
    // which classes happen to be present.
    double sum = 0;
    for (auto& x : p)
      sum += (x = gen.gamma(alpha));
    if (!(sum > 0) || !std::isfinite(sum)) {  // all draws underflowed (tiny alpha)
      std::fill(p.begin(), p.end(), 0.0);
      p[gen.below(nodes)] = 1.0;
      sum = 1.0;
    }
    gen.shuffle(members.begin(), members.end());
    // Node k gets members [floor(n * P_{k-1}), floor(n * P_k)), P = cumulative share.
    const std::size_t n = members.size();
    double cum = 0;
    std::size_t begin = 0;
    for (std::size_t k = 0; k < nodes; ++k) {
      cum += p[k];
      std::size_t end =
        k + 1 == nodes ? n
                       : static_cast<std::size_t>(std::floor(static_cast<double>(n) * cum / sum));
      end = std::min(std::max(end, begin), n);
      out[k].insert(out[k].end(), members.begin() + static_cast<std::ptrdiff_t>(begin),
                    members.begin() + static_cast<std::ptrdiff_t>(end));
      begin = end;
    }
  }

  // Every node non-empty: move a random sample from the largest shard (lowest
  // node id on ties). samples >= nodes guarantees the largest has >= 2.
  for (std::size_t k = 0; k < nodes; ++k) {
    if (!out[k].empty())
      continue;
    std::size_t big = 0;
    for (std::size_t j = 1; j < nodes; ++j) {
      if (out[j].size() > out[big].size())
        big = j;
    }
    auto& from = out[big];
    const std::size_t pick = static_cast<std::size_t>(gen.below(from.size()));
    out[k].push_back(from[pick]);
    from[pick] = from.back();
    from.pop_back();
  }
  sort_all(out);
  return out;
}

}  // namespace atrain
