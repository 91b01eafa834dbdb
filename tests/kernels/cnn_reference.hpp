#pragma once
// The CNN tests' reference (cnn_test.cpp, cnn_formats_test.cpp): a plain-loop
// double-precision network on row-major (n, c, h, w) tensors, and the check of
// a model's loss and gradient against it and its central differences.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "atrain/kernels/cnn.hpp"
#include "atrain/kernels/rng.hpp"

namespace cnn_ref {

using namespace atrain;
using K = cnn_layer::kind;

struct images {
  std::size_t dim = 0;
  std::vector<float> x;
  std::vector<std::int32_t> y;
  [[nodiscard]] batch_view all() const { return {x.data(), y.data(), y.size(), dim}; }
  [[nodiscard]] batch_view slice(std::size_t from, std::size_t n) const {
    return {x.data() + from * dim, y.data() + from, n, dim};
  }
};

inline images random_images(std::size_t rows, const image_shape& s, std::size_t classes,
                            std::uint64_t seed) {
  rng g(seed);
  images d;
  d.dim = s.size();
  d.x.resize(rows * d.dim);
  for (auto& v : d.x)
    v = static_cast<float>(g.normal());
  for (std::size_t i = 0; i < rows; ++i)
    d.y.push_back(static_cast<std::int32_t>(g.below(classes)));
  return d;
}

// ---- the reference: one row-major (n, c, h, w) tensor in double ----------
struct tensor {
  std::size_t n = 0, c = 0, h = 1, w = 1;
  std::vector<double> v;
  double& at(std::size_t i, std::size_t ch, std::size_t y, std::size_t x) {
    return v[((i * c + ch) * h + y) * w + x];
  }
  [[nodiscard]] std::size_t per_row() const { return c * h * w; }
};

inline tensor make(std::size_t n, std::size_t c, std::size_t h, std::size_t w) {
  return {n, c, h, w, std::vector<double>(n * c * h * w, 0.0)};
}

using stats = std::vector<std::pair<std::vector<double>, std::vector<double>>>;  // mean, var per BN

struct reference {
  explicit reference(cnn_config c, const stats* f = nullptr) : cfg(std::move(c)), fixed(f) {}
  cnn_config cfg;
  const stats* fixed;  // inference: these statistics per BN layer, in order
  stats seen;          // training: the batch's, per BN layer

  double loss(const images& d, std::size_t rows, const std::vector<double>& p) {
    tensor t = make(rows, cfg.input.channels, cfg.input.height, cfg.input.width);
    for (std::size_t i = 0; i < t.v.size(); ++i)
      t.v[i] = d.x[i];
    std::size_t off = 0, bn = 0;
    double reg = 0;
    seen.clear();
    auto layers = cfg.layers;
    layers.push_back({K::dense, cfg.classes, 0, 0, 1, 0});
    for (const auto& l : layers) {
      switch (l.type) {
        case K::conv:
          t = conv(t, l, p, off, reg);
          break;
        case K::dense:
          t = dense(t, l, p, off, reg);
          break;
        case K::relu:
          for (auto& v : t.v)
            v = std::max(v, 0.0);
          break;
        case K::max_pool:
        case K::avg_pool:
          t = pool(t, l);
          break;
        case K::batch_norm:
          t = norm(t, p, off, bn++);
          break;
      }
    }
    double s = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      const double* z = &t.v[i * t.c];
      const double m = *std::max_element(z, z + t.c);
      double e = 0;
      for (std::size_t j = 0; j < t.c; ++j)
        e += std::exp(z[j] - m);
      s += m + std::log(e) - z[d.y[i]];
    }
    return s / static_cast<double>(rows) + 0.5 * cfg.l2 * reg;
  }

  static tensor conv(tensor& in, const cnn_layer& l, const std::vector<double>& p, std::size_t& off,
                     double& reg) {
    const std::size_t oh = (in.h + 2 * l.pad - l.kernel_h) / l.stride + 1;
    const std::size_t ow = (in.w + 2 * l.pad - l.kernel_w) / l.stride + 1;
    tensor out = make(in.n, l.out, oh, ow);
    const std::size_t wsize = l.out * in.c * l.kernel_h * l.kernel_w;
    for (std::size_t k = 0; k < wsize; ++k)
      reg += p[off + k] * p[off + k];
    for (std::size_t i = 0; i < in.n; ++i)
      for (std::size_t o = 0; o < l.out; ++o)
        for (std::size_t y = 0; y < oh; ++y)
          for (std::size_t x = 0; x < ow; ++x) {
            double s = p[off + wsize + o];
            for (std::size_t c = 0; c < in.c; ++c)
              for (std::size_t a = 0; a < l.kernel_h; ++a)
                for (std::size_t b = 0; b < l.kernel_w; ++b) {
                  const auto yy = static_cast<long>(y * l.stride + a) - static_cast<long>(l.pad);
                  const auto xx = static_cast<long>(x * l.stride + b) - static_cast<long>(l.pad);
                  if (yy < 0 || xx < 0 || yy >= long(in.h) || xx >= long(in.w))
                    continue;
                  s += in.at(i, c, yy, xx) *
                       p[off + ((o * in.c + c) * l.kernel_h + a) * l.kernel_w + b];
                }
            out.at(i, o, y, x) = s;
          }
    off += wsize + l.out;
    return out;
  }

  static tensor dense(tensor& in, const cnn_layer& l, const std::vector<double>& p,
                      std::size_t& off, double& reg) {
    const std::size_t m = in.per_row();
    tensor out = make(in.n, l.out, 1, 1);
    for (std::size_t k = 0; k < l.out * m; ++k)
      reg += p[off + k] * p[off + k];
    for (std::size_t i = 0; i < in.n; ++i)
      for (std::size_t o = 0; o < l.out; ++o) {
        double s = p[off + l.out * m + o];
        for (std::size_t k = 0; k < m; ++k)
          s += in.v[i * m + k] * p[off + o * m + k];
        out.v[i * l.out + o] = s;
      }
    off += l.out * m + l.out;
    return out;
  }

  static tensor pool(tensor& in, const cnn_layer& l) {
    const std::size_t oh = (in.h + 2 * l.pad - l.kernel_h) / l.stride + 1;
    const std::size_t ow = (in.w + 2 * l.pad - l.kernel_w) / l.stride + 1;
    tensor out = make(in.n, in.c, oh, ow);
    for (std::size_t i = 0; i < in.n; ++i)
      for (std::size_t c = 0; c < in.c; ++c)
        for (std::size_t y = 0; y < oh; ++y)
          for (std::size_t x = 0; x < ow; ++x) {
            double best = -std::numeric_limits<double>::infinity(), sum = 0;
            std::size_t count = 0;
            for (std::size_t a = 0; a < l.kernel_h; ++a)
              for (std::size_t b = 0; b < l.kernel_w; ++b) {
                const auto yy = static_cast<long>(y * l.stride + a) - static_cast<long>(l.pad);
                const auto xx = static_cast<long>(x * l.stride + b) - static_cast<long>(l.pad);
                if (yy < 0 || xx < 0 || yy >= long(in.h) || xx >= long(in.w))
                  continue;
                best = std::max(best, in.at(i, c, yy, xx));
                sum += in.at(i, c, yy, xx);
                ++count;
              }
            out.at(i, c, y, x) = l.type == K::max_pool ? best : sum / double(count);
          }
    return out;
  }

  tensor norm(tensor& in, const std::vector<double>& p, std::size_t& off, std::size_t which) {
    const std::size_t hw = in.h * in.w, cnt = in.n * hw;
    std::vector<double> mean(in.c, 0.0), var(in.c, 0.0);
    for (std::size_t c = 0; c < in.c; ++c) {
      for (std::size_t i = 0; i < in.n; ++i)
        for (std::size_t k = 0; k < hw; ++k)
          mean[c] += in.v[(i * in.c + c) * hw + k];
      mean[c] /= double(cnt);
      for (std::size_t i = 0; i < in.n; ++i)
        for (std::size_t k = 0; k < hw; ++k) {
          const double e = in.v[(i * in.c + c) * hw + k] - mean[c];
          var[c] += e * e;
        }
      var[c] /= double(cnt);
    }
    seen.emplace_back(mean, var);
    if (fixed != nullptr) {
      mean = (*fixed)[which].first;
      var = (*fixed)[which].second;
    }
    tensor out = in;
    for (std::size_t i = 0; i < in.n; ++i)
      for (std::size_t c = 0; c < in.c; ++c)
        for (std::size_t k = 0; k < hw; ++k) {
          double& v = out.v[(i * in.c + c) * hw + k];
          v = p[off + c] * (v - mean[c]) / std::sqrt(var[c] + 1e-5) + p[off + in.c + c];
        }
    off += 2 * in.c;
    return out;
  }
};

inline std::vector<double> widen(const std::vector<float>& p) {
  return {p.begin(), p.end()};
}

/// The model's loss and gradient against the reference's loss and central
/// differences, on every coordinate (or on every step-th one, at most
/// max_coords, when the net is too large to difference whole).
inline void check_against_reference(const cnn_config& cfg, std::size_t rows, std::uint64_t seed,
                                    std::size_t max_coords = std::size_t(-1)) {
  auto m = make_cnn(cfg);
  const images d = random_images(rows, cfg.input, cfg.classes, seed);
  std::vector<float> p(m->num_params()), g(m->num_params());
  m->init_params(p.data(), seed);
  rng jitter(seed + 7);
  for (auto& v : p)  // non-zero biases, gamma away from 1
    v += static_cast<float>(0.1 * jitter.normal());
  const double loss = m->loss_and_gradient(d.all(), p.data(), g.data());
  reference ref{cfg};
  std::vector<double> pd = widen(p);
  const double want = ref.loss(d, rows, pd);
  BOOST_TEST(std::abs(loss - want) <= 1e-5 * std::max(1.0, std::abs(want)));
  const double h = 1e-5;
  double gmax = 0;
  std::vector<double> fd(p.size());
  const std::size_t step = p.size() <= max_coords ? 1 : (p.size() + max_coords - 1) / max_coords;
  for (std::size_t k = seed % step; k < p.size(); k += step) {
    const double keep = pd[k];
    pd[k] = keep + h;
    const double up = ref.loss(d, rows, pd);
    pd[k] = keep - h;
    const double down = ref.loss(d, rows, pd);
    pd[k] = keep;
    fd[k] = (up - down) / (2 * h);
    gmax = std::max(gmax, std::abs(fd[k]));
  }
  BOOST_TEST_REQUIRE(gmax > 1e-3);  // something to compare
  std::size_t bad = 0, checked = 0;
  for (std::size_t k = seed % step; k < p.size(); k += step, ++checked)
    if (std::abs(g[k] - fd[k]) > 1e-3 * gmax + 1e-3 * std::abs(fd[k]))
      ++bad;
  BOOST_TEST(bad == 0u, m->name() << ": " << bad << " of " << checked
                                  << " coordinates differ from finite differences");
}

inline cnn_layer conv(std::size_t out, std::size_t kh, std::size_t kw, std::size_t stride,
                      std::size_t pad) {
  return {K::conv, out, kh, kw, stride, pad};
}
inline cnn_layer pool(K k, std::size_t side, std::size_t stride, std::size_t pad = 0) {
  return {k, 0, side, side, stride, pad};
}
inline cnn_layer plain(K k, std::size_t out = 0) {
  return {k, out, 0, 0, 1, 0};
}

}  // namespace cnn_ref
