/// Convolutional networks in the engine (README "Train a convolutional network"): a
/// spec's CNN checked against the data's shape naming the layer and field, and every
/// algorithm training a small CNN on MNIST on the virtual clock (each with the step
/// size of its shipped MNIST spec, config/mnist_hosts/), R-FAST's tracker mass and
/// SGP/OSGP's push-sum mass checked after every event, and a replay giving the same trace.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../algorithms/sgp/sgp_ledger_check.hpp"
#include "atrain/kernels/cnn.hpp"
#include "fixtures.hpp"
#include "source_dir.hpp"

namespace t = atrain::test;

namespace {

// conv 4 3x3 stride 2 (13x13), relu, max 2 (6x6), then the head: 1,490 parameters.
const std::string small_cnn = R"(model {
  cnn {
    layer { conv { out: 4 kernel: 3 stride: 2 } }
    layer { relu {} }
    layer { max_pool { kernel: 2 } }
    l2: 1e-4
  }
  batch_size: 32
}
)";

/// config/mnist_hosts/ALG on the virtual clock with `model` for its MLP, 4 nodes,
/// 3,000 training and 1,000 test rows.
atrain::loaded_spec mnist_spec(const std::string& alg, const std::string& model,
                               const std::vector<std::string>& overrides) {
  const std::string dir = t::source_dir() + "/config/mnist_hosts";
  std::ifstream in(dir + "/" + alg + ".textproto");
  BOOST_REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  // The model block, from "model {" to its closing brace at the start of a line
  // (std::regex here trips GCC 12's -Wmaybe-uninitialized under ASan).
  const std::string original = text.str();
  const auto at = original.find("model {\n  mlp {");
  BOOST_REQUIRE(at != std::string::npos);
  const auto end = original.find("\n}\n", at);
  BOOST_REQUIRE(end != std::string::npos);
  const std::string spec = original.substr(0, at) + model + original.substr(end + 3);
  std::vector<std::string> o = {"clock=VIRTUAL",
                                "nodes=4",
                                "dataset.max_train_samples=3000",
                                "dataset.max_test_samples=1000",
                                "stop.stop_at_target=false",
                                "eval.period_seconds=1",
                                "eval.train_loss_samples=500",
                                "progress=false"};
  o.insert(o.end(), overrides.begin(), overrides.end());
  return atrain::parse_spec(spec, alg + ".textproto", dir, o);
}

std::string refusal(const std::string& model, const std::vector<std::string>& overrides = {}) {
  try {
    (void)atrain::prepare_run(mnist_spec("rfast", model, overrides));
  } catch (const atrain::spec_error& e) {
    return e.what();
  }
  return "";
}

std::string cnn_with(const std::string& layers, const std::string& extra = "") {
  return "model {\n  cnn {\n" + layers + extra + "  }\n  batch_size: 32\n}\n";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cnn_model)

BOOST_AUTO_TEST_CASE(shapes_that_do_not_chain_are_refused_naming_the_layer) {
  BOOST_TEST(refusal(small_cnn).empty());
  struct bad {
    std::string layers, extra, field, reason;
  };
  const std::vector<bad> cases = {
    // 28x28 -> 13x13 -> 6x6 -> a 7x7 kernel does not fit.
    {"layer { conv { out: 4 kernel: 3 stride: 2 } }\nlayer { max_pool { kernel: 2 } }\n"
     "layer { conv { out: 2 kernel: 7 } }\n",
     "", "model.cnn.layer[2].conv.kernel", "kernel 7x7 is larger than its padded input 6x6"},
    {"layer { dense { out: 8 } }\nlayer { max_pool { kernel: 2 } }\n", "", "model.cnn.layer[1]",
     "max_pool after a dense layer"},
    {"layer { conv { out: 2 kernel: 3 pad: 3 } }\n", "", "model.cnn.layer[0].conv.pad",
     "must be smaller than the kernel"},
    {"", "channels: 1 height: 28 width: 27\n", "model.cnn.channels",
     "1x28x27 = 756 values, but the dataset's rows have 784"},
    {"layer { avg_pool { kernel: 29 } }\n", "", "model.cnn.layer[0].avg_pool.kernel",
     "larger than its padded input 28x28"},
  };
  for (const auto& c : cases) {
    const auto msg = refusal(cnn_with(c.layers, c.extra));
    BOOST_TEST(msg.find(c.field + ": ") != std::string::npos, c.field << " in: " << msg);
    BOOST_TEST(msg.find(c.reason) != std::string::npos, c.reason << " in: " << msg);
  }
  // A preset that does not fit the data: LeNet-5 on 8x8 images names the preset.
  const auto small = refusal("model {\n  cnn { preset: LENET5 channels: 1 height: 8 width: 8 }\n"
                             "  batch_size: 32\n}\n");
  BOOST_TEST(small.find("model.cnn") != std::string::npos, small);
  // A batch-norm net's gradient batch is one chunk.
  const auto bn = refusal(cnn_with("layer { batch_norm {} }\n"), {"model.batch_size=5000"});
  BOOST_TEST(bn.find("model.batch_size: a network with batch_norm takes batches of at most 4096") !=
               std::string::npos,
             bn);
}

BOOST_AUTO_TEST_CASE(the_size_bounds_count_activations) {
  // Six layers of 1024 channels of 28x28: 784 + 6 x 802,816 + 10 = 4,817,690 values per
  // row, x 32 rows = 154,166,080 > 2^27: past the per-node batch bound.
  std::string layers = "layer { conv { out: 1024 kernel: 3 pad: 1 } }\n";
  for (int i = 0; i < 5; ++i)
    layers += "layer { conv { out: 1024 kernel: 1 } }\n";
  const auto msg = refusal(cnn_with(layers));
  BOOST_TEST(msg.find("model.batch_size: batch_size x (activations per row) = 32 x 4817690 = "
                      "154166080 values per node") != std::string::npos,
             msg);
}

BOOST_AUTO_TEST_CASE(every_algorithm_trains_a_small_cnn) {
  for (const char* alg : {"rfast", "allreduce", "dpsgd", "adpsgd", "osgp", "sgp", "dasgd",
                          "local_sgd", "async_ps", "loscar", "diloco"}) {
    BOOST_TEST_CONTEXT(alg) {
      auto plan = atrain::prepare_run(mnist_spec(alg, small_cnn, {"stop.time_seconds=12"}));
      BOOST_TEST(plan->dim() == 1490u);
      atrain::proto::RunReport report;
      if (std::string{alg} == "rfast") {
        std::size_t checks = 0;
        double worst = 0;
        report = t::run_checking_mass(plan, checks, worst);
        BOOST_TEST(checks > 1000u);
        BOOST_TEST_MESSAGE("rfast: " << checks << " mass checks, worst residual " << worst);
      } else if (std::string{alg} == "sgp" || std::string{alg} == "osgp") {
        // Push-sum mass (weights and values) after every event, as on the MLP.
        namespace sc = atrain::test::sgp_check;
        sc::ledger_check check{*plan, sc::max_ahead(*plan)};
        report = sc::run_checked(plan, check);
        BOOST_TEST(check.checks > 1000u);
        BOOST_TEST(!check.failed);
        BOOST_TEST_MESSAGE(alg << ": " << check.checks << " ledger checks, worst residual w "
                               << check.worst_w << " x " << check.worst_x);
      } else {
        auto r = atrain::run_experiment(plan);
        BOOST_REQUIRE(r);
        report = *r;
      }
      BOOST_TEST(report.error().empty(), report.error());
      BOOST_REQUIRE(report.metrics_size() > 2);
      const auto& first = report.metrics(0);
      BOOST_TEST_MESSAGE(alg << ": test accuracy " << first.test_accuracy() << " -> "
                             << report.final().test_accuracy());
      // Chance is 0.1; the first evaluation is at x0.
      BOOST_TEST(report.final().test_accuracy() > 0.6);
      BOOST_TEST(report.final().train_loss() < 0.8 * first.train_loss());
      BOOST_TEST(report.data_split().zeta2_rows_per_shard() == 1024u);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_cnn_run_replays_to_the_same_trace) {
  t::expect_replay([](std::uint64_t seed) {
    return atrain::prepare_run(
      mnist_spec("rfast", small_cnn, {"seed=" + std::to_string(seed), "stop.time_seconds=3"}));
  });
}

// model.cnn.bf16: convolutions and hidden dense layers in bf16 (kernels/ tests
// their gradients against f32); here the engine builds it, trains about as well
// as f32, and replays. A CPU without AVX512_BF16 refuses it naming the field.
BOOST_AUTO_TEST_CASE(a_bf16_cnn_trains_like_f32_and_replays) {
  std::string bf16_cnn = small_cnn;
  bf16_cnn.insert(bf16_cnn.find("    l2:"), "    bf16: true\n");
  if (!atrain::cnn_bf16_supported()) {
    BOOST_TEST(refusal(bf16_cnn).find("model.cnn.bf16: bf16 needs a CPU with AVX512_BF16") !=
               std::string::npos);
    return;
  }
  const auto final_of = [](const std::string& model) {
    auto r = atrain::run_experiment(
      atrain::prepare_run(mnist_spec("adpsgd", model, {"stop.time_seconds=8"})));
    BOOST_REQUIRE(r);
    BOOST_TEST(r->error().empty(), r->error());
    return *r;
  };
  const auto f32 = final_of(small_cnn);
  const auto b16 = final_of(bf16_cnn);
  BOOST_TEST_MESSAGE("final test accuracy f32 " << f32.final().test_accuracy() << ", bf16 "
                                                << b16.final().test_accuracy());
  // The flag reached the kernels: the runs differ.
  BOOST_TEST(f32.trace_hash() != b16.trace_hash());
  BOOST_TEST(b16.final().test_accuracy() > 0.6);
  BOOST_TEST(b16.final().test_accuracy() >= f32.final().test_accuracy() - 0.03);
  t::expect_replay([&](std::uint64_t seed) {
    return atrain::prepare_run(
      mnist_spec("adpsgd", bf16_cnn, {"seed=" + std::to_string(seed), "stop.time_seconds=2"}));
  });
}

BOOST_AUTO_TEST_SUITE_END()
