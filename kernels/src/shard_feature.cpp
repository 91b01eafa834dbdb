// Feature skew: rows grouped by k-means clusters of their features, then dealt out in
// equal N/n-row shares along the cluster order (docs/ALGORITHMS.md, "Shards").
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "atrain/kernels/dataset.hpp"
#include "shard_internal.hpp"

namespace atrain {
namespace {

constexpr std::uint64_t kmeans_stream = 0x5348'4152'444b'4d4eULL;   // "SHARDKMN"
constexpr std::uint64_t feature_stream = 0x5348'4152'4446'4541ULL;  // "SHARDFEA"
// Lloyd's iterations run on at most this many rows (seeded sample), then every row is
// assigned once: the cost stays bounded on large sets.
constexpr std::size_t kmeans_fit_rows = 8192;
constexpr int kmeans_iterations = 50;

double dist2(const float* a, const double* c, std::size_t dim) {
  double s = 0;
  for (std::size_t j = 0; j < dim; ++j) {
    const double d = static_cast<double>(a[j]) - c[j];
    s += d * d;
  }
  return s;
}

/// The nearest center (lower index on ties) and its squared distance.
std::pair<std::uint32_t, double> nearest(const float* row, const std::vector<double>& centers,
                                         std::size_t k, std::size_t dim) {
  std::uint32_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < k; ++c) {
    const double d = dist2(row, &centers[c * dim], dim);
    if (d < best_d) {
      best_d = d;
      best = static_cast<std::uint32_t>(c);
    }
  }
  return {best, best_d};
}

/// k-means++ seeding on the fitting rows: each next center drawn with probability
/// proportional to the squared distance to the nearest one so far.
std::vector<double> seed_centers(const dataset& d, const std::vector<std::uint32_t>& fit,
                                 std::size_t k, rng& gen) {
  const std::size_t dim = d.dim;
  std::vector<double> centers(k * dim);
  auto set_center = [&](std::size_t c, std::uint32_t row) {
    std::copy(d.row(row), d.row(row) + dim, centers.begin() + static_cast<std::ptrdiff_t>(c * dim));
  };
  set_center(0, fit[gen.below(fit.size())]);
  std::vector<double> best(fit.size(), std::numeric_limits<double>::infinity());
  for (std::size_t c = 1; c < k; ++c) {
    double total = 0;
    for (std::size_t i = 0; i < fit.size(); ++i) {
      best[i] = std::min(best[i], dist2(d.row(fit[i]), &centers[(c - 1) * dim], dim));
      total += best[i];
    }
    std::size_t pick = gen.below(fit.size());  // all rows equal to the centers so far
    if (total > 0) {
      double u = gen.uniform() * total;
      for (pick = 0; pick + 1 < fit.size() && u >= best[pick]; ++pick)
        u -= best[pick];
    }
    set_center(c, fit[pick]);
  }
  return centers;
}

}  // namespace

std::vector<std::uint32_t> kmeans_clusters(const dataset& d, std::size_t k, std::uint64_t seed) {
  if (k == 0 || k > d.size())
    throw std::invalid_argument("kmeans_clusters: clusters must be in [1, " +
                                std::to_string(d.size()) + "] (got " + std::to_string(k) + ")");
  if (d.dim != 0 && k > data_limits::max_split_cells / d.dim)
    throw std::invalid_argument("kmeans_clusters: clusters x dimension = " + std::to_string(k) +
                                " x " + std::to_string(d.dim) + " is above the limit " +
                                std::to_string(data_limits::max_split_cells));
  rng gen(derive_seed(seed, kmeans_stream));
  std::vector<std::uint32_t> fit(d.size());
  std::iota(fit.begin(), fit.end(), std::uint32_t{0});
  if (fit.size() > std::max(kmeans_fit_rows, k)) {  // partial Fisher-Yates: a seeded sample
    const std::size_t m = std::max(kmeans_fit_rows, k);
    for (std::size_t i = 0; i < m; ++i)
      std::swap(fit[i], fit[i + gen.below(fit.size() - i)]);
    fit.resize(m);
  }
  const std::size_t dim = d.dim;
  auto centers = seed_centers(d, fit, k, gen);
  std::vector<std::uint32_t> assign(fit.size(), std::numeric_limits<std::uint32_t>::max());
  std::vector<double> sum(k * dim);
  std::vector<std::size_t> count(k);
  for (int it = 0; it < kmeans_iterations; ++it) {
    bool changed = false;
    for (std::size_t i = 0; i < fit.size(); ++i) {
      const auto c = nearest(d.row(fit[i]), centers, k, dim).first;
      changed = changed || c != assign[i];
      assign[i] = c;
    }
    if (!changed)
      break;
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(count.begin(), count.end(), std::size_t{0});
    for (std::size_t i = 0; i < fit.size(); ++i) {
      const float* row = d.row(fit[i]);
      ++count[assign[i]];
      for (std::size_t j = 0; j < dim; ++j)
        sum[assign[i] * dim + j] += row[j];
    }
    for (std::size_t c = 0; c < k; ++c)  // an empty cluster keeps its center
      if (count[c] > 0)
        for (std::size_t j = 0; j < dim; ++j)
          centers[c * dim + j] = sum[c * dim + j] / static_cast<double>(count[c]);
  }
  std::vector<std::uint32_t> out(d.size());
  for (std::size_t i = 0; i < d.size(); ++i)
    out[i] = nearest(d.row(i), centers, k, dim).first;
  return out;
}

shards shard_feature_skew(const dataset& d, std::size_t nodes, std::size_t clusters,
                          std::uint64_t seed) {
  shard_detail::check_counts("shard_feature_skew", d.size(), nodes);
  const auto cluster = kmeans_clusters(d, clusters, seed);
  // Rows in cluster order (shuffled within a cluster), cut into N/n-row runs: node j holds
  // one cluster, or the end of one and the start of the next.
  std::vector<std::vector<std::uint32_t>> members(clusters);
  for (std::size_t i = 0; i < d.size(); ++i)
    members[cluster[i]].push_back(static_cast<std::uint32_t>(i));
  rng gen(derive_seed(seed, feature_stream));
  std::vector<std::uint32_t> order;
  order.reserve(d.size());
  for (auto& m : members) {
    gen.shuffle(m.begin(), m.end());
    order.insert(order.end(), m.begin(), m.end());
  }
  shards out = shard_detail::cut(order, shard_detail::capacities(d.size(), nodes));
  shard_detail::sort_all(out);
  return out;
}

}  // namespace atrain
