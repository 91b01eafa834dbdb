// CNN (kernels/cnn.hpp): loss against a plain-loop double reference, every
// layer's gradient against central finite differences of that reference,
// batch norm's inference statistics, chunking, determinism, init, and the
// shape checks naming the layer.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "atrain/kernels/cnn.hpp"
#include "atrain/kernels/rng.hpp"

using namespace atrain;

namespace {

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

images random_images(std::size_t rows, const image_shape& s, std::size_t classes,
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

tensor make(std::size_t n, std::size_t c, std::size_t h, std::size_t w) {
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

std::vector<double> widen(const std::vector<float>& p) {
  return {p.begin(), p.end()};
}

/// The model's loss and gradient against the reference's loss and central
/// differences, on every coordinate.
void check_against_reference(const cnn_config& cfg, std::size_t rows, std::uint64_t seed) {
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
  for (std::size_t k = 0; k < p.size(); ++k) {
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
  std::size_t bad = 0;
  for (std::size_t k = 0; k < p.size(); ++k)
    if (std::abs(g[k] - fd[k]) > 1e-3 * gmax + 1e-3 * std::abs(fd[k]))
      ++bad;
  BOOST_TEST(bad == 0u, m->name() << ": " << bad << " of " << p.size()
                                  << " coordinates differ from finite differences");
}

cnn_layer conv(std::size_t out, std::size_t kh, std::size_t kw, std::size_t stride,
               std::size_t pad) {
  return {K::conv, out, kh, kw, stride, pad};
}
cnn_layer pool(K k, std::size_t side, std::size_t stride, std::size_t pad = 0) {
  return {k, 0, side, side, stride, pad};
}
cnn_layer plain(K k, std::size_t out = 0) {
  return {k, out, 0, 0, 1, 0};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cnn)

BOOST_AUTO_TEST_CASE(each_layer_matches_finite_differences) {
  const image_shape two{2, 7, 6};
  check_against_reference({two, {conv(3, 3, 2, 2, 1)}, 3, 0.0}, 5, 1);
  check_against_reference({two, {conv(3, 3, 3, 1, 1), plain(K::relu)}, 3, 0.01}, 7, 2);
  check_against_reference({two, {pool(K::max_pool, 2, 2)}, 3, 0.0}, 5, 3);
  check_against_reference({two, {pool(K::avg_pool, 3, 2, 1)}, 3, 0.0}, 5, 4);
  check_against_reference({two, {conv(4, 3, 3, 1, 0), plain(K::batch_norm)}, 3, 0.0}, 7, 5);
  check_against_reference({two, {plain(K::dense, 6), plain(K::relu)}, 3, 0.01}, 5, 6);
  check_against_reference({two, {plain(K::dense, 6), plain(K::batch_norm)}, 3, 0.0}, 6, 7);
}

BOOST_AUTO_TEST_CASE(whole_networks_match_finite_differences) {
  check_against_reference({{1, 12, 12},
                           {conv(4, 5, 3, 1, 2), plain(K::relu), pool(K::max_pool, 2, 2),
                            conv(5, 3, 3, 2, 1), plain(K::batch_norm), plain(K::relu),
                            pool(K::avg_pool, 2, 1), plain(K::dense, 8), plain(K::relu)},
                           4,
                           1e-3},
                          7, 11);
  check_against_reference(lenet5({1, 12, 12}, 3), 5, 12);
}

BOOST_AUTO_TEST_CASE(inference_uses_the_first_rows_statistics) {
  const cnn_config cfg{
    {1, 5, 5}, {conv(3, 3, 3, 1, 1), plain(K::batch_norm), plain(K::relu)}, 3, 0.0};
  auto m = make_cnn(cfg);
  const std::size_t rows = 4096 + 5;
  images d = random_images(rows, cfg.input, 3, 21);
  for (std::size_t i = 4096 * d.dim; i < d.x.size(); ++i)
    d.x[i] = 10.0f * d.x[i] + 3.0f;  // the rows after the first chunk look different
  std::vector<float> p(m->num_params());
  m->init_params(p.data(), 3);
  reference ref{cfg};
  const auto pd = widen(p);
  (void)ref.loss(d, 4096, pd);  // statistics of the first 4096 rows
  const stats first = ref.seen;
  reference inf{cfg, &first};
  const double want = inf.loss(d, rows, pd);
  const double got = m->loss(d.all(), p.data());
  BOOST_TEST(std::abs(got - want) <= 1e-4 * std::abs(want));
  // Training mode normalises with the whole batch's statistics instead.
  reference train{cfg};
  BOOST_TEST(std::abs(train.loss(d, rows, pd) - want) > 1e-3);
  // One row: its variance is 0, the output is beta, and all is finite.
  BOOST_TEST(std::isfinite(m->loss(d.slice(0, 1), p.data())));
  const double acc = m->accuracy(d.slice(0, 1), p.data());
  BOOST_TEST((acc == 0.0 || acc == 1.0));
}

BOOST_AUTO_TEST_CASE(gradient_batches_with_batch_norm_fit_one_chunk) {
  auto m = make_cnn({{1, 4, 4}, {plain(K::batch_norm)}, 2, 0.0});
  const images d = random_images(4097, {1, 4, 4}, 2, 5);
  std::vector<float> p(m->num_params()), g(m->num_params());
  BOOST_CHECK_THROW((void)m->loss_and_gradient(d.all(), p.data(), g.data()), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(large_batches_are_chunked_consistently) {
  const cnn_config cfg{{1, 4, 4}, {conv(2, 3, 3, 1, 1), plain(K::relu)}, 3, 1e-3};
  auto m = make_cnn(cfg);
  const images d = random_images(4096 + 300, cfg.input, 3, 8);
  std::vector<float> p(m->num_params()), g(m->num_params()), g1(m->num_params()),
    g2(m->num_params());
  m->init_params(p.data(), 4);
  reference ref{cfg};
  const double want = ref.loss(d, d.y.size(), widen(p));
  BOOST_TEST(std::abs(m->loss(d.all(), p.data()) - want) <= 1e-5 * want);
  // The gradient of the whole is the row-weighted mean of the parts'.
  (void)m->loss_and_gradient(d.all(), p.data(), g.data());
  (void)m->loss_and_gradient(d.slice(0, 4096), p.data(), g1.data());
  (void)m->loss_and_gradient(d.slice(4096, 300), p.data(), g2.data());
  double worst = 0, norm = 0;
  for (std::size_t k = 0; k < g.size(); ++k) {
    const double l2 = 1e-3 * p[k];  // counted once in each, so once in the mean too
    const double mean = (4096.0 * (g1[k] - l2) + 300.0 * (g2[k] - l2)) / 4396.0 + l2;
    worst = std::max(worst, std::abs(mean - g[k]));
    norm = std::max(norm, std::abs(double(g[k])));
  }
  BOOST_TEST(worst <= 1e-4 * norm);
}

BOOST_AUTO_TEST_CASE(repeats_and_clones_are_bit_identical) {
  auto m = make_cnn(vgg_small({1, 12, 12}, 4));
  auto c = m->clone();
  const images d = random_images(9, {1, 12, 12}, 4, 9);
  std::vector<float> p(m->num_params()), a(p.size()), b(p.size()), e(p.size());
  m->init_params(p.data(), 5);
  const double la = m->loss_and_gradient(d.all(), p.data(), a.data());
  const double lb = m->loss_and_gradient(d.all(), p.data(), b.data());
  const double le = c->loss_and_gradient(d.all(), p.data(), e.data());
  BOOST_TEST(la == lb);
  BOOST_TEST(la == le);
  BOOST_TEST((a == b && a == e));
}

BOOST_AUTO_TEST_CASE(init_is_he_uniform_with_plain_biases_and_norms) {
  const cnn_config cfg{{2, 6, 6}, {conv(3, 3, 3, 1, 0), plain(K::batch_norm)}, 4, 0.0};
  auto m = make_cnn(cfg);
  BOOST_TEST(m->num_params() == 3 * 2 * 9 + 3 + 6 + (4 * 3 * 16 + 4));
  BOOST_TEST(cnn_num_params(cfg) == m->num_params());
  std::vector<float> p(m->num_params()), q(m->num_params());
  m->init_params(p.data(), 42);
  m->init_params(q.data(), 42);
  BOOST_TEST((p == q));
  const double a = std::sqrt(6.0 / 18);
  for (std::size_t k = 0; k < 54; ++k)
    BOOST_TEST(std::abs(p[k]) <= a);
  for (std::size_t k = 54; k < 57; ++k)
    BOOST_TEST(p[k] == 0.0f);  // conv bias
  for (std::size_t k = 57; k < 60; ++k)
    BOOST_TEST(p[k] == 1.0f);  // gamma
  for (std::size_t k = 60; k < 63; ++k)
    BOOST_TEST(p[k] == 0.0f);  // beta
}

BOOST_AUTO_TEST_CASE(bad_configs_name_the_layer_and_field) {
  auto problem = [](cnn_config c, std::size_t max_params = std::size_t{1} << 30) {
    auto p = check_cnn(c, max_params, std::size_t{1} << 30);
    BOOST_TEST_REQUIRE(p.has_value());
    return *p;
  };
  const image_shape in{1, 4, 4};
  auto p = problem({in, {plain(K::relu), conv(2, 5, 5, 1, 0)}, 3, 0});
  BOOST_TEST(p.layer == 1u);
  BOOST_TEST(p.field == "kernel");
  BOOST_TEST(p.reason.find("5x5") != std::string::npos);
  p = problem({in, {conv(0, 3, 3, 1, 0)}, 3, 0});
  BOOST_TEST((p.layer == 0u && p.field == "out"));
  p = problem({in, {pool(K::max_pool, 2, 0)}, 3, 0});
  BOOST_TEST((p.layer == 0u && p.field == "stride"));
  p = problem({in, {conv(2, 3, 3, 1, 3)}, 3, 0});
  BOOST_TEST((p.layer == 0u && p.field == "pad"));
  p = problem({in, {plain(K::dense, 4), conv(2, 1, 1, 1, 0)}, 3, 0});
  BOOST_TEST((p.layer == 1u && p.field == "type"));
  p = problem(
    {in, {pool(K::max_pool, 2, 2), pool(K::max_pool, 2, 2), pool(K::max_pool, 2, 2)}, 3, 0});
  BOOST_TEST((p.layer == 2u && p.field == "kernel"));  // 1x1 left: the chain ends
  p = problem({{0, 4, 4}, {}, 3, 0});
  BOOST_TEST(p.field == "input");
  p = problem({in, {plain(K::dense, 100)}, 3, 0}, 1000);
  BOOST_TEST((p.layer == 0u && p.field == "out"));
  BOOST_CHECK_THROW((void)make_cnn({in, {conv(2, 5, 5, 1, 0)}, 3, 0}), std::invalid_argument);
  BOOST_CHECK_THROW((void)make_cnn({in, {}, 3, -1.0}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(presets_have_their_parameter_counts) {
  // LeNet-5: 156 + 2,416 + 48,120 + 10,164 + 850 (head).
  BOOST_TEST(cnn_num_params(lenet5({1, 28, 28}, 10)) == 61706u);
  // 320 + 64 + 18,496 + 128 + 73,856 + 256 + 147,584 (3x3x128 -> 128) + 1,290.
  BOOST_TEST(cnn_num_params(vgg_small({1, 28, 28}, 10)) == 241994u);
  // 784 in; 4,704 conv and relu; 1,176 pool; 1,600 conv and relu; 400 pool;
  // 120 twice, 84 twice, 10 logits.
  BOOST_TEST(cnn_activations_per_row(lenet5({1, 28, 28}, 10)) == 15386u);
}

BOOST_AUTO_TEST_CASE(sgd_learns_a_separable_image_problem) {
  const image_shape in{1, 8, 8};
  auto m = make_cnn({in, {conv(4, 3, 3, 1, 1), plain(K::relu), pool(K::max_pool, 2, 2)}, 2, 0.0});
  // Class 1: a bright left half; class 0: a bright right half; noise on top.
  rng g(3);
  images d;
  d.dim = in.size();
  for (std::size_t i = 0; i < 512; ++i) {
    const auto label = static_cast<std::int32_t>(g.below(2));
    d.y.push_back(label);
    for (std::size_t k = 0; k < 64; ++k) {
      const bool left = k % 8 < 4;
      d.x.push_back(static_cast<float>((left == (label == 1) ? 1.0 : 0.0) + 0.5 * g.normal()));
    }
  }
  std::vector<float> p(m->num_params()), grad(p.size());
  m->init_params(p.data(), 1);
  const double before = m->accuracy(d.all(), p.data());
  for (std::size_t step = 0; step < 200; ++step) {
    (void)m->loss_and_gradient(d.slice((step * 32) % 512, 32), p.data(), grad.data());
    for (std::size_t k = 0; k < p.size(); ++k)
      p[k] -= 0.1f * grad[k];
  }
  const double after = m->accuracy(d.all(), p.data());
  BOOST_TEST(after >= 0.95, "accuracy " << before << " -> " << after);
}

BOOST_AUTO_TEST_SUITE_END()
