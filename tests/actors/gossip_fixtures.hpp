#pragma once
/// Checks shared by the D-PSGD and AD-PSGD tests.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "algorithms/adpsgd/adpsgd.hpp"
#include "fixtures.hpp"

namespace atrain::test::gossip {

inline std::vector<std::string> with(std::vector<std::string> base,
                                     const std::vector<std::string>& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

/// prepare_run must throw a spec_error whose text holds every needle.
inline void expect_refused(const std::vector<std::string>& overrides,
                           const std::vector<std::string>& needles) {
  try {
    auto plan = quickstart(overrides);
    BOOST_ERROR("the spec was accepted");
  } catch (const spec_error& e) {
    const std::string what = e.what();
    BOOST_TEST_MESSAGE(what);
    for (const auto& n : needles)
      BOOST_TEST(what.find(n) != std::string::npos, "'" << n << "' missing in: " << what);
  }
}

/// AD-PSGD: the two sides of one exchange (active node, seq) as the
/// workers' ledgers recorded them (model changes, and how often each side
/// applied it).
struct exchange_sides {
  std::vector<double> active, passive;
  int active_count = 0, passive_count = 0;
  std::uint32_t passive_node = 0;
};
using exchange_book = std::map<std::pair<std::uint32_t, std::uint64_t>, exchange_sides>;

/// Moves every worker's new exchange ledger entries into `book`.
inline void harvest_exchanges(const run_probe& probe, exchange_book& book) {
  for (std::uint32_t i = 0; i < probe.workers.size(); ++i)
    for (auto& e : adpsgd_take_exchanges(probe.workers[i])) {
      auto& s = book[{e.active, e.seq}];
      s.passive_node = e.passive;
      if (i == e.active) {
        ++s.active_count;
        s.active = std::move(e.delta);
      } else {
        BOOST_TEST(i == e.passive);
        ++s.passive_count;
        s.passive = std::move(e.delta);
      }
    }
}

/// Runs the plan (a config's target run): it must reach its target and stop there.
inline void expect_target(const std::string& what, std::shared_ptr<const run_plan> plan) {
  auto report = run_experiment(std::move(plan));
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->stop_reason() == "target accuracy reached");
  BOOST_REQUIRE(report->has_time_to_target());
  BOOST_TEST_MESSAGE(what << ": time to " << report->target_accuracy() << " = "
                          << report->time_to_target() << " s virtual, " << report->gradients_total()
                          << " gradients, accuracy " << report->final().test_accuracy());
}

/// A REAL-clock run (threaded scheduler): ends without error and its
/// evaluations reach the target.
inline void expect_target_real(std::shared_ptr<const run_plan> plan) {
  auto report = run_experiment(std::move(plan));
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->clock() == "REAL");
  BOOST_TEST(report->has_time_to_target());
  BOOST_TEST(report->gradients_total() > 0u);
  BOOST_TEST_MESSAGE(report->algorithm() << " real clock: target at " << report->time_to_target()
                                         << " s, " << report->gradients_total() << " gradients");
}

/// Same seed twice: identical trace and report; another seed: a different trace.
inline void expect_replay(const std::vector<std::string>& overrides) {
  test::expect_replay([&](std::uint64_t seed) {
    return quickstart(with(overrides, {"seed=" + std::to_string(seed)}));
  });
}

/// Sends five bad packets to node 1's worker mid-run: an unknown sender, a
/// wrong size, a NaN, an unknown stream (all on stream `kind`), and one that is
/// well formed but breaks the protocol (`protocol_kind`, `protocol_seq`). All
/// five must be counted as rejected and none applied.
inline void expect_malformed_rejected(std::shared_ptr<const run_plan> plan, std::uint32_t kind,
                                      std::uint32_t protocol_kind, std::uint64_t protocol_seq,
                                      const std::vector<std::uint64_t>& future_seqs = {}) {
  auto probe = std::make_shared<run_probe>();
  run_options opts;
  opts.probe = probe;
  const std::size_t dim = plan->dim();
  const std::uint32_t neighbour = plan->topo->g_r.out(1).front();
  virtual_run run{plan, opts};
  for (int i = 0; i < 2000 && run.step(); ++i) {
  }
  BOOST_REQUIRE(probe->workers.size() > 1u);
  std::vector<packet> bad(5);
  for (auto& p : bad) {
    p.from = neighbour;
    p.to = 1;
    p.kind = kind;
    p.seq = 1;
    p.f = float_blob{std::vector<float>(dim, 0.f)};
  }
  bad[0].from = 99;
  bad[1].f = float_blob{std::vector<float>(dim + 1, 0.f)};
  bad[2].f = float_blob{std::vector<float>(dim, std::nanf(""))};
  bad[3].kind = 77;
  bad[4].kind = protocol_kind;
  bad[4].seq = protocol_seq;
  // Well formed, from a real neighbour, numbered from the future.
  for (auto seq : future_seqs) {
    bad.push_back(bad[1]);
    bad.back().f = float_blob{std::vector<float>(dim, 0.f)};
    bad.back().seq = seq;
  }
  auto target = caf::actor_cast<caf::actor>(probe->workers[1]);
  for (auto& p : bad)
    caf::anon_send(target, deliver_atom::value, p);
  target = nullptr;
  auto report = run.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->packets_rejected() == bad.size());
  BOOST_TEST(std::isfinite(report->final().train_loss()));
}

}  // namespace atrain::test::gossip
