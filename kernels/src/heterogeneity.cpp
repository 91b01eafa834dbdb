// Class histograms, zeta^2 and sigma^2 of a split (atrain/kernels/heterogeneity.hpp).
#include "atrain/kernels/heterogeneity.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace atrain {
namespace {

// Rows gathered per loss_and_gradient call: bounds the buffer whatever the shard size.
constexpr std::size_t chunk_rows = 1024;

/// The mean gradient over `rows`.
std::vector<double> mean_gradient(model& m, const dataset& d,
                                  const std::vector<std::uint32_t>& rows, const float* x) {
  std::vector<double> g;
  (void)mean_loss_and_gradient(m, d, rows, x, g);
  return g;
}

double gap2(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t j = 0; j < a.size(); ++j)
    s += (a[j] - b[j]) * (a[j] - b[j]);
  return s;
}

/// E|g - grad f_i|^2 for a b-row minibatch drawn without replacement from the shard.
double minibatch_noise(model& m, const dataset& d, const std::vector<std::uint32_t>& rows,
                       const float* x, const std::vector<double>& mean, std::size_t batch,
                       std::size_t noise_rows) {
  const std::size_t rows_n = rows.size();
  if (batch >= rows_n)
    return 0.0;
  // The per-row variance from every row, or from noise_rows evenly spaced ones.
  const std::size_t used = noise_rows == 0 ? rows_n : std::min(noise_rows, rows_n);
  std::vector<float> grad(m.num_params());
  double var = 0;
  for (std::size_t r = 0; r < used; ++r) {
    const std::uint32_t i = rows[r * rows_n / used];
    (void)m.loss_and_gradient({d.row(i), &d.labels[i], 1, d.dim}, x, grad.data());
    double s = 0;
    for (std::size_t j = 0; j < grad.size(); ++j)
      s += (grad[j] - mean[j]) * (grad[j] - mean[j]);
    var += s / static_cast<double>(used);
  }
  const auto m_rows = static_cast<double>(rows_n);
  const auto b = static_cast<double>(batch);
  return var / b * (m_rows - b) / (m_rows - 1);
}

/// At most k rows of `rows`, evenly spaced (all of them when k is 0 or enough).
std::vector<std::uint32_t> spaced(const std::vector<std::uint32_t>& rows, std::size_t k) {
  if (k == 0 || rows.size() <= k)
    return rows;
  std::vector<std::uint32_t> out(k);
  for (std::size_t r = 0; r < k; ++r)
    out[r] = rows[r * rows.size() / k];
  return out;
}

/// grad F as the shard-size-weighted mean of the shards' (sampled) gradients: equal to
/// the gradient over every row when the shards cover d and nothing is sampled.
std::vector<double> weighted_gradient(model& m, const dataset& d, const shards& s, const float* x,
                                      std::size_t zeta_rows) {
  std::size_t total = 0;
  for (const auto& rows : s)
    total += rows.size();
  std::vector<double> full(m.num_params(), 0.0);
  for (const auto& rows : s) {
    const auto g = mean_gradient(m, d, spaced(rows, zeta_rows), x);
    const double w = static_cast<double>(rows.size()) / static_cast<double>(total);
    for (std::size_t j = 0; j < full.size(); ++j)
      full[j] += w * g[j];
  }
  return full;
}

}  // namespace

double mean_loss_and_gradient(model& m, const dataset& d, const std::vector<std::uint32_t>& rows,
                              const float* x, std::vector<double>& grad) {
  const std::size_t p = m.num_params();
  grad.assign(p, 0.0);
  double loss = 0;
  std::vector<float> g(p), xs;
  std::vector<std::int32_t> ys;
  for (std::size_t at = 0; at < rows.size(); at += chunk_rows) {
    const std::size_t n = std::min(chunk_rows, rows.size() - at);
    xs.resize(n * d.dim);
    ys.resize(n);
    for (std::size_t r = 0; r < n; ++r) {
      const std::uint32_t i = rows[at + r];
      std::copy(d.row(i), d.row(i) + d.dim, xs.begin() + static_cast<std::ptrdiff_t>(r * d.dim));
      ys[r] = d.labels[i];
    }
    const double w = static_cast<double>(n) / static_cast<double>(rows.size());
    loss += w * m.loss_and_gradient({xs.data(), ys.data(), n, d.dim}, x, g.data());
    for (std::size_t j = 0; j < p; ++j)
      grad[j] += w * g[j];
  }
  return loss;
}

std::vector<std::vector<std::uint64_t>> class_histograms(const dataset& d, const shards& s) {
  std::vector<std::vector<std::uint64_t>> hist(s.size(), std::vector<std::uint64_t>(d.classes));
  for (std::size_t k = 0; k < s.size(); ++k)
    for (const std::uint32_t i : s[k]) {
      if (i >= d.size())
        throw std::invalid_argument("class_histograms: row " + std::to_string(i) + " of shard " +
                                    std::to_string(k) + " beyond the data");
      ++hist[k][static_cast<std::size_t>(d.labels[i])];
    }
  return hist;
}

heterogeneity measure_heterogeneity(model& m, const dataset& d, const shards& s, const float* x,
                                    std::size_t batch, std::size_t noise_rows,
                                    std::size_t zeta_rows) {
  heterogeneity out;
  if (s.empty())
    return out;
  for (std::size_t k = 0; k < s.size(); ++k)
    if (s[k].empty())
      throw std::invalid_argument("measure_heterogeneity: shard " + std::to_string(k) +
                                  " is empty");
  std::vector<double> full;
  if (zeta_rows == 0) {
    std::vector<std::uint32_t> all(d.size());
    std::iota(all.begin(), all.end(), std::uint32_t{0});
    full = mean_gradient(m, d, all, x);
  } else {
    full = weighted_gradient(m, d, s, x, zeta_rows);
  }
  for (std::size_t k = 0; k < s.size(); ++k) {
    const auto local = mean_gradient(m, d, spaced(s[k], zeta_rows), x);
    out.node_zeta2.push_back(gap2(local, full));
    out.zeta2 += out.node_zeta2.back() / static_cast<double>(s.size());
    if (batch > 0) {
      out.node_sigma2.push_back(minibatch_noise(m, d, s[k], x, local, batch, noise_rows));
      out.sigma2 += out.node_sigma2.back() / static_cast<double>(s.size());
    }
  }
  return out;
}

}  // namespace atrain
