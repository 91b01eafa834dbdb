#pragma once
/// R-FAST tests' mass watch: a virtual run stepped one event at a time, the
/// mass invariant checked over the live trackers after every event
/// (rfast_reroot_test.cpp, rfast_join_test.cpp).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "algorithms/rfast/rfast.hpp"
#include "fixtures.hpp"

namespace {

/// What a stepped run saw of the tracker mass: checks per epoch and the worst
/// relative residuals (mass, and phi: sum phi + pending = node count).
struct mass_watch {
  std::map<std::uint32_t, std::size_t> checks;  // epoch -> checks
  double worst = 0;
  double worst_phi = 0;
  std::size_t members_last = 0;  // trackers in the last check
};

/// Steps a virtual run one event at a time. After every event, when the
/// live trackers are all of one epoch and as many as it has members
/// (`members`: epoch -> node count; not during a re-rooting or the
/// shutdown), checks the mass invariant over them; calls `observe` too.
/// Returns the report.
atrain::proto::RunReport
run_watching_mass(std::shared_ptr<const atrain::run_plan> plan,
                  const std::map<std::uint32_t, std::size_t>& members, mass_watch& w,
                  const std::function<void(atrain::run_probe&, double)>& observe = {}) {
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  atrain::virtual_run vr{plan, opts};
  while (vr.step()) {
    if (observe)
      observe(*probe, vr.now_seconds());
    std::vector<const atrain::rfast_tracker*> live;
    for (const auto* tr : probe->states<atrain::rfast_tracker>())
      if (tr != nullptr)
        live.push_back(tr);
    if (live.empty())
      continue;
    const auto epoch = live.front()->epoch();
    bool same = true;
    for (const auto* tr : live)
      same = same && tr->epoch() == epoch;
    if (!same || members.count(epoch) == 0 || live.size() != members.at(epoch))
      continue;  // a re-rooting under way, a loss not yet answered, or the end
    double phi_res = 0;
    const double res = atrain::mass_residual(live, &phi_res);
    w.worst = std::max(w.worst, res);
    w.worst_phi = std::max(w.worst_phi, phi_res / static_cast<double>(live.size()));
    ++w.checks[epoch];
    w.members_last = live.size();
  }
  auto report = vr.run();
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  return *report;
}

}  // namespace
