/// sgp's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same checks).
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "algorithms/sgp/sgp.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using proto_params = google::protobuf::RepeatedField<float>;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

using namespace atrain::test::ckpt;

BOOST_FIXTURE_TEST_SUITE(sgp_checkpoint, remove_scratch)

// SGP and OSGP (push-sum) over lossy acknowledged links that also duplicate
// and reorder: SGP may hold messages of steps it has not completed at the
// barrier (saved with the node), OSGP has added all it received.
BOOST_AUTO_TEST_CASE(sgp_and_osgp_resumed_runs_end_exactly_like_the_uninterrupted_ones) {
  for (const char* algo : {"sgp", "osgp"})
    expect_resume_equals_uninterrupted(std::string{"algorithms/"} + algo + ".textproto",
                                       {"dataset.max_train_samples=4000", "link.loss=0.1",
                                        "link.duplicate=0.1", "link.reorder=0.2",
                                        "link.reorder_delay_seconds=0.004", "cost.jitter=0.5"},
                                       0.4, 0.8, 1.0, algo);
}

// Push-sum mass from the checkpoint file alone: sum_i w_i + the weight of
// the messages SGP holds = n, and sum_i x_i + held x equals the test's own
// n x^0 - sum over every step taken of gamma_k g (from the nodes' ledgers,
// up to each node's saved step count).
BOOST_AUTO_TEST_CASE(the_barrier_conserves_push_sum_mass) {
  for (const char* algo : {"sgp", "osgp"}) {
    const auto file = scratch(std::string{algo} + "_mass_{k}.ckpt").string();
    auto plan = t::config(std::string{"algorithms/"} + algo + ".textproto",
                          {"dataset.max_train_samples=4000", "progress=false",
                           "stop.stop_at_target=false", "stop.time_seconds=0.5", "link.loss=0.1",
                           "link.reorder=0.3", "link.reorder_delay_seconds=0.01", "cost.jitter=0.5",
                           "checkpoint.at_seconds=[0.3]", "checkpoint.file=" + file});
    const auto n = plan->nodes();
    const std::size_t dim = plan->dim();
    // steps[i][k] = gamma_k g of node i's step k, in double.
    std::vector<std::vector<std::vector<double>>> steps(n);
    auto probe = std::make_shared<atrain::run_probe>();
    atrain::run_options opts;
    opts.probe = probe;
    opts.progress = false;
    atrain::virtual_run vr{plan, opts};
    while (vr.step())
      for (std::uint32_t i = 0; i < n; ++i) {
        const auto* node = probe->states<atrain::pushsum_node>().at(i);
        if (node == nullptr)
          continue;
        for (auto k = steps[i].size(); k < node->descents.size(); ++k) {
          const auto& d = node->descents[k];
          std::vector<double> v(dim);
          for (std::size_t j = 0; j < dim; ++j)
            v[j] = d.gamma * static_cast<double>(d.g[j]);
          steps[i].push_back(std::move(v));
        }
      }
    const auto report = vr.run();
    BOOST_REQUIRE(report);
    BOOST_TEST(report->error().empty(), report->error());
    BOOST_REQUIRE(report->checkpoints_size() == 1);
    const auto ck = load(scratch(std::string{algo} + "_mass_1.ckpt"), *plan);
    double w = 0;
    std::size_t held = 0;
    std::vector<double> x(dim, 0.0), want(dim, 0.0);
    for (std::size_t j = 0; j < dim; ++j)
      want[j] = static_cast<double>(n) * plan->x0[j];
    for (const auto& s : ck->nodes()) {
      w += s.pushsum().w();
      for (std::size_t j = 0; j < dim; ++j)
        x[j] += s.pushsum().x(static_cast<int>(j));
      for (const auto& h : s.pushsum().held()) {
        ++held;
        w += h.w();
        for (std::size_t j = 0; j < dim; ++j)
          x[j] += h.x(static_cast<int>(j));
      }
      BOOST_REQUIRE(s.wakes() <= steps[s.node()].size());
      for (std::uint64_t k = 0; k < s.wakes(); ++k)
        for (std::size_t j = 0; j < dim; ++j)
          want[j] -= steps[s.node()][k][j];
      // No gradient in flight at the barrier: one per step taken.
      BOOST_TEST(s.compute().gradients() == s.wakes());
      // The saved model is the push-sum ratio.
      BOOST_TEST(s.params(0) == static_cast<float>(s.pushsum().x(0) / s.pushsum().w()));
    }
    double err = 0, scale = 1;
    for (std::size_t j = 0; j < dim; ++j) {
      err = std::max(err, std::abs(x[j] - want[j]));
      scale = std::max(scale, std::abs(want[j]));
    }
    BOOST_TEST(std::abs(w - static_cast<double>(n)) < 1e-12);
    BOOST_TEST(err / scale < 1e-12);
    if (std::string{algo} == "osgp")
      BOOST_TEST(held == 0u);
    BOOST_TEST_MESSAGE(algo << ": at the checkpoint (t=" << ck->time_seconds() << " s, drain "
                            << report->checkpoints(0).drain_seconds() << " s) sum w + held = " << w
                            << " (n = " << n << "), " << held << " messages held, x residual "
                            << err / scale);
  }
}
BOOST_AUTO_TEST_SUITE_END()
