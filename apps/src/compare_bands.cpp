/// The band figures' data of `atrain compare` (see compare_bands.hpp).
#include "compare_bands.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "compare.hpp"

namespace atrain::cli {

namespace {

/// One seed's curve: time, test accuracy, training loss, consensus error, and
/// the worst node's own test accuracy (NaN when nodes were not scored).
constexpr std::size_t fields = 5;
using curve = std::vector<std::array<double, fields>>;

std::string number(double x) {
  if (!std::isfinite(x))
    return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream in{line};
  for (std::string c; std::getline(in, c, ',');)
    cells.push_back(c);
  return cells;
}

/// Column k of `c` at time t, linear between evaluations (t within its span).
double at_time(const curve& c, double t, std::size_t k) {
  auto it = std::lower_bound(c.begin(), c.end(), t,
                             [](const std::array<double, fields>& r, double x) { return r[0] < x; });
  if (it == c.end())
    return c.back()[k];
  if (it == c.begin() || (*it)[0] == t)
    return (*it)[k];
  const auto& lo = *(it - 1);
  const auto& hi = *it;
  return lo[k] + (t - lo[0]) / (hi[0] - lo[0]) * (hi[k] - lo[k]);
}

/// bands_NAME.csv of one algorithm's seeds; `positive`: the mean consensus
/// error is above zero somewhere (a line on the log scale); `worst`: the
/// worst node's accuracy is known somewhere (its line is drawn).
std::string band_csv(const std::map<std::uint64_t, curve>& seeds, bool& positive, bool& worst) {
  std::vector<double> times;
  for (const auto& [seed, c] : seeds)
    for (const auto& r : c)
      times.push_back(r[0]);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  std::string csv = "time_seconds,seeds,test_accuracy_mean,test_accuracy_min,test_accuracy_max,"
                    "train_loss_mean,train_loss_min,train_loss_max,consensus_error_mean,"
                    "consensus_error_min,consensus_error_max,worst_node_accuracy_mean,"
                    "worst_node_accuracy_min,worst_node_accuracy_max\n";
  positive = worst = false;
  for (double t : times) {
    std::array<std::vector<double>, fields> xs;
    for (const auto& [seed, c] : seeds)
      if (t >= c.front()[0] && t <= c.back()[0])
        for (std::size_t k = 1; k < fields; ++k)
          xs[k].push_back(at_time(c, t, k));
    csv += number(t) + "," + std::to_string(xs[1].size());
    for (std::size_t k = 1; k < fields; ++k) {
      if (std::any_of(xs[k].begin(), xs[k].end(), [](double x) { return std::isnan(x); })) {
        csv += ",nan,nan,nan";  // a seed without the figure: no statistic
        continue;
      }
      const auto s = summarize(xs[k]);
      const auto [lo, hi] = std::minmax_element(xs[k].begin(), xs[k].end());
      csv += "," + number(s.mean) + "," + number(*lo) + "," + number(*hi);
      positive = positive || (k == 3 && s.mean > 0);
      worst = worst || k == 4;
    }
    csv += "\n";
  }
  return csv;
}

}  // namespace

std::string make_bands(const std::string& curves_csv, const std::vector<std::string>& algorithms,
                       band_files& out) {
  std::istringstream in{curves_csv};
  std::string line;
  if (!std::getline(in, line))
    return "empty";
  const auto header = split(line);
  const char* need[] = {"algorithm",     "seed",       "time_seconds",
                        "test_accuracy", "train_loss", "consensus_error"};
  std::size_t col[6];
  for (int k = 0; k < 6; ++k) {
    const auto it = std::find(header.begin(), header.end(), need[k]);
    if (it == header.end())
      return std::string{"no column "} + need[k];
    col[k] = static_cast<std::size_t>(it - header.begin());
  }
  // Optional (curves.csv of atrain before it): the worst node's accuracy.
  const auto w = std::find(header.begin(), header.end(), "worst_node_accuracy");
  const bool has_worst = w != header.end();
  const auto worst_col = static_cast<std::size_t>(w - header.begin());
  std::map<std::string, std::map<std::uint64_t, curve>> curves;
  while (std::getline(in, line)) {
    const auto cells = split(line);
    if (cells.size() < header.size())
      continue;
    auto num = [&](int k) { return std::strtod(cells[col[k]].c_str(), nullptr); };
    const double worst = has_worst ? std::strtod(cells[worst_col].c_str(), nullptr) : std::nan("");
    curves[cells[col[0]]][std::strtoull(cells[col[1]].c_str(), nullptr, 10)].push_back(
      {num(2), num(3), num(4), num(5), worst});
  }
  std::string names, colours, cons_names, cons_colours, worst_names, worst_colours;
  auto append = [](std::string& list, const std::string& item) {
    list += (list.empty() ? "" : " ") + item;
  };
  for (std::size_t i = 0; i < algorithms.size(); ++i) {
    const auto it = curves.find(algorithms[i]);
    if (it == curves.end())
      continue;  // no run produced data: no line, no legend entry
    for (auto& [seed, c] : it->second)
      std::stable_sort(c.begin(), c.end(),
                       [](const auto& x, const auto& y) { return x[0] < y[0]; });
    bool positive = false, worst = false;
    out.csv[it->first] = band_csv(it->second, positive, worst);
    append(names, it->first);
    append(colours, std::to_string(i + 1));
    if (positive) {
      append(cons_names, it->first);
      append(cons_colours, std::to_string(i + 1));
    }
    if (worst) {
      append(worst_names, it->first);
      append(worst_colours, std::to_string(i + 1));
    }
  }
  out.gp = "# written by atrain compare; read by apps/plot/compare.gp\nband_names = \"" + names +
           "\"\nband_colours = \"" + colours + "\"\nconsensus_names = \"" + cons_names +
           "\"\nconsensus_colours = \"" + cons_colours + "\"\nworst_names = \"" + worst_names +
           "\"\nworst_colours = \"" + worst_colours + "\"\n";
  return {};
}

}  // namespace atrain::cli
