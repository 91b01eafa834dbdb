// Logistic regression and MLP: loss against plain double loops, gradient
// against central finite differences, accuracy, gradient descent, chunking.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "atrain/kernels/model.hpp"
#include "atrain/kernels/rng.hpp"

using namespace atrain;

namespace {

struct data {
  std::size_t dim = 0;
  std::vector<float> x;
  std::vector<std::int32_t> y;
  [[nodiscard]] std::size_t rows() const { return y.size(); }
  [[nodiscard]] batch_view all() const { return {x.data(), y.data(), rows(), dim}; }
  [[nodiscard]] batch_view slice(std::size_t from, std::size_t n) const {
    return {x.data() + from * dim, y.data() + from, n, dim};
  }
};

data gen_data(std::size_t rows, std::size_t dim, std::size_t classes, std::uint64_t seed) {
  rng g(seed);
  data d;
  d.dim = dim;
  d.x.resize(rows * dim);
  for (auto& v : d.x)
    v = static_cast<float>(g.normal());
  d.y.resize(rows);
  for (auto& v : d.y)
    v = static_cast<std::int32_t>(g.below(classes));
  return d;
}

// ---- independent plain-loop references, in double ----------------------

double softplus_ref(double t) {
  return t > 0 ? t + std::log1p(std::exp(-t)) : std::log1p(std::exp(t));
}

double lr_loss_ref(const data& d, const std::vector<double>& p, double l2) {
  double s = 0;
  for (std::size_t i = 0; i < d.rows(); ++i) {
    double z = p[d.dim];
    for (std::size_t j = 0; j < d.dim; ++j)
      z += p[j] * d.x[i * d.dim + j];
    const double sign = d.y[i] == 1 ? 1 : -1;
    s += softplus_ref(-sign * z);
  }
  double r = 0;
  for (double v : p)
    r += v * v;
  return s / static_cast<double>(d.rows()) + 0.5 * l2 * r;
}

double mlp_loss_ref(const std::vector<std::size_t>& widths, const data& d,
                    const std::vector<double>& p, double l2) {
  double total = 0;
  for (std::size_t i = 0; i < d.rows(); ++i) {
    std::vector<double> a(d.x.begin() + static_cast<std::ptrdiff_t>(i * d.dim),
                          d.x.begin() + static_cast<std::ptrdiff_t>((i + 1) * d.dim));
    std::size_t off = 0;
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      const std::size_t in = widths[l], out = widths[l + 1];
      std::vector<double> z(out);
      for (std::size_t o = 0; o < out; ++o) {
        double s = p[off + in * out + o];  // bias
        for (std::size_t k = 0; k < in; ++k)
          s += a[k] * p[off + k * out + o];
        z[o] = (l + 2 < widths.size()) ? std::max(s, 0.0) : s;
      }
      off += in * out + out;
      a = z;
    }
    double m = a[0];
    for (double v : a)
      m = std::max(m, v);
    double s = 0;
    for (double v : a)
      s += std::exp(v - m);
    total += m + std::log(s) - a[static_cast<std::size_t>(d.y[i])];
  }
  double r = 0;
  std::size_t off = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    for (std::size_t k = 0; k < widths[l] * widths[l + 1]; ++k)
      r += p[off + k] * p[off + k];
    off += widths[l] * widths[l + 1] + widths[l + 1];
  }
  return total / static_cast<double>(d.rows()) + 0.5 * l2 * r;
}

std::vector<double> to_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

/// Analytic gradient vs central differences of `ref` (double, h = 1e-5) on
/// coordinates `coords`. Relative bound 1e-3 (float gradient, double FD): a
/// wrong sign or factor 2 fails by orders of magnitude.
template <class Ref>
void check_gradient_double(const std::vector<float>& params, const std::vector<float>& grad,
                           const std::vector<std::size_t>& coords, Ref&& ref) {
  const double h = 1e-5;
  std::size_t significant = 0;
  for (auto c : coords) {
    auto p = to_double(params);
    p[c] += h;
    const double up = ref(p);
    p[c] -= 2 * h;
    const double down = ref(p);
    const double fd = (up - down) / (2 * h);
    const double err = std::abs(grad[c] - fd);
    BOOST_TEST_INFO("coordinate " << c << ": analytic " << grad[c] << ", finite difference " << fd);
    BOOST_TEST(err <= 1e-3 * std::abs(fd) + 2e-6);
    if (std::abs(fd) > 1e-3)
      ++significant;
  }
  BOOST_TEST(significant >= coords.size() / 2);  // the check is not vacuous
}

/// The same against the model's own loss (float inside, so a larger step and
/// a looser bound).
void check_gradient_model(model& m, const batch_view& b, const std::vector<float>& params,
                          const std::vector<float>& grad, const std::vector<std::size_t>& coords) {
  const float h = 1e-3f;
  for (auto c : coords) {
    auto p = params;
    p[c] = params[c] + h;
    const double up = m.loss(b, p.data());
    p[c] = params[c] - h;
    const double down = m.loss(b, p.data());
    const double fd = (up - down) / (static_cast<double>(params[c] + h) - (params[c] - h));
    BOOST_TEST_INFO("coordinate " << c << ": analytic " << grad[c] << ", finite difference " << fd);
    BOOST_TEST(std::abs(grad[c] - fd) <= 2e-2 * std::abs(fd) + 2e-4);
  }
}

std::vector<std::size_t> random_coords(std::size_t n, std::size_t count, std::uint64_t seed) {
  rng g(seed);
  std::vector<std::size_t> c;
  for (std::size_t i = 0; i < count; ++i)
    c.push_back(static_cast<std::size_t>(g.below(n)));
  return c;
}

std::vector<float> random_params(std::size_t n, double scale, std::uint64_t seed) {
  rng g(seed);
  std::vector<float> p(n);
  for (auto& v : p)
    v = static_cast<float>(scale * g.normal());
  return p;
}

/// Checks that the batch loss and gradient are the means of per-sub-batch ones
/// (sub-batches given by their sizes).
void check_split(model& m, const data& d, const std::vector<float>& params,
                 const std::vector<std::size_t>& sizes) {
  const std::size_t n = m.num_params();
  std::vector<float> g_all(n), g(n);
  const double loss_all = m.loss_and_gradient(d.all(), params.data(), g_all.data());
  double loss_mean = 0;
  std::vector<double> g_mean(n, 0.0);
  std::size_t from = 0;
  for (auto s : sizes) {
    const double w = static_cast<double>(s) / static_cast<double>(d.rows());
    loss_mean += w * m.loss_and_gradient(d.slice(from, s), params.data(), g.data());
    for (std::size_t k = 0; k < n; ++k)
      g_mean[k] += w * g[k];
    from += s;
  }
  BOOST_REQUIRE(from == d.rows());
  BOOST_TEST(loss_all == loss_mean, boost::test_tools::tolerance(1e-5));
  double max_err = 0, max_g = 0;
  for (std::size_t k = 0; k < n; ++k) {
    max_err = std::max(max_err, std::abs(g_all[k] - g_mean[k]));
    max_g = std::max(max_g, std::abs(g_mean[k]));
  }
  BOOST_TEST(max_err <= 1e-5 * max_g + 1e-7);
}

}  // namespace

// =========================================================================
BOOST_AUTO_TEST_SUITE(logistic_regression)

BOOST_AUTO_TEST_CASE(shape_name_and_zero_init) {
  auto m = make_logistic_regression(7, 0.1);
  BOOST_TEST(m->num_params() == 8u);
  BOOST_TEST(m->name() == "logistic_regression(7)");
  std::vector<float> p(8, 3.0f);
  m->init_params(p.data(), 42);
  for (float v : p)
    BOOST_TEST(v == 0.0f);
}

BOOST_AUTO_TEST_CASE(loss_matches_plain_loop) {
  const auto d = gen_data(37, 6, 2, 1);
  auto m = make_logistic_regression(6, 0.05);
  const auto p = random_params(7, 0.7, 2);
  std::vector<float> g(7);
  const double expect = lr_loss_ref(d, to_double(p), 0.05);
  BOOST_TEST(m->loss(d.all(), p.data()) == expect, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(m->loss_and_gradient(d.all(), p.data(), g.data()) == expect,
             boost::test_tools::tolerance(1e-5));
  // zero params: log 2, whatever the data
  const std::vector<float> zero(7, 0.0f);
  BOOST_TEST(m->loss(d.all(), zero.data()) == std::log(2.0), boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(gradient_matches_finite_differences) {
  const auto d = gen_data(25, 10, 2, 3);
  const double l2 = 0.1;
  auto m = make_logistic_regression(10, l2);
  const auto p = random_params(11, 0.5, 4);
  std::vector<float> g(11);
  (void)m->loss_and_gradient(d.all(), p.data(), g.data());
  auto coords = random_coords(11, 6, 5);
  coords.push_back(10);  // the bias
  check_gradient_double(p, g, coords,
                        [&](const std::vector<double>& q) { return lr_loss_ref(d, q, l2); });
  check_gradient_model(*m, d.all(), p, g, coords);
}

BOOST_AUTO_TEST_CASE(stable_for_large_margins) {
  // w.x + b = +-1000: softplus must neither overflow nor lose the margin.
  data d;
  d.dim = 1;
  d.x = {1.0f, 1.0f};
  d.y = {0, 1};
  auto m = make_logistic_regression(1, 0.0);
  const std::vector<float> p{1000.0f, 0.0f};
  std::vector<float> g(2);
  const double loss = m->loss_and_gradient(d.all(), p.data(), g.data());
  BOOST_TEST(loss == 500.0, boost::test_tools::tolerance(1e-9));  // (1000 + 0) / 2
  BOOST_TEST(g[0] == 0.5f, boost::test_tools::tolerance(1e-6f));  // only the wrong row counts
  BOOST_TEST(g[1] == 0.5f, boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(accuracy_on_handmade_batch) {
  data d;
  d.dim = 2;
  d.x = {1, 0, /**/ 0, 1, /**/ 0, 0, /**/ -1, 0};
  d.y = {1, 1, 1, 0};  // z = 1.5, -0.5, 0.5, -0.5 -> predictions 1, 0, 1, 0
  auto m = make_logistic_regression(2, 0.0);
  const std::vector<float> p{1.0f, -1.0f, 0.5f};
  BOOST_TEST(m->accuracy(d.all(), p.data()) == 0.75);
  BOOST_TEST(m->accuracy(d.slice(0, 1), p.data()) == 1.0);
  BOOST_TEST(m->accuracy(d.slice(1, 1), p.data()) == 0.0);
}

BOOST_AUTO_TEST_CASE(gradient_descent_separates) {
  // Two Gaussian clouds around +-(1.5, 1.5, 0, 0): linearly separable w.h.p.
  rng g(6);
  data d;
  d.dim = 4;
  for (int i = 0; i < 200; ++i) {
    const int y = i % 2;
    const double c = y ? 1.5 : -1.5;
    for (int j = 0; j < 4; ++j)
      d.x.push_back(static_cast<float>((j < 2 ? c : 0.0) + 0.5 * g.normal()));
    d.y.push_back(y);
  }
  auto m = make_logistic_regression(4, 1e-4);
  std::vector<float> p(5), grad(5);
  m->init_params(p.data(), 0);
  const double first = m->loss(d.all(), p.data());
  double prev = first;
  bool monotone = true;
  for (int step = 0; step < 300; ++step) {
    const double l = m->loss_and_gradient(d.all(), p.data(), grad.data());
    monotone = monotone && l <= prev + 1e-9;
    prev = l;
    for (std::size_t k = 0; k < p.size(); ++k)
      p[k] -= 0.5f * grad[k];
  }
  const double last = m->loss(d.all(), p.data());
  BOOST_TEST(first == std::log(2.0), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(monotone);
  BOOST_TEST(last < 0.05);
  BOOST_TEST(m->accuracy(d.all(), p.data()) == 1.0);
}

BOOST_AUTO_TEST_CASE(row_count_does_not_change_results) {
  const auto d = gen_data(10, 5, 2, 7);
  auto m = make_logistic_regression(5, 0.2);
  const auto p = random_params(6, 0.8, 8);
  check_split(*m, d, p, std::vector<std::size_t>(10, 1));  // 10 rows vs 10 single rows
  check_split(*m, d, p, {3, 7});
}

BOOST_AUTO_TEST_CASE(large_batch_is_chunked_consistently) {
  // More rows than one chunk (4096): loss vs plain loop, gradient vs sub-batches.
  const auto d = gen_data(4096 * 2 + 5, 5, 2, 9);
  auto m = make_logistic_regression(5, 0.01);
  const auto p = random_params(6, 0.5, 10);
  BOOST_TEST(m->loss(d.all(), p.data()) == lr_loss_ref(d, to_double(p), 0.01),
             boost::test_tools::tolerance(1e-5));
  check_split(*m, d, p, {1000, 3000, 4197});
  // Predictions counted over chunks too.
  std::size_t correct = 0;
  for (std::size_t i = 0; i < d.rows(); ++i) {
    double z = p[5];
    for (std::size_t j = 0; j < 5; ++j)
      z += static_cast<double>(p[j]) * d.x[i * 5 + j];
    correct += (z > 0 ? 1 : 0) == d.y[i];
  }
  BOOST_TEST(m->accuracy(d.all(), p.data()) ==
               static_cast<double>(correct) / static_cast<double>(d.rows()),
             boost::test_tools::tolerance(1e-3));
}

BOOST_AUTO_TEST_CASE(clone_is_independent) {
  const auto d = gen_data(12, 3, 2, 11);
  auto m = make_logistic_regression(3, 0.1);
  const auto p = random_params(4, 1.0, 12);
  std::vector<float> g1(4), g2(4);
  const double l1 = m->loss_and_gradient(d.all(), p.data(), g1.data());
  auto c = m->clone();
  m.reset();
  BOOST_TEST(c->name() == "logistic_regression(3)");
  BOOST_TEST(c->loss_and_gradient(d.all(), p.data(), g2.data()) == l1);
  BOOST_TEST(g1 == g2, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(rejects_bad_input) {
  auto m = make_logistic_regression(3, 0.0);
  std::vector<float> p(4), g(4);
  const auto d = gen_data(4, 3, 2, 13);
  auto wrong_dim = d.all();
  wrong_dim.dim = 2;
  BOOST_CHECK_THROW((void)m->loss(wrong_dim, p.data()), std::invalid_argument);
  BOOST_CHECK_THROW((void)m->loss(d.slice(0, 0), p.data()), std::invalid_argument);
  auto bad = d;
  bad.y[2] = 2;
  BOOST_CHECK_THROW((void)m->loss_and_gradient(bad.all(), p.data(), g.data()),
                    std::invalid_argument);
  BOOST_CHECK_THROW((void)make_logistic_regression(0, 0.0), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

// =========================================================================
BOOST_AUTO_TEST_SUITE(mlp)

BOOST_AUTO_TEST_CASE(shape_name_and_init) {
  auto m = make_mlp(10, {8, 6}, 3, 0.0);
  BOOST_TEST(m->num_params() == 10u * 8 + 8 + 8 * 6 + 6 + 6 * 3 + 3);
  BOOST_TEST(m->name() == "mlp(10-8-6-3)");
  std::vector<float> a(m->num_params()), b(m->num_params()), c(m->num_params());
  m->init_params(a.data(), 1);
  m->init_params(b.data(), 1);
  m->init_params(c.data(), 2);
  BOOST_TEST(a == b, boost::test_tools::per_element());
  BOOST_TEST(a != c);
  // Layout: W1 (80) b1 (8) W2 (48) b2 (6) W3 (18) b3 (3); He-uniform bound sqrt(6/in).
  const std::size_t w_off[] = {0, 88, 142}, w_len[] = {80, 48, 18}, in[] = {10, 8, 6},
                    out[] = {8, 6, 3};
  for (int l = 0; l < 3; ++l) {
    const double bound = std::sqrt(6.0 / static_cast<double>(in[l]));
    double sq = 0;
    for (std::size_t k = 0; k < w_len[l]; ++k) {
      const float v = a[w_off[l] + k];
      BOOST_TEST(std::abs(v) <= bound);
      sq += static_cast<double>(v) * v;
    }
    const double var = sq / static_cast<double>(w_len[l]),
                 expect = 2.0 / static_cast<double>(in[l]);
    BOOST_TEST(var > 0.4 * expect);
    BOOST_TEST(var < 1.8 * expect);
    for (std::size_t k = 0; k < out[l]; ++k)
      BOOST_TEST(a[w_off[l] + w_len[l] + k] == 0.0f);  // biases
  }
}

BOOST_AUTO_TEST_CASE(loss_matches_plain_loop) {
  const std::vector<std::size_t> widths{10, 8, 6, 3};
  const auto d = gen_data(33, 10, 3, 21);
  auto m = make_mlp(10, {8, 6}, 3, 0.05);
  auto p = random_params(m->num_params(), 0.5, 22);
  std::vector<float> g(p.size());
  const double expect = mlp_loss_ref(widths, d, to_double(p), 0.05);
  BOOST_TEST(m->loss(d.all(), p.data()) == expect, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(m->loss_and_gradient(d.all(), p.data(), g.data()) == expect,
             boost::test_tools::tolerance(1e-5));
  // Softmax regression (no hidden layer) too.
  auto s = make_mlp(10, {}, 3, 0.0);
  const auto q = random_params(s->num_params(), 0.5, 23);
  BOOST_TEST(s->loss(d.all(), q.data()) == mlp_loss_ref({10, 3}, d, to_double(q), 0.0),
             boost::test_tools::tolerance(1e-5));
}

BOOST_AUTO_TEST_CASE(gradient_matches_finite_differences) {
  const std::vector<std::size_t> widths{10, 8, 6, 3};
  const double l2 = 0.1;
  const auto d = gen_data(20, 10, 3, 31);
  auto m = make_mlp(10, {8, 6}, 3, l2);
  std::vector<float> p(m->num_params()), g(m->num_params());
  m->init_params(p.data(), 32);
  rng r(33);
  for (auto& v : p)
    v += static_cast<float>(0.1 * r.normal());  // non-zero biases too
  (void)m->loss_and_gradient(d.all(), p.data(), g.data());
  auto coords = random_coords(p.size(), 16, 34);
  for (std::size_t c : {std::size_t{80}, std::size_t{87}, std::size_t{136}, std::size_t{140},
                        std::size_t{141}, std::size_t{142}, std::size_t{160}, p.size() - 1})
    coords.push_back(c);  // first/last of each bias, first/last of W3, last param
  check_gradient_double(
    p, g, coords, [&](const std::vector<double>& q) { return mlp_loss_ref(widths, d, q, l2); });
  check_gradient_model(*m, d.all(), p, g, coords);
}

BOOST_AUTO_TEST_CASE(stable_for_large_logits) {
  data d;
  d.dim = 1;
  d.x = {1.0f};
  d.y = {1};
  auto m = make_mlp(1, {}, 2, 0.0);
  const std::vector<float> p{2000.0f, -2000.0f, 0.0f, 0.0f};  // logits (2000, -2000)
  std::vector<float> g(4);
  const double loss = m->loss_and_gradient(d.all(), p.data(), g.data());
  BOOST_TEST(loss == 4000.0, boost::test_tools::tolerance(1e-9));
  const std::vector<float> expect{1.0f, -1.0f, 1.0f, -1.0f};  // (softmax - onehot) x, and for b
  BOOST_TEST(g == expect, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(accuracy_on_handmade_batch) {
  // 2 -> 3, no hidden layer: logits = x W + b with W = [[1,0,0],[0,1,0]], b = (0,0,0.5).
  data d;
  d.dim = 2;
  d.x = {2, 0, /**/ 0, 2, /**/ 0, 0, /**/ 1, 0};
  d.y = {0, 1, 2, 2};  // predictions 0, 1, 2, 0
  auto m = make_mlp(2, {}, 3, 0.0);
  const std::vector<float> p{1, 0, 0, 0, 1, 0, /*b*/ 0, 0, 0.5f};
  BOOST_TEST(m->accuracy(d.all(), p.data()) == 0.75);
  // 2 -> 2 (ReLU) -> 2, identity weights: x = (-3, -1) gives hidden (0, 0), a tie
  // resolved to class 0; without the ReLU the logits would pick class 1.
  data e;
  e.dim = 2;
  e.x = {-3, -1, /**/ 1, 2};
  e.y = {0, 1};
  auto h = make_mlp(2, {2}, 2, 0.0);
  const std::vector<float> q{1, 0, 0, 1, 0, 0, /**/ 1, 0, 0, 1, 0, 0};
  BOOST_TEST(h->accuracy(e.all(), q.data()) == 1.0);
}

BOOST_AUTO_TEST_CASE(gradient_descent_lowers_loss) {
  // Three separable clouds in 4-D.
  rng g(41);
  data d;
  d.dim = 4;
  const double centres[3][4] = {{2, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 2, 0}};
  for (int i = 0; i < 150; ++i) {
    const int y = i % 3;
    for (int j = 0; j < 4; ++j)
      d.x.push_back(static_cast<float>(centres[y][j] + 0.4 * g.normal()));
    d.y.push_back(y);
  }
  auto m = make_mlp(4, {16}, 3, 1e-4);
  std::vector<float> p(m->num_params()), grad(m->num_params());
  m->init_params(p.data(), 42);
  const double first = m->loss(d.all(), p.data());
  for (int step = 0; step < 300; ++step) {
    (void)m->loss_and_gradient(d.all(), p.data(), grad.data());
    for (std::size_t k = 0; k < p.size(); ++k)
      p[k] -= 0.2f * grad[k];
  }
  const double last = m->loss(d.all(), p.data());
  BOOST_TEST_MESSAGE("mlp 4-16-3 gradient descent: loss " << first << " -> " << last);
  BOOST_TEST(last < 0.1 * first);
  BOOST_TEST(last < 0.1);
  BOOST_TEST(m->accuracy(d.all(), p.data()) == 1.0);
}

BOOST_AUTO_TEST_CASE(row_count_does_not_change_results) {
  const auto d = gen_data(10, 10, 3, 51);
  auto m = make_mlp(10, {8, 6}, 3, 0.05);
  std::vector<float> p(m->num_params());
  m->init_params(p.data(), 52);
  check_split(*m, d, p, std::vector<std::size_t>(10, 1));
  check_split(*m, d, p, {4, 6});
  // and alternating shapes on one model keep giving the same answer
  const double a = m->loss(d.all(), p.data());
  (void)m->loss(d.slice(0, 3), p.data());
  BOOST_TEST(m->loss(d.all(), p.data()) == a);
}

BOOST_AUTO_TEST_CASE(large_batch_is_chunked_consistently) {
  const auto d = gen_data(4096 + 1000, 6, 3, 61);
  auto m = make_mlp(6, {5}, 3, 0.01);
  std::vector<float> p(m->num_params());
  m->init_params(p.data(), 62);
  BOOST_TEST(m->loss(d.all(), p.data()) == mlp_loss_ref({6, 5, 3}, d, to_double(p), 0.01),
             boost::test_tools::tolerance(1e-5));
  check_split(*m, d, p, {2000, 3096});
}

BOOST_AUTO_TEST_CASE(many_shapes_evict_and_rebuild) {
  // More distinct row counts than the plan cache holds: results stay right.
  const auto d = gen_data(20, 4, 3, 71);
  auto m = make_mlp(4, {3}, 3, 0.0);
  std::vector<float> p(m->num_params());
  m->init_params(p.data(), 72);
  std::vector<double> first;
  for (std::size_t n = 1; n <= 20; ++n)
    first.push_back(m->loss(d.slice(0, n), p.data()));
  for (std::size_t n = 1; n <= 20; ++n) {
    data sub;
    sub.dim = 4;
    sub.x.assign(d.x.begin(), d.x.begin() + static_cast<std::ptrdiff_t>(n * 4));
    sub.y.assign(d.y.begin(), d.y.begin() + static_cast<std::ptrdiff_t>(n));
    BOOST_TEST(first[n - 1] == mlp_loss_ref({4, 3, 3}, sub, to_double(p), 0.0),
               boost::test_tools::tolerance(1e-5));
  }
}

BOOST_AUTO_TEST_CASE(clone_is_independent) {
  const auto d = gen_data(9, 5, 4, 81);
  auto m = make_mlp(5, {7}, 4, 0.1);
  std::vector<float> p(m->num_params()), g1(p.size()), g2(p.size());
  m->init_params(p.data(), 82);
  const double l1 = m->loss_and_gradient(d.all(), p.data(), g1.data());
  auto c = m->clone();
  m.reset();
  BOOST_TEST(c->name() == "mlp(5-7-4)");
  BOOST_TEST(c->num_params() == p.size());
  BOOST_TEST(c->loss_and_gradient(d.all(), p.data(), g2.data()) == l1);
  BOOST_TEST(g1 == g2, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(rejects_bad_input) {
  auto m = make_mlp(3, {2}, 3, 0.0);
  std::vector<float> p(m->num_params()), g(p.size());
  auto d = gen_data(4, 3, 3, 91);
  d.y[1] = 3;
  BOOST_CHECK_THROW((void)m->loss_and_gradient(d.all(), p.data(), g.data()), std::invalid_argument);
  d.y[1] = -1;
  BOOST_CHECK_THROW((void)m->accuracy(d.all(), p.data()), std::invalid_argument);
  BOOST_CHECK_THROW((void)make_mlp(3, {0}, 3, 0.0), std::invalid_argument);
  BOOST_CHECK_THROW((void)make_mlp(3, {2}, 1, 0.0), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
