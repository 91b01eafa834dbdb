/// dasgd's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same checks).
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

#include "algorithms/dasgd/dasgd.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using proto_params = google::protobuf::RepeatedField<float>;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

using namespace atrain::test::ckpt;

BOOST_FIXTURE_TEST_SUITE(dasgd_checkpoint, remove_scratch)
// DASGD with batching (broadcast_every 2: unsent batches and their creation
// times are in the file) over lossy, duplicating, reordering acknowledged
// links.
BOOST_AUTO_TEST_CASE(dasgd_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  expect_resume_equals_uninterrupted("algorithms/dasgd.textproto",
                                     {"dataset.max_train_samples=8000", "nodes=4",
                                      "algorithm.dasgd.broadcast_every=2", "link.loss=0.1",
                                      "link.duplicate=0.05", "link.reorder=0.1",
                                      "link.reorder_delay_seconds=0.003"},
                                     1.0, 2.0, 2.6, "dasgd");
}

// DASGD at rest, from the file and the run's ledger (run_probe): every node
// applied, per origin, exactly the gradients 1..k its record names, each
// once; with broadcast_every 1 that is every gradient made anywhere, so every
// replica equals x0 - sum gamma_k g_k over ALL gradients made (recomputed
// here in double from the ledger) and the replicas are equal up to float
// rounding.
BOOST_AUTO_TEST_CASE(dasgd_checkpoint_replicas_hold_every_gradient_made) {
  const auto file = scratch("dasgd_inv_{k}.ckpt").string();
  auto plan = t::config("algorithms/dasgd.textproto",
                        {"dataset.max_train_samples=4000", "nodes=4", "progress=false",
                         "stop.stop_at_target=false", "stop.time_seconds=0.56", "link.loss=0.1",
                         "link.reorder=0.1", "link.reorder_delay_seconds=0.003",
                         "checkpoint.at_seconds=[0.5]", "checkpoint.file=" + file});
  const std::size_t n = plan->nodes();
  const std::size_t dim = plan->dim();
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  opts.progress = false;
  std::vector<atrain::dasgd_ledger> led(n);
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<double>> step;  // gamma g
  {
    atrain::virtual_run vr{plan, opts};
    while (vr.step())
      for (std::uint32_t i = 0; i < probe->workers.size(); ++i) {
        auto f = atrain::dasgd_take_ledger(probe->workers[i]);
        for (const auto& c : f.made) {
          auto& s = step[{i, c.index}];
          for (float v : c.g)
            s.push_back(c.gamma * static_cast<double>(v));
        }
        led[i].used.insert(led[i].used.end(), f.used.begin(), f.used.end());
      }
    const auto report = vr.run();
    BOOST_REQUIRE(report);
    BOOST_TEST(report->error().empty(), report->error());
    BOOST_REQUIRE(report->checkpoints_size() == 1);
  }
  const auto ck = load(scratch("dasgd_inv_1.ckpt"), *plan);
  double worst = 0, spread = 0;
  std::uint64_t total = 0;
  for (std::size_t j = 0; j < n; ++j)
    total += ck->nodes(static_cast<int>(j)).wakes();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& s = ck->nodes(static_cast<int>(i));
    const auto& d = s.dasgd();
    BOOST_REQUIRE(led[i].used.size() >= d.applied());
    BOOST_TEST(d.applied() == total, "node " << i << " applied " << d.applied() << " of " << total);
    std::vector<std::set<std::uint64_t>> per(n);
    std::vector<double> expect(plan->x0.begin(), plan->x0.end());
    for (std::size_t u = 0; u < d.applied(); ++u) {
      const auto& e = led[i].used[u];
      BOOST_TEST(per.at(e.origin).insert(e.index).second, "applied twice");
      const auto& gs = step.at({e.origin, e.index});
      for (std::size_t k = 0; k < dim; ++k)
        expect[k] -= gs[k];
    }
    for (std::size_t j = 0; j < n; ++j) {
      const auto k = d.applied_from(static_cast<int>(j));
      BOOST_TEST(k == ck->nodes(static_cast<int>(j)).wakes());  // every gradient node j made
      BOOST_TEST(per[j].size() == k);
      BOOST_TEST((per[j].empty() || *per[j].rbegin() == k), "the record is not 1.." << k);
    }
    for (std::size_t k = 0; k < dim; ++k) {
      const double x = s.params(static_cast<int>(k));
      worst = std::max(worst, std::abs(x - expect[k]) / (1 + std::abs(expect[k])));
      const double x0 = ck->nodes(0).params(static_cast<int>(k));
      spread = std::max(spread, std::abs(x - x0) / (1 + std::abs(x0)));
    }
  }
  // A record claiming a gradient its origin never made is refused, naming it.
  auto bad = *ck;
  bad.mutable_nodes(1)->mutable_dasgd()->set_applied_from(3, ck->nodes(3).wakes() + 1);
  BOOST_REQUIRE(atrain::write_checkpoint(bad, scratch("dasgd_bad.ckpt").string()));
  const auto why = load_error(scratch("dasgd_bad.ckpt"), *plan);
  BOOST_TEST(why.find("node 1: dasgd.applied_from[3]") != std::string::npos, why);
  BOOST_TEST(total > 100u);
  BOOST_TEST(worst < 1e-5);
  BOOST_TEST(spread < 1e-5);
  BOOST_TEST_MESSAGE("DASGD at the checkpoint (t=" << ck->time_seconds() << " s): " << total
                                                   << " gradients, each applied once by each of "
                                                   << n << " nodes; replica vs x0 - sum gamma g: "
                                                   << worst << " (relative); replica spread "
                                                   << spread);
}
BOOST_AUTO_TEST_SUITE_END()
