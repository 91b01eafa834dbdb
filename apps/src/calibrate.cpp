/// `atrain calibrate` (see calibrate.hpp). The probe is SPEC itself, run
/// with its faults and slowdowns removed (the twin applies them again), so
/// that each node's seconds per gradient is its own compute on this
/// deployment; the round trips are the outbox's (route_timer).
#include "calibrate.hpp"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "atrain/engine.hpp"
#include "launch.hpp"

namespace atrain::cli {

namespace {

/// The probe: REAL clock, a fixed budget, no target stop, no faults.
void make_probe(loaded_spec& ls, double seconds) {
  auto& s = ls.spec;
  s.set_clock(proto::REAL);
  s.mutable_stop()->set_time_seconds(seconds);
  s.mutable_stop()->set_gradients(0);
  s.mutable_stop()->set_stop_at_target(false);
  s.clear_faults();
  s.mutable_cost()->clear_slowdown();
  s.clear_checkpoint();
}

[[nodiscard]] double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// When the probe's nodes began computing: the gradient count of the first
/// evaluation that saw any, extrapolated back at the rate up to the next
/// (the evaluations' times only bound it; 0 without two such evaluations).
[[nodiscard]] double start_up(const proto::RunReport& r) {
  const auto& m = r.metrics();
  for (int i = 0; i + 1 < m.size(); ++i) {
    const auto& a = m[i];
    const auto& b = m[i + 1];
    if (a.gradients() == 0 || b.gradients() <= a.gradients() ||
        !(b.time_seconds() > a.time_seconds()))
      continue;
    const double rate =
      static_cast<double>(b.gradients() - a.gradients()) / (b.time_seconds() - a.time_seconds());
    return std::max(0.0, a.time_seconds() - static_cast<double>(a.gradients()) / rate);
  }
  return 0;
}

/// SPEC as a virtual twin of the probed deployment, and the comment lines
/// saying what was measured; an empty spec name with `why` on failure.
struct twin {
  proto::ExperimentSpec spec;
  std::ostringstream notes;
  std::string why;
};

/// cost.message_seconds from the probe: the senders' wall seconds coding a
/// packet before it left (wire[].code_seconds over wire[].packets, the
/// routes between processes). The twin holds a node's packets that long
/// one after another; the rest of a message's cost (serializing, TCP, the
/// receiver's decoding and answer) is in the measured round trip, hence in
/// link.latency_seconds, and the CPU it takes from the gradients is in the
/// matched tau.
[[nodiscard]] double message_cost(const proto::RunReport& r, std::ostringstream& notes) {
  double coding = 0;
  std::uint64_t packets = 0;
  for (const auto& n : r.per_node())
    for (const auto& w : n.wire()) {
      coding += w.code_seconds();
      packets += w.packets();
    }
  const double cost = packets ? coding / static_cast<double>(packets) : 0.0;
  notes << "# cost.message_seconds: " << coding << " s coding " << packets
        << " packets between processes before they left (" << cost * 1e6 << " us each)\n";
  return cost;
}

twin make_twin(const calibrate_args& a, const loaded_spec& original, const proto::RunReport& r) {
  const double seconds = a.seconds;
  twin t;
  t.spec = original.spec;
  auto& s = t.spec;
  const auto nodes = s.nodes();
  std::vector<double> tau(nodes, 0.0);
  t.notes << std::setprecision(4);
  for (const auto& n : r.per_node()) {
    if (n.node() >= nodes)
      continue;
    tau[n.node()] = n.seconds_per_gradient();
    t.notes << "# node " << n.node() << ": " << n.gradients() << " gradients, "
            << n.seconds_per_gradient() * 1e3 << " ms each (" << n.gradient_cpu_seconds()
            << " CPU s of its process's " << n.process_cpu_seconds() << ")\n";
  }
  for (std::uint32_t i = 0; i < nodes; ++i)
    if (!(tau[i] > 0)) {
      t.why = "node " + std::to_string(i) + " computed no gradient in the " +
              std::to_string(seconds) + " s probe: lengthen it (--seconds)";
      return t;
    }
  std::vector<double> trips;
  for (const auto& n : r.per_node())
    for (const auto& w : n.wire())
      if (w.round_trip_seconds() > 0) {
        trips.push_back(w.round_trip_seconds());
        t.notes << "# route " << n.node() << " -> " << w.to() << " (" << w.sender()
                << "): round trip " << w.round_trip_seconds() * 1e3 << " ms, " << w.packets()
                << " packets\n";
      }
  s.set_clock(proto::VIRTUAL);
  s.set_name(s.name() + "_twin");
  s.clear_deploy();
  auto* cost = s.mutable_cost();
  cost->clear_tau_per_node();
  for (double x : tau)
    cost->add_tau_per_node(x);
  cost->set_tau_seconds(median(tau));
  cost->set_real_min_seconds(0);  // folded into tau
  cost->set_message_seconds(message_cost(r, t.notes));
  const double start = start_up(r);
  cost->set_start_seconds(start);
  t.notes << "# cost.start_seconds: the nodes began computing at ~" << start
          << " s (data loaded, hosts connected; extrapolated from the first evaluations)\n";
  const double latency = median(trips) / 2;
  s.mutable_link()->set_latency_seconds(latency);
  if (latency > 0)  // the outbox's flow control between processes, in the twin
    s.mutable_link()->set_window(cross_process_window);
  t.notes << "# link.latency_seconds: half the median round trip"
          << (trips.empty() ? " (no route crossed processes: 0)" : "") << "; bandwidth, loss "
          << "and cost.jitter kept from the spec (the probe measures means only)\n";
  // Absolute data paths: the twin may be written anywhere.
  auto* d = s.mutable_dataset();
  for (auto* p : {d->mutable_train_path(), d->mutable_train_labels_path(), d->mutable_test_path(),
                  d->mutable_test_labels_path()})
    if (!p->empty())
      *p = std::filesystem::absolute(resolve_path(original, *p)).lexically_normal().string();
  return t;
}

/// The twin run here like the probe (its budget, no faults), on the virtual
/// clock; its report, or none when it failed.
std::optional<proto::RunReport> run_twin(const calibrate_args& a, const proto::ExperimentSpec& spec,
                                         const std::string& out) {
  parsed p;
  p.spec = a.run.spec;  // loaded, then replaced by the twin (absolute paths)
  p.overrides = a.run.overrides;
  p.out = out;
  p.progress = false;
  p.quiet = true;  // a check, not the user's run
  p.edit_spec = [&spec, &a](loaded_spec& ls) {
    ls.spec = spec;
    make_probe(ls, a.seconds);
    ls.spec.set_clock(proto::VIRTUAL);
  };
  std::optional<proto::RunReport> report;
  p.take_report = [&report](const proto::RunReport& r) { report = r; };
  const int status = run(p);
  if (status != 0 || !report || !report->error().empty())
    return std::nullopt;
  return report;
}

/// One node's search for the tau at which its twin takes the probe's
/// seconds per gradient: a secant step on the last two twin runs (the first
/// step assumes one twin second per tau second), kept inside the bracket
/// the runs found so far (its geometric middle otherwise). A node's cycle
/// is tau plus what it waits for, and a synchronous step may wait for its
/// exchange whatever tau is: the cycle is flat in tau below that, so the
/// slope is bounded below (a multiplicative scaling of tau converged too
/// slowly: D-PSGD's twin was still 1.5x fast after two rounds).
struct tau_search {
  double tau = 0, last_tau = 0, last_cycle = 0, lo = 0, hi = 0;  // 0: not yet
  [[nodiscard]] double next(double cycle, double target) {
    (cycle < target ? lo : hi) = tau;
    double slope = 1;
    if (last_tau > 0 && tau != last_tau)
      slope = std::clamp((cycle - last_cycle) / (tau - last_tau), 0.05, 1.0);
    double t = tau + (target - cycle) / slope;
    if ((lo > 0 && t <= lo) || (hi > 0 && t >= hi))
      t = lo > 0 && hi > 0 ? std::sqrt(lo * hi) : (lo > 0 ? 2 * lo : hi / 2);
    last_tau = tau;
    last_cycle = cycle;
    return tau = t;
  }
};

/// Each node's tau searched (tau_search) so that the twin computes as many
/// gradients in the probe's budget as the probe did: on the real clock a
/// node's worker also waits for messaging work and for a core (shared
/// cores), which the measured compute misses. Four twin runs; the seconds
/// per gradient are each run's after its start-up. False when a twin run failed.
[[nodiscard]] bool match_rates(const calibrate_args& a, const proto::RunReport& real,
                               const std::string& out, twin& t) {
  auto* cost = t.spec.mutable_cost();
  const double start = cost->start_seconds();
  auto cycle = [start](const proto::RunReport& r, const proto::NodeReport& n) {
    return (r.duration_seconds() - start) / static_cast<double>(n.gradients());
  };
  std::vector<tau_search> search(static_cast<std::size_t>(cost->tau_per_node_size()));
  for (std::size_t k = 0; k < search.size(); ++k)
    search[k].tau = cost->tau_per_node(static_cast<int>(k));
  for (int round = 0; round < 4; ++round) {
    const auto rep = run_twin(a, t.spec, out);
    if (!rep) {
      t.why = "the twin's check run (" + out + ") failed";
      return false;
    }
    for (const auto& n : real.per_node())
      for (const auto& m : rep->per_node())
        if (m.node() == n.node() && n.node() < search.size() && n.gradients() > 0 &&
            m.gradients() > 0)
          cost->set_tau_per_node(static_cast<int>(n.node()),
                                 search[n.node()].next(cycle(*rep, m), cycle(real, n)));
  }
  std::vector<double> taus(cost->tau_per_node().begin(), cost->tau_per_node().end());
  cost->set_tau_seconds(median(taus));
  t.notes << "# cost.tau_per_node: searched so that the twin computes each node's gradients of\n"
          << "# the probe in its budget (the compute above leaves out messaging and waiting for\n"
          << "# a core):";
  for (double x : taus)
    t.notes << " " << x * 1e3;
  t.notes << " ms\n";
  return true;
}

}  // namespace

int calibrate(const calibrate_args& a) {
  loaded_spec original;
  try {
    original = load_spec(a.run.spec, a.run.overrides);
  } catch (const spec_error& e) {
    std::cerr << "atrain calibrate: invalid spec:\n" << e.what() << "\n";
    return 2;
  }
  parsed probe = a.run;
  probe.overrides.push_back("clock=REAL");  // launch checks the clock before the edit
  probe.edit_spec = [s = a.seconds](loaded_spec& ls) { make_probe(ls, s); };
  std::optional<proto::RunReport> report;
  probe.take_report = [&report](const proto::RunReport& r) { report = r; };
  if (probe.out.empty())
    probe.out = a.out + ".probe";
  std::cout << "calibrate: probing " << a.run.spec << " for " << a.seconds
            << " s on the REAL clock (" << probe.out << ")\n"
            << std::flush;
  const int status = a.local > 0 ? launch(launch_args{probe, a.local}) : run(probe);
  if (!report || !report->error().empty()) {
    std::cerr << "atrain calibrate: the probe failed (exit status " << status << ")"
              << (report ? ": " + report->error() : std::string{}) << "\n";
    return status == 2 ? 2 : 1;
  }
  auto t = make_twin(a, original, *report);
  if (t.why.empty()) {
    std::cout << "calibrate: matching the twin's gradient rates to the probe's\n" << std::flush;
    (void)match_rates(a, *report, probe.out + "/twin_check", t);
  }
  if (!t.why.empty()) {
    std::cerr << "atrain calibrate: " << t.why << "\n";
    return 1;
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(t.spec, &text);
  std::ofstream out{a.out};
  out << "# The virtual twin of " << a.run.spec << " (atrain calibrate: a " << a.seconds
      << " s probe on the REAL clock";
  if (a.local > 0)
    out << ", " << a.local << " local node processes";
  else if (!a.run.hosts.empty())
    out << ", " << a.run.hosts.size() << " hosts";
  out << ")\n" << t.notes.str() << text;
  if (!out) {
    std::cerr << "atrain calibrate: " << a.out << ": cannot write\n";
    return 1;
  }
  std::cout << "calibrate: wrote " << a.out << " (run it with `atrain run " << a.out << "`)\n";
  return 0;
}

}  // namespace atrain::cli
