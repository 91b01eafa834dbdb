#include "atrain/actors/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace atrain {

namespace {

/// A count in 4 characters or fewer: 999, 12k, 3.4M, 1.2G.
std::string short_count(double x) {
  char buf[16];
  if (x < 1e3)
    std::snprintf(buf, sizeof buf, "%.0f", x);
  else if (x < 1e6)
    std::snprintf(buf, sizeof buf, x < 1e4 ? "%.1fk" : "%.0fk", x / 1e3);
  else if (x < 1e9)
    std::snprintf(buf, sizeof buf, x < 1e7 ? "%.1fM" : "%.0fM", x / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1fG", x / 1e9);
  return buf;
}

/// Seconds as "12s", "4m05s", "2h03m".
std::string short_duration(double s) {
  char buf[16];
  if (!(s >= 0) || s > 1e6)
    return "?";
  if (s < 10)
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600),
                  static_cast<int>(s / 60) % 60);
  return buf;
}

}  // namespace

/// One line of at most 79 columns, e.g.
/// `VIRT t=12.5/30s wall 3s 1.2k grad/s loss 0.3312 acc 0.8412/0.845 ETA 4s`:
/// the clock, run time against the budget, wall time, gradients per run
/// second, loss, accuracy against the target, and the wall time left by the
/// time or gradient budget (the sooner).
void print_progress(const run_plan& plan, const metric_sample& row, double wall, bool last) {
  const auto& stop = plan.stop;
  const double t = row.time_seconds;
  char budget[24] = "";
  if (stop.time_seconds > 0)
    std::snprintf(budget, sizeof budget, "/%.4g", stop.time_seconds);
  char target[16] = "";
  if (stop.target_accuracy > 0)
    std::snprintf(target, sizeof target, "/%.4g", stop.target_accuracy);
  double left = -1;
  if (stop.time_seconds > 0 && t > 0)
    left = wall * (stop.time_seconds - t) / t;
  if (stop.gradients > 0 && row.gradients > 0) {
    const double by_grads =
      wall * (static_cast<double>(stop.gradients) - static_cast<double>(row.gradients)) /
      static_cast<double>(row.gradients);
    left = left < 0 ? by_grads : std::min(left, by_grads);
  }
  char line[160];
  std::snprintf(line, sizeof line, "%s t=%.4g%ss wall %s %s grad/s loss %.4f acc %.4f%s ETA %s",
                plan.virtual_clock() ? "VIRT" : "REAL", t, budget, short_duration(wall).c_str(),
                short_count(t > 0 ? static_cast<double>(row.gradients) / t : 0).c_str(),
                row.train_loss, row.test_accuracy, target,
                last       ? "done"
                : left < 0 ? "?"
                           : short_duration(std::max(0.0, left)).c_str());
  std::fprintf(stderr, "\r%-79.79s%s", line, last ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace atrain
