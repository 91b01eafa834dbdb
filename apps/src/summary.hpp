#pragma once
/// The summary `atrain run` prints after a run: what ran, how it stopped,
/// the figures, and what went wrong (faults and their effect, stragglers,
/// quarantined nodes, hosts lost, warnings). A run that lost nodes says so
/// in its last line.
#include <ostream>
#include <string>

#include "atrain.pb.h"

namespace atrain::cli {

/// "812 B", "3.4 kB", "12.3 MB", "4.56 GB" (powers of 1000).
/// x with `digits` decimals.
[[nodiscard]] std::string fixed(double x, int digits);
/// Bytes in human units (B, kB, MB with `mb_digits` decimals, GB).
[[nodiscard]] std::string human_bytes(double bytes, int mb_digits = 1);

/// The nodes the run lost for good (hosts lost, crashes not restarted), as
/// "lost 3 of 8 nodes (host 127.0.0.1:7001 at 4.2 s, node 5 at 6 s)";
/// empty when none.
[[nodiscard]] std::string lost_nodes_line(const proto::RunReport& r);

void print_summary(const proto::RunReport& r, std::ostream& out);

}  // namespace atrain::cli
