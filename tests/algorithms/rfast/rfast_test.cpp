/// R-FAST invariants (ALGORITHMS.md §1) on the actor runtime.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "algorithms/rfast/rfast.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;

namespace {

/// A virtual run whose trackers and workers the test can reach, advanced by
/// `events` scheduler steps.
struct probed_run {
  std::shared_ptr<atrain::run_probe> probe = std::make_shared<atrain::run_probe>();
  atrain::virtual_run run;

  probed_run(std::shared_ptr<const atrain::run_plan> plan, int events)
    : run(std::move(plan), options(probe)) {
    for (int i = 0; i < events && run.step(); ++i) {
    }
  }

  static atrain::run_options options(std::shared_ptr<atrain::run_probe> probe) {
    atrain::run_options opts;
    opts.probe = std::move(probe);
    return opts;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(rfast)

BOOST_AUTO_TEST_CASE(mass_is_conserved_after_every_event_under_loss_duplication_reordering) {
  for (const char* variant : {"PHI", "PLAIN"}) {
    for (double loss : {0.0, 0.1, 0.3, 0.5}) {
      auto plan = t::quickstart(t::small_task(
        {"link.loss=" + std::to_string(loss), "link.duplicate=0.2", "link.reorder=0.3",
         "link.reorder_delay_seconds=0.02", std::string{"algorithm.rfast.variant="} + variant,
         std::string{"algorithm.rfast.step_size="} + (variant[1] == 'H' ? "1" : "4")}));
      std::size_t checks = 0;
      double worst = 0;
      auto report = t::run_checking_mass(plan, checks, worst);
      BOOST_TEST_MESSAGE(variant << " loss " << loss << ": " << checks << " checks, worst residual "
                                 << worst << ", dropped " << report.packets_dropped());
      BOOST_TEST(checks > 1000u);
      BOOST_TEST(report.error().empty());
      if (loss > 0)
        BOOST_TEST(report.packets_dropped() > 0u);
      else
        BOOST_TEST(report.packets_dropped() == 0u);
      BOOST_TEST(report.mass_residual() < 1e-10);
      BOOST_TEST(std::isfinite(report.final().train_loss()));
    }
  }
}

BOOST_AUTO_TEST_CASE(bandwidth_bound_links_keep_the_newest_packet_and_conserve_mass) {
  // ~1.5 kB per wake per link every ~10 ms against 40 kB/s: packets must wait,
  // and a newer one replaces the one still waiting (depth one per stream).
  auto plan = t::quickstart(t::small_task(
    {"link.bandwidth_bytes_per_second=40000", "link.latency_seconds=0.001", "link.loss=0.1"}));
  std::size_t checks = 0;
  double worst = 0;
  auto report = t::run_checking_mass(plan, checks, worst);
  BOOST_TEST(report.packets_replaced() > 0u);
  BOOST_TEST(report.mass_residual() < 1e-10);
  BOOST_TEST(worst < 1e-10);
  BOOST_TEST_MESSAGE("replaced " << report.packets_replaced() << ", dropped "
                                 << report.packets_dropped() << ", residual " << worst);
}

BOOST_AUTO_TEST_CASE(mass_check_detects_a_lost_unit_of_mass) {
  // The invariant check itself must be able to fail: remove mass from one
  // account and the residual must show it.
  probed_run r{t::quickstart(t::small_task({})), 5000};
  std::vector<atrain::mass_account> accounts;
  for (const auto* tr : r.probe->states<atrain::rfast_tracker>()) {
    BOOST_REQUIRE(tr != nullptr);
    accounts.push_back(tr->account());
  }
  BOOST_TEST(atrain::mass_residual(accounts) < 1e-10);
  auto z = accounts[2].z.vec();
  z[0] += 1.0;
  accounts[2].z = atrain::double_blob{z};
  BOOST_TEST(atrain::mass_residual(accounts) > 1e-3);
}

BOOST_AUTO_TEST_CASE(same_seed_same_trace_other_seed_differs) {
  t::expect_replay([](std::uint64_t seed) {
    return t::quickstart(t::small_task({"seed=" + std::to_string(seed), "link.loss=0.1",
                                        "link.reorder=0.2", "link.reorder_delay_seconds=0.01"}));
  });
}

BOOST_AUTO_TEST_CASE(a_pair_without_common_root_is_refused_before_any_actor) {
  // G_R: 0 -> 1 -> 2 (only 0 reaches all); G_C: 0 -> 1 -> 2 (all reach only 2).
  std::vector<std::string> o = t::small_task(
    {"topology.builder=EXPLICIT", "nodes=3", "topology.r_edges=[{from: 0 to: 1}, {from: 1 to: 2}]",
     "topology.c_edges=[{from: 0 to: 1}, {from: 1 to: 2}]"});
  try {
    auto plan = t::quickstart(o);
    BOOST_ERROR("a topology without common root was accepted");
  } catch (const atrain::spec_error& e) {
    const std::string what = e.what();
    BOOST_TEST_MESSAGE(what);
    BOOST_TEST(what.find("common root") != std::string::npos);
    BOOST_TEST(what.find("topology") != std::string::npos);
    BOOST_TEST(what.find("--set topology") != std::string::npos);  // the edges came from --set
  }
}

BOOST_AUTO_TEST_CASE(malformed_packets_are_rejected_and_counted_never_applied) {
  probed_run r{t::quickstart(t::small_task({})), 3000};
  BOOST_REQUIRE(r.probe->buffers.size() == 6u);
  auto target = caf::actor_cast<caf::actor>(r.probe->buffers[1]);
  const std::size_t dim = r.run.context().plan->dim();
  std::vector<atrain::packet> bad(6);
  bad[0].from = 99;  // unknown sender
  bad[0].kind = atrain::rfast_model;
  bad[0].seq = 1;
  bad[0].f = atrain::float_blob{std::vector<float>(dim, 0.f)};
  bad[1].from = 0;  // wrong size
  bad[1].kind = atrain::rfast_model;
  bad[1].seq = 1u << 30;
  bad[1].f = atrain::float_blob{std::vector<float>(dim + 1, 0.f)};
  bad[2] = bad[1];  // NaN payload
  bad[2].f = atrain::float_blob{std::vector<float>(dim, std::nanf(""))};
  bad[3].from = 0;  // mass packet of the wrong size
  bad[3].kind = atrain::rfast_mass;
  bad[3].seq = 1u << 30;
  bad[3].d = atrain::double_blob{std::vector<double>(3, 1.0)};
  bad[3].scalars = {1.0};
  bad[4] = bad[1];  // unknown stream
  bad[4].kind = 77;
  bad[5] = bad[3];  // mass packet with an infinity
  bad[5].d = atrain::double_blob{std::vector<double>(dim, INFINITY)};
  for (auto& p : bad)
    caf::anon_send(target, atrain::deliver_atom::value, p);
  double worst = 0;
  while (r.run.step()) {
    bool all = true;
    for (const auto* tr : r.probe->states<atrain::rfast_tracker>())
      all = all && tr != nullptr;
    if (all)
      worst = std::max(worst, atrain::mass_residual(r.probe->states<atrain::rfast_tracker>()));
  }
  auto report = r.run.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->packets_rejected() == 6u);
  BOOST_TEST(worst < 1e-10);
  BOOST_TEST(std::isfinite(report->final().train_loss()));
}

BOOST_AUTO_TEST_CASE(sequence_numbers_from_the_future_are_rejected_and_the_stream_goes_on) {
  // Well formed, from real in-neighbours, but numbered 2^40: kept as the
  // newest, they would make buffer 1 ignore every later packet of node j.
  probed_run r{t::quickstart(t::small_task({})), 3000};
  const auto& topo = *r.run.context().plan->topo;
  const std::uint32_t j = topo.g_c.in(1).at(0);
  const std::uint32_t m = topo.g_r.in(1).at(0);
  const std::size_t dim = r.run.context().plan->dim();
  auto seq_from = [&](std::uint32_t node) {
    for (const auto& nb : r.probe->states<atrain::rfast_tracker>().at(1)->in_c())
      if (nb.node == node)
        return nb.seq;
    return std::uint64_t{0};
  };
  const auto before = seq_from(j);
  BOOST_REQUIRE(before > 0u);
  const std::uint64_t future = std::uint64_t{1} << 40;
  atrain::packet mass;
  mass.from = j;
  mass.kind = atrain::rfast_mass;
  mass.seq = future;
  mass.d = atrain::double_blob{std::vector<double>(dim, 0.0)};
  mass.scalars = {0.0};
  atrain::packet model;
  model.from = m;
  model.kind = atrain::rfast_model;
  model.seq = future;
  model.f = atrain::float_blob{std::vector<float>(dim, 0.f)};
  auto target = caf::actor_cast<caf::actor>(r.probe->buffers[1]);
  caf::anon_send(target, atrain::deliver_atom::value, mass);
  caf::anon_send(target, atrain::deliver_atom::value, model);
  double worst = 0;
  std::uint64_t last = 0;
  while (r.run.step()) {
    bool all = true;
    for (const auto* tr : r.probe->states<atrain::rfast_tracker>())
      all = all && tr != nullptr;
    if (all) {
      worst = std::max(worst, atrain::mass_residual(r.probe->states<atrain::rfast_tracker>()));
      last = seq_from(j);
    }
  }
  auto report = r.run.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->packets_rejected() == 2u);
  BOOST_TEST(last > before);  // node j's later sums still arrive
  BOOST_TEST(last < future);  // the forged number was never taken
  BOOST_TEST(worst < 1e-10);
  BOOST_TEST(std::isfinite(report->final().train_loss()));
  BOOST_TEST_MESSAGE("future seq: node " << j << "'s stream at buffer 1 went " << before << " -> "
                                         << last);
}

BOOST_AUTO_TEST_CASE(a_crashed_worker_ends_the_run_with_an_error_naming_it) {
  probed_run r{t::quickstart(t::small_task({})), 2000};
  BOOST_REQUIRE(r.probe->workers.size() == 6u);
  caf::anon_send_exit(r.probe->workers[4], caf::exit_reason::kill);
  auto report = r.run.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->stop_reason() == "error");
  BOOST_TEST(report->error().find("node 4 worker") != std::string::npos);
  BOOST_TEST_MESSAGE(report->error());
}

BOOST_AUTO_TEST_SUITE_END()
