/// R-FAST over coded links (link.codec, issue 19): the tracker mass stays
/// conserved after every event whatever the codec loses, the bytes fall, and
/// bad coded packets are refused.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "algorithms/rfast/rfast.hpp"
#include "atrain/kernels/codec.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;

BOOST_AUTO_TEST_SUITE(rfast_codec)

BOOST_AUTO_TEST_CASE(
  coded_links_conserve_mass_after_every_event_under_loss_duplication_reordering) {
  for (const char* codec : {"{kind: INT8 error_feedback: true}", "{kind: FP16}",
                            "{kind: TOPK topk_fraction: 0.1 resync_every: 8}"}) {
    for (double loss : {0.0, 0.3}) {
      auto plan = t::quickstart(t::small_task(
        {"link.loss=" + std::to_string(loss), "link.duplicate=0.2", "link.reorder=0.3",
         "link.reorder_delay_seconds=0.02", std::string{"link.codec="} + codec}));
      std::size_t checks = 0;
      double worst = 0;
      const auto report = t::run_checking_mass(plan, checks, worst);
      BOOST_TEST_MESSAGE(codec << " loss " << loss << ": " << checks << " checks, worst residual "
                               << worst << ", bytes/gradient " << t::bytes_per_gradient(report));
      BOOST_TEST(report.error().empty(), report.error());
      BOOST_TEST(checks > 1000u);
      BOOST_TEST(worst < 1e-10);
      BOOST_TEST(report.mass_residual() < 1e-10);
      BOOST_TEST(report.packets_rejected() == 0u);
      BOOST_TEST(std::isfinite(report.final().train_loss()));
    }
  }
}

BOOST_AUTO_TEST_CASE(the_shipped_int8_spec_reaches_the_target_with_a_third_of_the_bytes) {
  // config/beyond/rfast_int8.textproto against the same spec with
  // `link.codec={}`: both reach the quickstart target; the coded run's
  // bytes per gradient (models 4 -> ~1 byte a value, sums 8 -> ~1 with an
  // exact one every 16) are at most 0.35x the raw run's.
  const auto raw_run = atrain::run_experiment(
    t::config("beyond/rfast_int8.textproto", {"progress=false", "link.codec={}"}));
  const auto int8_run =
    atrain::run_experiment(t::config("beyond/rfast_int8.textproto", {"progress=false"}));
  BOOST_REQUIRE(raw_run);
  BOOST_REQUIRE(int8_run);
  const auto& raw = *raw_run;
  const auto& int8 = *int8_run;
  BOOST_TEST(raw.stop_reason() == "target accuracy reached");
  BOOST_TEST(int8.stop_reason() == "target accuracy reached");
  const double ratio = t::bytes_per_gradient(int8) / t::bytes_per_gradient(raw);
  BOOST_TEST_MESSAGE("bytes per gradient: raw " << t::bytes_per_gradient(raw) << ", int8 "
                                                << t::bytes_per_gradient(int8) << " (" << ratio
                                                << "x); time to target raw " << raw.time_to_target()
                                                << " s, int8 " << int8.time_to_target() << " s");
  BOOST_TEST(ratio <= 0.35);
  BOOST_TEST(ratio > 0.1);  // the exact sums and headers are still paid
  BOOST_TEST(int8.mass_residual() < 1e-10);
}

// Under INT8 models travel as values, under TOPK as replicas (running-sum
// messages): the forged messages below are refused either way.
BOOST_DATA_TEST_CASE(malformed_coded_packets_are_rejected_and_counted_never_applied,
                     boost::unit_test::data::make({"INT8", "TOPK"}), kind) {
  auto plan = t::quickstart(t::small_task({std::string{"link.codec={kind: "} + kind + "}"}));
  const std::size_t dim = plan->dim();
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  atrain::virtual_run run(plan, opts);
  for (int i = 0; i < 3000 && run.step(); ++i) {
  }
  BOOST_REQUIRE(probe->buffers.size() == 6u);
  auto target = caf::actor_cast<caf::actor>(probe->buffers[1]);
  const auto in_c = plan->topo->g_c.in(1);
  const auto in_r = plan->topo->g_r.in(1);
  BOOST_REQUIRE(!in_c.empty());
  BOOST_REQUIRE(!in_r.empty());
  // Models travel as replicas and sums as running sums: both are running-sum
  // messages (a header, then a codec blob or float64 values).
  const atrain::codec::codec_config int8{atrain::codec::codec_kind::int8, 256, 0.01, false};
  std::vector<double> v(dim + 1, 0.5);
  atrain::codec::running_sum_sender fits(int8, dim, 16), too_long(int8, dim + 1, 16);
  const auto good = fits.encode(v.data(), true);
  std::vector<atrain::packet> bad(6);
  bad[0].from = in_r[0];  // a model message cut short
  bad[0].kind = atrain::rfast_model;
  bad[0].seq = 100;  // not from the future: refused for its bytes
  bad[0].coded =
    atrain::blob<std::uint8_t>{std::vector<std::uint8_t>(good.begin(), good.end() - 1)};
  bad[1] = bad[0];  // a model of another dimension
  bad[1].coded = atrain::blob<std::uint8_t>{too_long.encode(v.data(), true)};
  bad[2].from = in_c[0];  // a running sum with a bad header
  bad[2].kind = atrain::rfast_mass;
  bad[2].seq = 100;
  bad[2].scalars = {1.0};
  bad[2].coded = atrain::blob<std::uint8_t>{std::vector<std::uint8_t>(40, 7)};
  bad[3] = bad[2];  // raw doubles beside coded bytes
  bad[3].coded = atrain::blob<std::uint8_t>{good};
  bad[3].d = atrain::double_blob{std::vector<double>(dim, 1.0)};
  // An exact message numbered `seq` (bytes 8-15, its base at 16-23).
  const auto numbered = [](std::vector<std::uint8_t> m, std::uint64_t seq) {
    for (int b = 0; b < 8; ++b) {
      m[8 + b] = static_cast<std::uint8_t>(seq >> (8 * b));
      m[16 + b] = static_cast<std::uint8_t>((seq - 1) >> (8 * b));
    }
    return m;
  };
  bad[4] = bad[0];  // a model past float's range, newer than any honest one
  std::vector<double> huge(dim, 1e300);
  atrain::codec::running_sum_sender overflow(int8, dim, 16);
  bad[4].from = in_r.back();
  bad[4].seq = 1000;  // never from the future (1024 + rate x now)
  bad[4].coded = atrain::blob<std::uint8_t>{numbered(overflow.encode(huge.data(), true), 1000)};
  bad[5] = bad[0];  // a message numbered above its packet
  bad[5].coded = atrain::blob<std::uint8_t>{numbered(good, 101)};
  for (auto& p : bad)
    caf::anon_send(target, atrain::deliver_atom::value, p);
  double worst = 0;
  while (run.step()) {
    bool all = true;
    for (const auto* tr : probe->states<atrain::rfast_tracker>())
      all = all && tr != nullptr;
    if (all)
      worst = std::max(worst, atrain::mass_residual(probe->states<atrain::rfast_tracker>()));
  }
  const auto report = run.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->packets_rejected() == 6u);
  BOOST_TEST(worst < 1e-10);
  BOOST_TEST(std::isfinite(report->final().train_loss()));
}

BOOST_AUTO_TEST_CASE(a_codec_is_refused_where_it_does_not_apply) {
  BOOST_TEST(t::quickstart_refusal({"link.codec={kind: INT8 block: 0}"}).find("link.codec.block") !=
             std::string::npos);
  BOOST_TEST(t::quickstart_refusal({"link.codec={kind: FP16 block: 64}"})
               .find("link.codec.block: is for kind INT8") != std::string::npos);
  BOOST_TEST(t::quickstart_refusal({"link.codec={kind: TOPK topk_fraction: 1.5}"})
               .find("link.codec.topk_fraction") != std::string::npos);
  BOOST_TEST(t::quickstart_refusal({"link.codec={error_feedback: true}"})
               .find("link.codec: sets options but no kind") != std::string::npos);
  BOOST_TEST(
    t::quickstart_refusal({"algorithm.sgp={step_size: 2}", "link.codec={kind: INT8}"})
      .find("link.codec: this algorithm does not code its packets") != std::string::npos);
  BOOST_TEST(t::quickstart_refusal({"link.codec={}"}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
