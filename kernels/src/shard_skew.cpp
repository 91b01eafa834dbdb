// Equal-size heterogeneous splits by label: Dirichlet label skew and the pathological
// k-classes-per-node split. Every node gets N/n rows (± 1) and every row goes to exactly
// one node, so (1/n) Σ f_i is the centralized objective whatever the skew
// (docs/ALGORITHMS.md, "Shards").
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "atrain/kernels/dataset.hpp"
#include "shard_internal.hpp"

namespace atrain {
namespace {

using shard_detail::capacities;
using shard_detail::check_counts;
using shard_detail::rows_by_class;
using shard_detail::sort_all;

constexpr std::uint64_t skew_stream = 0x5348'4152'4445'5153ULL;  // "SHARDEQS"
constexpr std::uint64_t path_stream = 0x5348'4152'4450'4154ULL;  // "SHARDPAT"

/// Splits `total` into parts proportional to w (sum w = wsum > 0) that add up to total
/// exactly: floors, then one more to the largest remainders (lower index on ties).
void apportion(std::size_t total, const double* w, double wsum, std::size_t parts,
               std::size_t* out) {
  std::vector<double> frac(parts);
  std::size_t given = 0;
  for (std::size_t c = 0; c < parts; ++c) {
    const double q = static_cast<double>(total) * (w[c] / wsum);
    const double f = std::floor(q);
    out[c] = static_cast<std::size_t>(f);
    frac[c] = q - f;
    given += out[c];
  }
  std::vector<std::size_t> idx(parts);
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::size_t a, std::size_t b) { return frac[a] > frac[b]; });
  // Rounding can leave the floors one off either way; settle it on the remainders' order.
  for (std::size_t j = 0; given < total; j = (j + 1) % parts, ++given)
    ++out[idx[j]];
  for (std::size_t j = parts; given > total; --given) {
    do
      j = j == 0 ? parts - 1 : j - 1;
    while (out[idx[j]] == 0);
    --out[idx[j]];
  }
}

/// One node's class proportions ~ Dirichlet(alpha * C * pi_c), pi = the class frequencies:
/// Dirichlet(alpha) per class on balanced classes, and the global mix on average.
double draw_proportions(rng& gen, const std::vector<std::size_t>& supply, double alpha,
                        std::size_t samples, double* p) {
  const std::size_t classes = supply.size();
  double sum = 0;
  for (std::size_t c = 0; c < classes; ++c) {
    p[c] = supply[c] == 0
             ? 0.0
             : gen.gamma(alpha * static_cast<double>(classes) * static_cast<double>(supply[c]) /
                         static_cast<double>(samples));
    sum += p[c];
  }
  if (sum > 0 && std::isfinite(sum))
    return sum;
  // Every draw underflowed (tiny alpha): the whole node is one class, drawn by frequency.
  std::fill(p, p + classes, 0.0);
  auto pick = gen.below(samples);
  std::size_t c = 0;
  while (pick >= supply[c])
    pick -= supply[c++];
  p[c] = 1.0;
  return 1.0;
}

/// A class asked for more rows than it has: every node's ask of it scaled down to the
/// supply (largest remainders, exact integer arithmetic), so no ask is rounded up.
void scale_to_supply(std::vector<std::size_t>& got, std::size_t nodes, std::size_t classes,
                     std::size_t c, std::size_t supply) {
  unsigned __int128 demand = 0;
  for (std::size_t k = 0; k < nodes; ++k)
    demand += got[k * classes + c];
  if (demand <= supply)
    return;
  const auto d = static_cast<std::uint64_t>(demand);
  std::vector<std::pair<std::uint64_t, std::size_t>> rem;  // (remainder, node)
  std::size_t given = 0;
  for (std::size_t k = 0; k < nodes; ++k) {
    const auto prod = static_cast<unsigned __int128>(got[k * classes + c]) * supply;
    got[k * classes + c] = static_cast<std::size_t>(prod / d);
    given += got[k * classes + c];
    rem.emplace_back(static_cast<std::uint64_t>(prod % d), k);
  }
  std::stable_sort(rem.begin(), rem.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t j = 0; given < supply; ++j, ++given)
    ++got[rem[j].second * classes + c];
}

}  // namespace

shards shard_label_skew(const std::vector<std::int32_t>& labels, std::size_t classes,
                        std::size_t nodes, double alpha, std::uint64_t seed) {
  constexpr const char* what = "shard_label_skew";
  if (!(alpha > 0) || !std::isfinite(alpha))
    throw std::invalid_argument(std::string{what} + ": alpha must be finite and > 0");
  check_counts(what, labels.size(), nodes);
  if (classes == 0 || nodes > data_limits::max_split_cells / classes)
    throw std::invalid_argument(std::string{what} + ": nodes x classes = " + std::to_string(nodes) +
                                " x " + std::to_string(classes) + " is above the limit " +
                                std::to_string(data_limits::max_split_cells));
  auto by_class = rows_by_class(what, labels, classes);
  const std::size_t samples = labels.size();
  std::vector<std::size_t> supply(classes);
  for (std::size_t c = 0; c < classes; ++c)
    supply[c] = by_class[c].size();
  const auto cap = capacities(samples, nodes);

  // 1. Each node asks for its N/n rows in its own Dirichlet proportions.
  rng gen(derive_seed(seed, skew_stream));
  std::vector<double> p(nodes * classes);
  std::vector<std::size_t> got(nodes * classes);
  for (std::size_t k = 0; k < nodes; ++k) {
    const double sum = draw_proportions(gen, supply, alpha, samples, &p[k * classes]);
    apportion(cap[k], &p[k * classes], sum, classes, &got[k * classes]);
  }
  // 2. An over-asked class is shared out in proportion to the asks.
  std::vector<std::size_t> left(classes);
  for (std::size_t c = 0; c < classes; ++c) {
    scale_to_supply(got, nodes, classes, c, supply[c]);
    left[c] = supply[c];
    for (std::size_t k = 0; k < nodes; ++k)
      left[c] -= got[k * classes + c];
  }
  // 3. Nodes short of N/n, in a seeded order, fill up from the classes left over, the
  //    ones they prefer first: sizes stay equal and the skew is kept as far as it can be.
  std::vector<std::size_t> order(nodes);
  std::iota(order.begin(), order.end(), std::size_t{0});
  gen.shuffle(order.begin(), order.end());
  std::vector<std::size_t> pref(classes);
  for (const std::size_t k : order) {
    std::size_t have = 0;
    for (std::size_t c = 0; c < classes; ++c)
      have += got[k * classes + c];
    if (have == cap[k])
      continue;
    std::iota(pref.begin(), pref.end(), std::size_t{0});
    std::stable_sort(pref.begin(), pref.end(), [&](std::size_t a, std::size_t b) {
      return p[k * classes + a] > p[k * classes + b];
    });
    for (std::size_t j = 0; j < classes && have < cap[k]; ++j) {
      const std::size_t c = pref[j];
      const std::size_t take = std::min(left[c], cap[k] - have);
      got[k * classes + c] += take;
      left[c] -= take;
      have += take;
    }
  }
  // 4. Deal each class's shuffled rows out by the counts.
  shards out(nodes);
  for (std::size_t k = 0; k < nodes; ++k)
    out[k].reserve(cap[k]);
  for (std::size_t c = 0; c < classes; ++c) {
    auto& members = by_class[c];
    gen.shuffle(members.begin(), members.end());
    std::size_t pos = 0;
    for (std::size_t k = 0; k < nodes; ++k) {
      const std::size_t n = got[k * classes + c];
      out[k].insert(out[k].end(), members.begin() + static_cast<std::ptrdiff_t>(pos),
                    members.begin() + static_cast<std::ptrdiff_t>(pos + n));
      pos += n;
    }
  }
  sort_all(out);
  return out;
}

shards shard_pathological(const std::vector<std::int32_t>& labels, std::size_t classes,
                          std::size_t nodes, std::size_t k, std::uint64_t seed) {
  constexpr const char* what = "shard_pathological";
  check_counts(what, labels.size(), nodes);
  if (k == 0 || k > classes)
    throw std::invalid_argument(std::string{what} + ": classes per node must be in [1, " +
                                std::to_string(classes) + "] (got " + std::to_string(k) + ")");
  if (nodes > data_limits::max_split_cells / k)
    throw std::invalid_argument(
      std::string{what} + ": nodes x classes per node = " + std::to_string(nodes) + " x " +
      std::to_string(k) + " is above the limit " + std::to_string(data_limits::max_split_cells));
  auto by_class = rows_by_class(what, labels, classes);
  rng gen(derive_seed(seed, path_stream));
  // The rows sorted by class (shuffled within it), cut into n * k pieces laid out in a
  // seeded order; node j's k pieces add up to its N/n rows (McMahan et al. 2017).
  std::vector<std::uint32_t> sorted;
  sorted.reserve(labels.size());
  for (auto& members : by_class) {
    gen.shuffle(members.begin(), members.end());
    sorted.insert(sorted.end(), members.begin(), members.end());
  }
  const auto cap = capacities(labels.size(), nodes);
  std::vector<std::pair<std::size_t, std::size_t>> pieces;  // (node, rows)
  pieces.reserve(nodes * k);
  for (std::size_t j = 0; j < nodes; ++j)
    for (const std::size_t rows : capacities(cap[j], k))
      pieces.emplace_back(j, rows);
  gen.shuffle(pieces.begin(), pieces.end());
  shards out(nodes);
  std::size_t pos = 0;
  for (const auto& [node, rows] : pieces) {
    out[node].insert(out[node].end(), sorted.begin() + static_cast<std::ptrdiff_t>(pos),
                     sorted.begin() + static_cast<std::ptrdiff_t>(pos + rows));
    pos += rows;
  }
  sort_all(out);
  return out;
}

}  // namespace atrain
