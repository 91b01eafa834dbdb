// CNN kernels in the formats oneDNN chooses (blocked nChw16c, nhwc, and the
// reorders between them, the input rows and the plain parameter buffer):
// full-size presets and nets that need reorders against the plain-layout
// double reference, batch norm with a fused ReLU, odd and changing batch
// sizes (several plans at once, some dropped and rebuilt), determinism at
// full size, and clone()s.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "atrain/kernels/cnn.hpp"
#include "atrain/kernels/rng.hpp"
#include "cnn_reference.hpp"

using namespace atrain;
using namespace cnn_ref;

namespace {

/// [begin, end) of every parameter block (each W, b, gamma, beta) in the
/// documented order, from the shapes the layers produce.
std::vector<std::pair<std::size_t, std::size_t>> blocks(const cnn_config& cfg) {
  std::size_t c = cfg.input.channels, h = cfg.input.height, w = cfg.input.width, off = 0;
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const auto add = [&](std::size_t n) {
    out.emplace_back(off, off + n);
    off += n;
  };
  auto layers = cfg.layers;
  layers.push_back(plain(K::dense, cfg.classes));
  for (const auto& l : layers) {
    const auto side = [&](std::size_t n, std::size_t k) {
      return (n + 2 * l.pad - k) / l.stride + 1;
    };
    if (l.type == K::conv) {
      add(l.out * c * l.kernel_h * l.kernel_w);
      add(l.out);
      c = l.out;
    } else if (l.type == K::dense) {
      add(l.out * c * h * w);
      add(l.out);
      c = l.out;
      h = w = 1;
      continue;
    } else if (l.type == K::batch_norm) {
      add(c);
      add(c);
    }
    if (l.type == K::conv || l.type == K::max_pool || l.type == K::avg_pool) {
      h = side(h, l.kernel_h);
      w = side(w, l.kernel_w);
    }
  }
  return out;
}

/// For every parameter block, the model's gradient along a random unit
/// direction in it against central differences of the reference: covers
/// every coordinate of a net too large to difference one by one.
void check_directions(const cnn_config& cfg, std::size_t rows, std::uint64_t seed) {
  auto m = make_cnn(cfg);
  const images d = random_images(rows, cfg.input, cfg.classes, seed);
  std::vector<float> p(m->num_params()), g(p.size());
  m->init_params(p.data(), seed);
  rng r(seed + 3);
  for (auto& v : p)  // non-zero biases, gamma away from 1
    v += static_cast<float>(0.1 * r.normal());
  const double loss = m->loss_and_gradient(d.all(), p.data(), g.data());
  reference ref{cfg};
  const std::vector<double> pd = widen(p);
  BOOST_TEST(std::abs(loss - ref.loss(d, rows, pd)) <= 1e-5 * std::max(1.0, loss));
  double gmax = 0;
  for (const float x : g)
    gmax = std::max(gmax, std::abs(double(x)));
  const auto bs = blocks(cfg);
  BOOST_TEST_REQUIRE(bs.back().second == p.size());
  for (const auto& [begin, end] : bs) {
    std::vector<double> v(end - begin);
    double norm = 0, gnorm = 0, got = 0;
    for (auto& x : v) {
      x = r.normal();
      norm += x * x;
    }
    for (std::size_t k = begin; k < end; ++k) {
      v[k - begin] /= std::sqrt(norm);
      got += g[k] * v[k - begin];
      gnorm += double(g[k]) * g[k];
    }
    const double h = 1e-5;
    std::vector<double> up = pd, down = pd;
    for (std::size_t k = begin; k < end; ++k) {
      up[k] += h * v[k - begin];
      down[k] -= h * v[k - begin];
    }
    const double want = (ref.loss(d, rows, up) - ref.loss(d, rows, down)) / (2 * h);
    // Scale: a random direction sees |g| / sqrt(n) of the gradient. A conv
    // bias before batch norm has none: float sums leave ~1e-7 of |g|.
    const double scale = std::sqrt(gnorm / double(end - begin));
    BOOST_TEST(std::abs(got - want) <= 1e-3 * (std::abs(want) + scale) + 1e-5 * gmax,
               m->name() << " block [" << begin << ", " << end << "): " << got << " vs " << want);
  }
}

struct result {
  double loss = 0;
  std::vector<float> grad;
  bool operator==(const result& o) const { return loss == o.loss && grad == o.grad; }
};

result step(model& m, const batch_view& b, const std::vector<float>& p) {
  result r;
  r.grad.resize(p.size());
  r.loss = m.loss_and_gradient(b, p.data(), r.grad.data());
  return r;
}

std::vector<float> initial(const model& m, std::uint64_t seed) {
  std::vector<float> p(m.num_params());
  m.init_params(p.data(), seed);
  return p;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cnn_formats)

// 28x28: oneDNN runs LeNet's 6- and 16-channel convs in nhwc, the VGG's in
// nChw16c; weights and gradients go through reorders, the last spatial
// activation back to nchw for the dense layer.
BOOST_AUTO_TEST_CASE(full_size_presets_match_the_plain_reference) {
  check_directions(lenet5({1, 28, 28}, 10), 5, 31);
  check_directions(vgg_small({1, 28, 28}, 10), 3, 32);
}

// Three input channels (the rows reordered in), 16 and 32 channels
// (blocked), a conv after a pool and one of 17 output channels (reorders
// between formats), batch norm on features.
BOOST_AUTO_TEST_CASE(nets_that_reorder_between_formats_match_finite_differences) {
  check_against_reference(
    {{3, 9, 9},
     {conv(16, 3, 3, 1, 1), plain(K::relu), conv(32, 3, 3, 2, 1), plain(K::batch_norm),
      plain(K::relu), pool(K::max_pool, 2, 2), plain(K::dense, 6), plain(K::batch_norm)},
     3,
     1e-3},
    3, 51, 600);
  check_against_reference({{2, 8, 8},
                           {pool(K::avg_pool, 2, 2), conv(17, 3, 3, 1, 1), plain(K::relu),
                            conv(16, 1, 1, 1, 0), pool(K::max_pool, 2, 1)},
                           3,
                           0.0},
                          4, 52, 600);
}

// A ReLU right after batch norm runs inside it (fuse_norm_relu): at the
// input, after a conv, and on features after a dense layer.
BOOST_AUTO_TEST_CASE(batch_norm_with_a_fused_relu_matches_finite_differences) {
  check_against_reference(
    {{2, 6, 6},
     {plain(K::batch_norm), plain(K::relu), conv(4, 3, 3, 1, 1), plain(K::batch_norm),
      plain(K::relu), plain(K::dense, 5), plain(K::batch_norm), plain(K::relu)},
     3,
     1e-3},
    6, 53);
}

// Plans for several row counts coexist (and beyond six the least recently
// used are dropped and rebuilt): each step equals a fresh model's, bit for
// bit, and the reference's loss.
BOOST_AUTO_TEST_CASE(odd_and_changing_batch_sizes_match_fresh_models) {
  const cnn_config cfg = vgg_small({1, 12, 12}, 4);
  auto m = make_cnn(cfg);
  const images d = random_images(64, cfg.input, 4, 41);
  const auto p = initial(*m, 6);
  const std::vector<double> pd = widen(p);
  for (const std::size_t rows : {64, 7, 1, 33, 5, 3, 2, 9, 7, 64, 1}) {
    const result got = step(*m, d.slice(0, rows), p);
    auto fresh = make_cnn(cfg);
    BOOST_TEST((got == step(*fresh, d.slice(0, rows), p)), "rows " << rows);
    reference ref{cfg};
    const double want = ref.loss(d, rows, pd);
    BOOST_TEST(std::abs(got.loss - want) <= 1e-5 * std::max(1.0, want), "rows " << rows);
    BOOST_TEST(m->loss(d.slice(0, rows), p.data()) == fresh->loss(d.slice(0, rows), p.data()));
  }
}

BOOST_AUTO_TEST_CASE(full_size_repeats_are_bit_identical) {
  for (const cnn_config& cfg : {lenet5({1, 28, 28}, 10), vgg_small({1, 28, 28}, 10)}) {
    auto m = make_cnn(cfg);
    const images d = random_images(64, cfg.input, 10, 42);
    const auto p = initial(*m, 7);
    const result first = step(*m, d.all(), p);
    BOOST_TEST((first == step(*m, d.all(), p)), m->name());
    BOOST_TEST(std::isfinite(first.loss));
    // Inference runs the same primitives (batch norm aside: global statistics).
    const double inferred = m->loss(d.all(), p.data());
    BOOST_TEST(std::abs(inferred - first.loss) <= 1e-5 * first.loss, m->name());
  }
}

// A clone has its own primitives and buffers: what the original does between
// or after (other rows, other parameters, its destruction) does not reach it.
BOOST_AUTO_TEST_CASE(clones_are_independent) {
  const cnn_config cfg = lenet5({1, 28, 28}, 10);
  auto m = make_cnn(cfg);
  const images a = random_images(64, cfg.input, 10, 43), b = random_images(7, cfg.input, 10, 44);
  const auto p = initial(*m, 8), q = initial(*m, 9);
  const result want = step(*m, a.all(), p);
  auto c = m->clone();  // after m has built its plans
  const result other = step(*c, b.all(), q);
  BOOST_TEST((step(*m, b.all(), q) == other));
  BOOST_TEST((step(*c, a.all(), p) == want));
  BOOST_TEST((step(*m, a.all(), p) == want));
  m.reset();
  auto cc = c->clone();
  BOOST_TEST((step(*c, a.all(), p) == want));
  BOOST_TEST((step(*cc, b.all(), q) == other));
  BOOST_TEST(c->accuracy(a.all(), p.data()) == cc->accuracy(a.all(), p.data()));
}

BOOST_AUTO_TEST_SUITE_END()
