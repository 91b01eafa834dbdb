/// Property test of fault injection and supervision: 50 fault schedules drawn
/// from a seeded generator, each injected into a small R-FAST run. Every run
/// must end (no hang: the virtual clock runs out of events or hits the time
/// budget), without an engine error, with the tracker mass conserved after
/// every event (faults never touch the gradient buffers' accounts, except a
/// whole node lost for good, which is not drawn here), and a finite model.
/// And 40 schedules whose crashes all restart, checkpointed and resumed: the
/// resumed run ends exactly like the uninterrupted one.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <sstream>

#include "atrain/kernels/rng.hpp"
#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;

namespace {

constexpr std::uint32_t nodes = 6;
constexpr double horizon = 0.6;  // virtual seconds per run

/// One random window [from, to) inside the run, as text-format fields.
std::string window(atrain::rng& gen) {
  const double from = gen.uniform(0, horizon);
  const double to = gen.chance(0.2) ? 0.0 : from + gen.uniform(0.01, horizon);
  std::ostringstream os;
  os << "from_seconds: " << from << " to_seconds: " << to;
  return os.str();
}

std::uint32_t node(atrain::rng& gen) {
  return static_cast<std::uint32_t>(gen.uniform(0, nodes)) % nodes;
}

/// A random schedule: 1-4 faults of any kind but lost whole nodes (which
/// legitimately take their share of the mass with them: tested apart).
/// `restart_all`: every crash restarts, within `restart_max` seconds.
std::vector<std::string> random_faults(atrain::rng& gen, bool restart_all = false,
                                       double restart_max = 0.3) {
  std::vector<std::string> straggle, partition, burst, spike, scaled, crash;
  const int count = 1 + static_cast<int>(gen.uniform(0, 4));
  for (int k = 0; k < count; ++k) {
    std::ostringstream f;
    switch (static_cast<int>(gen.uniform(0, 6))) {
      case 0:
        f << "{node: " << node(gen) << " factor: " << gen.uniform(1, 8) << " " << window(gen)
          << "}";
        straggle.push_back(f.str());
        break;
      case 1: {
        const auto a = node(gen), b = node(gen);
        f << "{side_a: [" << a << (b != a ? ", " + std::to_string(b) : std::string{}) << "] "
          << window(gen) << "}";
        partition.push_back(f.str());
        break;
      }
      case 2:
        f << "{loss: " << gen.uniform(0, 1) << " " << window(gen) << "}";
        burst.push_back(f.str());
        break;
      case 3:
        f << "{extra_latency_seconds: " << gen.uniform(0.001, 0.1) << " " << window(gen) << "}";
        spike.push_back(f.str());
        break;
      case 4:
        if (gen.chance(0.5))
          f << "{node: " << node(gen) << " kind: NOT_FINITE " << window(gen) << "}";
        else
          f << "{node: " << node(gen) << " kind: SCALED factor: " << gen.uniform(-5, 5) << " "
            << window(gen) << "}";
        scaled.push_back(f.str());
        break;
      default:
        f << "{node: " << node(gen) << " at_seconds: " << gen.uniform(0, horizon);
        if (gen.chance(0.7) || restart_all)
          f << " restart_after_seconds: " << gen.uniform(0.01, restart_max);
        f << "}";
        crash.push_back(f.str());
        break;
    }
  }
  std::vector<std::string> o;
  auto add = [&](const char* kind, const std::vector<std::string>& xs) {
    if (xs.empty())
      return;
    std::string list = std::string{"faults."} + kind + "=[";
    for (std::size_t i = 0; i < xs.size(); ++i)
      list += (i ? ", " : "") + xs[i];
    o.push_back(list + "]");
  };
  add("straggle", straggle);
  add("partition", partition);
  add("loss_burst", burst);
  add("delay_spike", spike);
  add("bad_gradients", scaled);
  add("crash", crash);
  return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fault_property)

BOOST_AUTO_TEST_CASE(fifty_random_schedules_end_cleanly_and_keep_the_mass) {
  atrain::rng gen{20261129};
  std::size_t total_checks = 0;
  int crashes = 0;
  for (int run = 0; run < 50; ++run) {
    auto o = random_faults(gen);
    std::string what;
    for (const auto& s : o)
      what += s + " ";
    for (const auto& s : o)
      crashes += s.rfind("faults.crash", 0) == 0 ? 1 : 0;
    o.insert(o.end(),
             {"dataset.max_train_samples=2000", "dataset.max_test_samples=500",
              "nodes=" + std::to_string(nodes), "stop.stop_at_target=false",
              "stop.time_seconds=" + std::to_string(horizon), "eval.period_seconds=0.2",
              "link.latency_seconds=0.002", "progress=false", "seed=" + std::to_string(run + 1)});
    std::size_t checks = 0;
    double worst = 0;
    auto r = t::run_checking_mass(t::quickstart(o), checks, worst);
    BOOST_TEST(r.error().empty(), "run " << run << " (" << what << "): " << r.error());
    BOOST_TEST(r.stop_reason() == "time budget spent", "run " << run << ": " << r.stop_reason());
    BOOST_TEST(r.mass_residual() < 1e-10, "run " << run << " (" << what << ")");
    BOOST_TEST(std::isfinite(r.final().train_loss()), "run " << run << " (" << what << ")");
    BOOST_TEST(r.faults_size() >= 1);
    total_checks += checks;
  }
  BOOST_TEST(crashes > 0);
  BOOST_TEST_MESSAGE("50 schedules, " << crashes << " crash faults, " << total_checks
                                      << " mass checks");
}

// Checkpoints through random fault sessions: 40 schedules (every crash
// restarted within 50 ms), each run with checkpoints at 0.2 and 0.4 s
// uninterrupted, stopped after its first and resumed: the resumed run ends
// exactly like the uninterrupted one (models, report, trace hash), however
// the crashes fall around the barriers.
BOOST_FIXTURE_TEST_CASE(random_schedules_with_checkpoints_resume_exactly,
                        atrain::test::ckpt::remove_scratch) {
  namespace ck = atrain::test::ckpt;
  atrain::rng gen{20261130};
  int crashes = 0, waited = 0, fired_before = 0;
  for (int run = 0; run < 40; ++run) {
    auto o = random_faults(gen, true, 0.05);
    std::string what;
    for (const auto& s : o) {
      what += s + " ";
      for (auto at = s.find("at_seconds"); at != std::string::npos;
           at = s.find("at_seconds", at + 1))
        ++crashes;
    }
    o.insert(o.end(), {"dataset.max_train_samples=2000", "dataset.max_test_samples=500",
                       "nodes=" + std::to_string(nodes), "eval.period_seconds=0.2",
                       "link.latency_seconds=0.002", "seed=" + std::to_string(run + 1)});
    const auto tag = "prop" + std::to_string(run);
    BOOST_TEST_CONTEXT("run " << run << " (" << what << ")") {
      ck::expect_resume_equals_uninterrupted("quickstart.textproto", o, 0.2, 0.4, horizon, tag,
                                             0.15);
      const auto file = ck::load(ck::scratch(tag + "_B_1.ckpt"), *t::quickstart(o));
      waited += file->time_seconds() > file->requested_seconds() + 0.02 ? 1 : 0;
      fired_before += file->supervisor().crashes_fired_size();
    }
  }
  BOOST_TEST(crashes > 10);
  BOOST_TEST(fired_before > 0);  // crashes the resumed runs must not inject again
  BOOST_TEST(waited > 0);        // barriers that waited for a restart
  BOOST_TEST_MESSAGE("40 schedules with checkpoints: "
                     << crashes << " crashes, " << fired_before << " before the first barrier, "
                     << waited
                     << " barriers waited for a restart; every resumed run = uninterrupted");
}

BOOST_AUTO_TEST_SUITE_END()
