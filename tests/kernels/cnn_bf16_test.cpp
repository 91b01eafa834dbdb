// CNN in bf16 (cnn_config::bf16): the support predicate against oneDNN's
// ISA, gradients and losses against f32 (itself checked against the double
// reference) within bf16's precision, training next to f32 on MNIST,
// bit-identical repeats and clones, chunking. Every case but the
// predicate's passes with a message on a CPU without AVX512_BF16.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "atrain/kernels/cnn.hpp"
#include "atrain/kernels/dataset.hpp"
#include "cnn_reference.hpp"
#include "source_dir.hpp"

using namespace atrain;
using namespace cnn_ref;

namespace {

bool skip_without_bf16() {
  if (cnn_bf16_supported())
    return false;
  BOOST_TEST_MESSAGE("skipped: oneDNN's ISA has no native bf16 (AVX512_BF16)");
  return true;
}

cnn_config in_bf16(cnn_config c) {
  c.bf16 = true;
  return c;
}

/// |a - b| / |b| over whole vectors, in L2.
double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double d = double(a[k]) - double(b[k]);
    num += d * d;
    den += double(b[k]) * double(b[k]);
  }
  return std::sqrt(num / den);
}

/// A net with a non-square kernel, a stride, padding, batch norm and an
/// average pool on a 3-channel input.
cnn_config odd_net() {
  return {{3, 13, 11},
          {conv(8, 3, 5, 2, 1), plain(K::relu), pool(K::avg_pool, 2, 1), conv(16, 3, 3, 1, 1),
           plain(K::batch_norm), plain(K::relu), pool(K::max_pool, 2, 2), plain(K::dense, 20),
           plain(K::relu)},
          5,
          1e-3};
}

struct comparison {
  double grad = 0, loss = 0;  // relative errors of bf16 against f32
};

comparison compare(const cnn_config& cfg, std::size_t rows, std::uint64_t seed) {
  auto f = make_cnn(cfg);
  auto b = make_cnn(in_bf16(cfg));
  const images d = random_images(rows, cfg.input, cfg.classes, seed);
  std::vector<float> p(f->num_params()), gf(p.size()), gb(p.size());
  f->init_params(p.data(), seed);
  const double lf = f->loss_and_gradient(d.all(), p.data(), gf.data());
  const double lb = b->loss_and_gradient(d.all(), p.data(), gb.data());
  // f32 is itself within 1e-5 of the double reference (cnn_test.cpp).
  const double want = reference{cfg}.loss(d, rows, widen(p));
  BOOST_TEST(std::abs(lf - want) <= 1e-5 * std::abs(want));
  const comparison c{relative_l2(gb, gf), std::abs(lb - lf) / std::abs(lf)};
  BOOST_TEST_MESSAGE(b->name() << ", " << rows << " rows: gradient relative L2 error " << c.grad
                               << ", loss relative error " << c.loss);
  return c;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cnn_bf16)

// ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI takes the throwing branch on a CPU
// that has bf16.
BOOST_AUTO_TEST_CASE(support_agrees_with_onednn_isa) {
  const auto isa = dnnl::get_effective_cpu_isa();
  const bool native = isa == dnnl::cpu_isa::avx512_core_bf16 ||
                      isa == dnnl::cpu_isa::avx512_core_amx;  // the ISAs with AVX512_BF16 in 2.6
  BOOST_TEST(cnn_bf16_supported() == native);
  const cnn_config c = in_bf16({{1, 4, 4}, {conv(2, 3, 3, 1, 1)}, 3, 0});
  if (native) {
    BOOST_TEST(make_cnn(c)->name().find("bf16") != std::string::npos);
    return;
  }
  try {
    (void)make_cnn(c);
    BOOST_ERROR("make_cnn accepted bf16 without AVX512_BF16");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()).find("needs a CPU with AVX512_BF16") != std::string::npos);
  }
}

// bf16 keeps 8 bits of mantissa: each rounded input is off by at most 2^-9
// (2e-3) relative. Through a chain of convs and dense layers without ReLU or
// pools (the f32 accumulations keep those errors from compounding much)
// the gradient stays within a few of them. Measured: relative L2 errors of
// the gradient 3.4e-3 (conv chain) and 4.1e-3 (dense chain), of the loss
// 4.2e-4 and 5.3e-5. Bounds: 1e-2 (gradient), 5e-3 (loss).
BOOST_AUTO_TEST_CASE(linear_chains_are_within_a_few_roundings) {
  if (skip_without_bf16())
    return;
  const cnn_config convs{
    {3, 13, 11}, {conv(8, 3, 5, 2, 1), conv(16, 3, 3, 1, 1), pool(K::avg_pool, 2, 2)}, 5, 0.0};
  const cnn_config denses{{1, 28, 28}, {plain(K::dense, 100), plain(K::dense, 50)}, 10, 1e-3};
  for (const auto& [cfg, rows] : {std::pair{convs, std::size_t{37}}, std::pair{denses, 64ul}}) {
    const comparison c = compare(cfg, rows, rows);
    BOOST_TEST(c.grad <= 1e-2);
    BOOST_TEST(c.loss <= 5e-3);
  }
}

// With ReLUs and max pools the error is dominated by decisions bf16 flips:
// a unit whose f32 pre-activation is within rounding of 0 (or a pool
// window's runner-up within rounding of its maximum) passes its whole
// gradient in one precision and none in the other. A fraction f of flips
// gives an L2 error of about sqrt(f): about 3e-2 already for one conv+ReLU
// (f ~ 1e-3), and more for the first layers of deeper nets, where the flips
// of every later layer add up (and batch norm's backward, which subtracts
// per-channel means, amplifies them). Measured (these seeds): LeNet-5 3.4e-2,
// VGG_SMALL 5.4e-2, the odd net 1.8e-2; other seeds and MNIST rows 2-4e-2;
// losses <= 1e-3. Bounds: 1e-1 (gradient) and 1e-2 (loss).
BOOST_AUTO_TEST_CASE(gradients_and_losses_track_f32) {
  if (skip_without_bf16())
    return;
  for (const auto& [cfg, rows] : {std::pair{lenet5({1, 28, 28}, 10), std::size_t{64}},
                                  std::pair{vgg_small({1, 28, 28}, 10), std::size_t{64}},
                                  std::pair{odd_net(), std::size_t{37}}}) {
    const comparison c = compare(cfg, rows, rows + cfg.layers.size());
    BOOST_TEST(c.grad <= 1e-1);
    BOOST_TEST(c.loss <= 1e-2);
  }
}

BOOST_AUTO_TEST_CASE(repeats_and_clones_are_bit_identical) {
  if (skip_without_bf16())
    return;
  for (const auto& cfg : {vgg_small({1, 12, 12}, 4), odd_net()}) {
    auto m = make_cnn(in_bf16(cfg));
    auto c = m->clone();
    const images d = random_images(9, cfg.input, cfg.classes, 9);
    std::vector<float> p(m->num_params()), a(p.size()), b(p.size()), e(p.size());
    m->init_params(p.data(), 5);
    const double la = m->loss_and_gradient(d.all(), p.data(), a.data());
    const double lb = m->loss_and_gradient(d.all(), p.data(), b.data());
    const double le = c->loss_and_gradient(d.all(), p.data(), e.data());
    BOOST_TEST(la == lb);
    BOOST_TEST(la == le);
    BOOST_TEST((a == b && a == e));
    BOOST_TEST(m->loss(d.all(), p.data()) == c->loss(d.all(), p.data()));
    // Not the f32 results: the bf16 primitives did run.
    std::vector<float> g32(p.size());
    (void)make_cnn(cfg)->loss_and_gradient(d.all(), p.data(), g32.data());
    BOOST_TEST((g32 != a));
  }
}

BOOST_AUTO_TEST_CASE(large_batches_are_chunked_consistently) {
  if (skip_without_bf16())
    return;
  const cnn_config cfg =
    in_bf16({{1, 6, 6}, {conv(4, 3, 3, 1, 1), plain(K::relu), plain(K::dense, 8)}, 3, 0.0});
  auto m = make_cnn(cfg);
  const images d = random_images(4096 + 300, cfg.input, 3, 8);
  std::vector<float> p(m->num_params()), g(p.size()), g1(p.size()), g2(p.size()), mean(p.size());
  m->init_params(p.data(), 4);
  (void)m->loss_and_gradient(d.all(), p.data(), g.data());
  (void)m->loss_and_gradient(d.slice(0, 4096), p.data(), g1.data());
  (void)m->loss_and_gradient(d.slice(4096, 300), p.data(), g2.data());
  for (std::size_t k = 0; k < g.size(); ++k)
    mean[k] = static_cast<float>((4096.0 * g1[k] + 300.0 * g2[k]) / 4396.0);
  // The parts scale d loss / d logits by 1/4096 and 1/300, the whole by
  // 1/4396: bf16 rounds them differently (the forward is the same). Measured
  // 2.2e-4.
  const double err = relative_l2(g, mean);
  BOOST_TEST_MESSAGE("chunked bf16 gradient against the parts' mean: " << err);
  BOOST_TEST(err <= 1e-2);
  const double want = reference{cfg}.loss(d, d.y.size(), widen(p));
  BOOST_TEST(std::abs(m->loss(d.all(), p.data()) - want) <= 1e-2 * want);
}

// LeNet-5 on MNIST (the test set shipped in data/: 4,096 rows to train on,
// the last 1,000 held out), 200 SGD steps of 64 rows (about 3 passes) from
// the same init in f32 and bf16. Measured: held-out loss 3.038 -> 0.297
// (f32, accuracy 0.902) and 3.038 -> 0.281 (bf16, 0.908) on one oneDNN
// thread, 0.277 (0.914) on two. Bounds: both at least halve it, bf16 within
// 1.25x f32's loss and 2 points of its accuracy.
BOOST_AUTO_TEST_CASE(training_tracks_f32_on_mnist) {
  if (skip_without_bf16())
    return;
  const std::string dir = test::source_dir() + "/data/mnist/";
  const dataset all =
    load_idx(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz");
  const batch_view train{all.features.data(), all.labels.data(), 4096, all.dim};
  const batch_view held{all.row(9000), all.labels.data() + 9000, 1000, all.dim};
  const cnn_config cfg = lenet5({1, 28, 28}, 10);
  struct run {
    double before = 0, after = 0, acc = 0;
  };
  const auto train_with = [&](const cnn_config& c) {
    auto m = make_cnn(c);
    std::vector<float> p(m->num_params()), g(p.size());
    m->init_params(p.data(), 17);
    run r;
    r.before = m->loss(held, p.data());
    for (std::size_t step = 0; step < 200; ++step) {
      const std::size_t at = (step * 64) % train.rows;
      const batch_view b{train.x + at * train.dim, train.y + at, 64, train.dim};
      (void)m->loss_and_gradient(b, p.data(), g.data());
      for (std::size_t k = 0; k < p.size(); ++k)
        p[k] -= 0.05f * g[k];
    }
    r.after = m->loss(held, p.data());
    r.acc = m->accuracy(held, p.data());
    return r;
  };
  const run f = train_with(cfg), b = train_with(in_bf16(cfg));
  BOOST_TEST_MESSAGE("held-out loss f32 " << f.before << " -> " << f.after << " (accuracy " << f.acc
                                          << "), bf16 " << b.before << " -> " << b.after
                                          << " (accuracy " << b.acc << ")");
  BOOST_TEST(f.after < 0.5 * f.before);
  BOOST_TEST(b.after < 0.5 * b.before);
  BOOST_TEST(b.after <= 1.25 * f.after);
  BOOST_TEST(b.acc >= f.acc - 0.02);
}

BOOST_AUTO_TEST_SUITE_END()
