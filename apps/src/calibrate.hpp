#pragma once
/// `atrain calibrate SPEC [--local N | --hosts ...] --out FILE`: a short
/// probe of SPEC on the REAL clock where it will run (N local node
/// processes, the given hosts, or this process), then FILE: SPEC on the
/// virtual clock with each node's measured seconds per gradient
/// (cost.tau_per_node) and half the routes' median round trip
/// (link.latency_seconds) — a virtual twin of that deployment.
#include <cstddef>
#include <string>

#include "commands.hpp"

namespace atrain::cli {

struct calibrate_args {
  parsed run;             ///< SPEC, --set, deploy flags; run.out: the probe's run directory
  std::size_t local = 0;  ///< > 0: that many local `atrain node` processes
  double seconds = 8;     ///< the probe's budget (run clock)
  std::string out;        ///< the calibrated spec
};

/// 0 when FILE was written; 1 when the probe failed; 2 on a bad spec.
[[nodiscard]] int calibrate(const calibrate_args& a);

}  // namespace atrain::cli
