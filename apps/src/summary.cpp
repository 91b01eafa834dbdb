#include "summary.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <map>
#include <set>
#include <vector>

#include "atrain/actors/algorithm.hpp"

namespace atrain::cli {

namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g s", s);
  return buf;
}

/// Whether a crash record left its node out for good.
bool lost_for_good(const proto::FaultRecord& f) {
  return f.kind() == "crash" && f.effect().find("lost for good") != std::string::npos &&
         f.effect().find("restarted at") == std::string::npos;
}

void print_faults(const proto::RunReport& r, std::ostream& out) {
  for (const auto& f : r.faults()) {
    if (f.kind() == "host_lost")
      continue;  // in "hosts lost"
    out << "fault           " << f.kind() << " " << f.what() << " from "
        << seconds_text(f.from_seconds());
    if (f.has_to_seconds())
      out << " to " << seconds_text(f.to_seconds());
    out << ": " << f.effect() << "\n";
  }
  // One line per host lost, with its nodes.
  std::map<std::string, std::vector<const proto::FaultRecord*>> hosts;
  std::vector<std::string> order;
  for (const auto& f : r.faults())
    if (f.kind() == "host_lost") {
      const auto key = f.host().empty() ? f.what() : f.host();
      if (hosts[key].empty())
        order.push_back(key);
      hosts[key].push_back(&f);
    }
  for (const auto& h : order) {
    const auto& recs = hosts[h];
    out << "host lost       " << h << " at " << seconds_text(recs.front()->from_seconds()) << " ("
        << recs.size() << " node" << (recs.size() > 1 ? "s" : "") << ":";
    for (const auto* f : recs)
      out << " " << f->what().substr(f->what().rfind(' ') + 1);
    out << "): " << recs.front()->effect() << "\n";
  }
  for (const auto& s : r.stragglers()) {
    out << "straggler       node " << s.node() << " detected at "
        << seconds_text(s.detected_seconds()) << ", up to " << fixed(s.slowest_factor(), 1)
        << "x the median seconds per gradient";
    if (s.has_recovered_seconds())
      out << ", recovered at " << seconds_text(s.recovered_seconds());
    out << "\n";
  }
  for (const auto& q : r.quarantined())
    out << "quarantined     node " << q.node() << " since " << seconds_text(q.since_seconds())
        << ": " << q.gradients_refused() << " non-finite gradients refused\n";
}

/// Whether the report's algorithm keeps a mass account (its descriptor says).
bool keeps_mass_account(const std::string& report_name) {
  const auto& all = algorithm_registry();
  return std::any_of(all.begin(), all.end(), [&](const algorithm_descriptor& d) {
    return d.evaluation.mass_residual && report_name == d.name;
  });
}

}  // namespace

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string human_bytes(double b, int mb_digits) {
  if (b >= 1e9)
    return fixed(b / 1e9, 2) + " GB";
  if (b >= 1e6)
    return fixed(b / 1e6, mb_digits) + " MB";
  if (b >= 1e3)
    return fixed(b / 1e3, 1) + " kB";
  return fixed(b, 0) + " B";
}

std::string lost_nodes_line(const proto::RunReport& r) {
  std::set<std::string> nodes;  // "node k"
  std::vector<std::string> what;
  std::set<std::string> hosts_named;
  for (const auto& f : r.faults()) {
    if (f.kind() == "host_lost") {
      nodes.insert(f.what());
      const auto h = f.host().empty() ? f.what() : "host " + f.host();
      if (hosts_named.insert(h).second)
        what.push_back(h + " at " + seconds_text(f.from_seconds()));
    } else if (lost_for_good(f) && nodes.insert(f.what()).second) {
      what.push_back(f.what() + " at " + seconds_text(f.from_seconds()));
    }
  }
  if (nodes.empty())
    return {};
  std::string line =
    "lost " + std::to_string(nodes.size()) + " of " + std::to_string(r.nodes()) + " nodes (";
  for (std::size_t i = 0; i < what.size(); ++i)
    line += (i ? ", " : "") + what[i];
  return line + ")";
}

void print_summary(const proto::RunReport& r, std::ostream& out) {
  out << "algorithm       " << r.algorithm() << " (" << r.clock() << " clock, " << r.nodes()
      << " nodes, seed " << r.seed() << ")\n"
      << "stopped         " << r.stop_reason() << " at t=" << r.duration_seconds() << " s ("
      << fixed(r.wall_seconds(), 2) << " s wall)\n"
      << "evaluated model " << r.evaluated_model() << "\n"
      << "final           train_loss=" << std::setprecision(6) << r.final().train_loss()
      << " test_accuracy=" << r.final().test_accuracy() << " (evaluated at the stop)\n";
  if (r.metrics_size() > 0 && r.best_test_accuracy() > r.final().test_accuracy())
    out << "best            test_accuracy=" << r.best_test_accuracy()
        << " at t=" << r.best_test_accuracy_seconds() << " s\n";
  if (const auto& f = r.final(); f.nodes_evaluated() > 0)
    out << "nodes' own      test_accuracy mean=" << f.node_test_accuracy_mean()
        << " min=" << f.node_test_accuracy_min() << " (node " << f.worst_node()
        << "), train_loss max=" << f.node_train_loss_max() << " (" << f.nodes_evaluated()
        << " nodes scored)\n";
  if (r.target_accuracy() > 0) {
    const auto basis = r.target_basis().empty() ? std::string{"evaluated model"} : r.target_basis();
    out << "time to " << r.target_accuracy() << "  ";
    if (r.has_time_to_target())
      out << r.time_to_target() << " s (" << basis << ": first evaluation at or above it)\n";
    else
      out << "not reached (" << basis << ")\n";
    out << "  sustained     ";
    if (r.has_sustained_time_to_target())
      out << r.sustained_time_to_target() << " s (mean of the last evaluations at or above it "
          << "from then on)\n";
    else
      out << "not sustained\n";
  }
  out << "gradients       " << r.gradients_total() << "\n"
      << "messages        " << r.messages_sent() << " (" << human_bytes(r.bytes_sent()) << ", "
      << r.packets_dropped() << " dropped)\n";
  if (r.wire_packets() > 0)  // multi-host: what crossed between processes
    out << "between hosts   " << r.wire_packets() << " packets (" << human_bytes(r.wire_bytes())
        << "), " << r.packets_merged() << " merged into waiting ones\n";
  out << "staleness       mean " << r.staleness_mean() << ", max " << r.staleness_max() << "\n"
      << "consensus error " << r.consensus_error() << "\n";
  if (r.late_contributions() > 0) {  // straggler_policy SKIP: who joined late, how often
    out << "late gradients  " << r.late_contributions() << " (";
    const char* sep = "";
    for (const auto& n : r.per_node())
      if (n.late_contributions() > 0) {
        out << sep << "node " << n.node() << ": " << n.late_contributions();
        sep = ", ";
      }
    out << ")\n";
  }
  if (keeps_mass_account(r.algorithm()))
    out << "mass residual   " << r.mass_residual() << "\n";
  if (!r.resumed_from().empty())
    out << "resumed from    " << r.resumed_from() << " (taken at t=" << r.resumed_at_seconds()
        << " s)\n";
  for (const auto& c : r.checkpoints())
    out << "checkpoint " << c.number() << "    requested at t=" << c.requested_seconds()
        << " s, taken at t=" << c.taken_seconds() << " s (drain " << c.drain_seconds() << " s) -> "
        << c.file() << " (" << human_bytes(static_cast<double>(c.bytes())) << ")\n";
  out << "trace hash      " << r.trace_hash() << " (" << r.trace_events() << " events)\n";
  print_faults(r, out);
  for (const auto& w : r.warnings())
    out << "warning: " << w << "\n";
  if (!r.error().empty())
    out << "error: " << r.error() << "\n";
  if (const auto lost = lost_nodes_line(r); !lost.empty())
    out << lost << "\n";
}

}  // namespace atrain::cli
