// CNN (kernels/cnn.hpp): loss against a plain-loop double reference, every
// layer's gradient against central finite differences of that reference,
// batch norm's inference statistics, chunking, determinism, init, and the
// shape checks naming the layer.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "atrain/kernels/cnn.hpp"
#include "atrain/kernels/rng.hpp"
#include "cnn_reference.hpp"

using namespace atrain;
using namespace cnn_ref;

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
