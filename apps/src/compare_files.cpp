/// The files `atrain compare` writes (compare_files.hpp).
#include "compare_files.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "atrain/engine.hpp"
#include "atrain/messages/json.hpp"
#include "compare_bands.hpp"
#include "plot.hpp"
#include "summary.hpp"

namespace atrain::cli {

namespace fs = std::filesystem;

/// The JSON mapping of report.json (messages/json.hpp): integers as
/// numbers, shortest round-trip doubles, null when not finite.
std::string json_string(const std::string& s) {
  return json::quote(s);
}

/// A count held as a double (a mean of counts stays a double).
std::string json_count(double x) {
  return x >= 0 && x < 1.8e19 && x == std::floor(x) ? json::integer(static_cast<std::uint64_t>(x))
                                                    : json::number(x);
}

/// %.Ng of x, or `not_finite` (JSON null, CSV nan).
std::string number_text(double x, int digits, const char* not_finite) {
  if (!std::isfinite(x))
    return not_finite;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string json_number(double x) {
  return json::number(x);
}

std::string json_summary(const summary& s) {
  return "{\"n\": " + std::to_string(s.n) + ", \"mean\": " + (s.n ? json_number(s.mean) : "null") +
         ", \"std\": " + (s.n > 1 ? json_number(s.std) : "null") + "}";
}

std::string run_json(const run_figures& r, const std::string& name) {
  std::ostringstream o;
  o << "        {\"seed\": " << json::integer(r.seed)
    << ", \"dir\": " << json_string(name + "_seed" + std::to_string(r.seed))
    << ", \"completed\": " << (r.completed ? "true" : "false")
    << ", \"error\": " << json_string(r.error) << ",\n         \"time_to_target\": "
    << (r.time_to_target ? json_number(*r.time_to_target) : "null")
    << ", \"sustained_time_to_target\": "
    << (r.sustained_time_to_target ? json_number(*r.sustained_time_to_target) : "null")
    << ", \"final_accuracy\": " << json_number(r.final_accuracy)
    << ", \"final_train_loss\": " << json_number(r.final_train_loss)
    << ", \"worst_node_accuracy\": "
    << (r.worst_node_accuracy ? json_number(*r.worst_node_accuracy) : "null")
    << ",\n         \"gradients\": " << json_count(r.gradients)
    << ", \"bytes_per_node\": " << json_number(r.bytes_per_node)
    << ", \"messages\": " << json_count(r.messages)
    << ", \"packets_dropped\": " << json_count(r.packets_dropped)
    << ",\n         \"staleness_mean\": " << json_number(r.staleness_mean)
    << ", \"staleness_max\": " << json_number(r.staleness_max)
    << ", \"consensus_error\": " << json_number(r.consensus_error)
    << ",\n         \"duration_seconds\": " << json_number(r.duration_seconds)
    << ", \"wall_seconds\": " << json_number(r.wall_seconds)
    << ", \"stop_reason\": " << json_string(r.stop_reason)
    << ", \"trace_hash\": " << json_string(r.trace_hash) << "}";
  return o.str();
}

std::string compare_json(const compare_args& a, const std::vector<algorithm_result>& results,
                         const std::vector<std::uint64_t>& seeds, double target) {
  std::ostringstream o;
  o << "{\n  \"spec\": " << json_string(a.common.spec) << ",\n  \"overrides\": [";
  for (std::size_t i = 0; i < a.common.overrides.size(); ++i)
    o << (i ? ", " : "") << json_string(a.common.overrides[i]);
  o << "],\n  \"seeds\": [";
  for (std::size_t i = 0; i < seeds.size(); ++i)
    o << (i ? ", " : "") << json::integer(seeds[i]);
  o << "],\n  \"target_accuracy\": " << json_number(target) << ",\n  \"algorithms\": [\n";
  for (std::size_t k = 0; k < results.size(); ++k) {
    const auto& r = results[k];
    o << "    {\"name\": " << json_string(r.name) << ", \"config\": " << json_string(r.config)
      << ",\n     \"runs\": " << r.runs.size() << ", \"completed\": " << r.completed
      << ", \"failed\": " << r.failed << ", \"reached\": " << r.reached
      << ",\n     \"time_to_target\": " << json_summary(r.time_to_target)
      << ",\n     \"final_accuracy\": " << json_summary(r.final_accuracy)
      << ",\n     \"final_train_loss\": " << json_summary(r.final_train_loss)
      << ",\n     \"worst_node_accuracy\": " << json_summary(r.worst_node_accuracy)
      << ",\n     \"gradients\": " << json_summary(r.gradients)
      << ",\n     \"bytes_per_node\": " << json_summary(r.bytes_per_node)
      << ",\n     \"staleness_mean\": " << json_summary(r.staleness_mean)
      << ",\n     \"node_staleness\": [";
    for (std::size_t i = 0; i < r.node_staleness.size(); ++i)
      o << (i ? ", " : "") << json_number(r.node_staleness[i]);
    o << "],\n     \"speedup_vs_allreduce\": " << (r.speedup ? json_number(*r.speedup) : "null")
      << ",\n     \"per_run\": [\n";
    for (std::size_t i = 0; i < r.runs.size(); ++i)
      o << run_json(r.runs[i], r.name) << (i + 1 < r.runs.size() ? ",\n" : "\n");
    o << "     ]}" << (k + 1 < results.size() ? ",\n" : "\n");
  }
  o << "  ]\n}\n";
  return o.str();
}

std::string csv_number(double x) {
  return number_text(x, 9, "nan");
}

/// bars.csv: one row per algorithm (time to target, final accuracy, staleness);
/// time to target is nan unless every completed run reached it.
std::string bars_csv(const std::vector<algorithm_result>& results) {
  std::string s = "algorithm,runs,reached,time_to_target_mean,time_to_target_std,"
                  "final_accuracy_mean,final_accuracy_std,staleness_mean\n";
  const double nan = std::nan("");
  for (const auto& a : results) {
    const bool t = a.all_reached();
    s += a.name + "," + std::to_string(a.completed) + "," + std::to_string(a.reached) + "," +
         csv_number(t ? a.time_to_target.mean : nan) + "," +
         csv_number(t ? a.time_to_target.std : nan) + "," +
         csv_number(a.completed ? a.final_accuracy.mean : nan) + "," +
         csv_number(a.completed ? a.final_accuracy.std : nan) + "," +
         csv_number(a.completed ? a.staleness_mean.mean : nan) + "\n";
  }
  return s;
}

/// staleness.csv: one row per node, one column per algorithm (nan where an
/// algorithm has fewer nodes, e.g. centralized).
std::string staleness_csv(const std::vector<algorithm_result>& results) {
  std::string s = "node";
  std::size_t nodes = 0;
  for (const auto& a : results) {
    s += "," + a.name;
    nodes = std::max(nodes, a.node_staleness.size());
  }
  s += "\n";
  for (std::size_t i = 0; i < nodes; ++i) {
    s += std::to_string(i);
    for (const auto& a : results)
      s += "," + csv_number(i < a.node_staleness.size() ? a.node_staleness[i] : std::nan(""));
    s += "\n";
  }
  return s;
}

/// The scenario for the figures' titles: SPEC's name and whatever it adds
/// to a plain run (faults, permanent stragglers, an imperfect link, the
/// --set overrides), as lines of at most ~110 characters.
std::string scenario_text(const compare_args& a, const loaded_spec& base) {
  const auto& sp = base.spec;
  std::vector<std::string> items;
  for (const auto& d : fault_schedule{sp.faults()}.describe())
    items.push_back(d.kind + " " + d.what + " " + fixed(d.from, 2) + "-" +
                    (d.to > 0 ? fixed(d.to, 2) : std::string{"end"}) + " s");
  for (const auto& sd : sp.cost().slowdown())
    items.push_back("straggler node " + std::to_string(sd.node()) + " x" + fixed(sd.factor(), 1));
  const auto& l = sp.link();
  if (l.loss() > 0)
    items.push_back("link loss " + number_text(l.loss(), 3, "nan"));
  if (l.duplicate() > 0)
    items.push_back("duplicates " + number_text(l.duplicate(), 3, "nan"));
  if (l.reorder() > 0)
    items.push_back("reorder " + number_text(l.reorder(), 3, "nan"));
  if (l.bandwidth_bytes_per_second() > 0)
    items.push_back("bandwidth " + human_bytes(l.bandwidth_bytes_per_second(), 2) + "/s");
  for (const auto& o : a.common.overrides)
    items.push_back("--set " + o);
  std::string text = (sp.name().empty() ? fs::path{a.common.spec}.stem().string() : sp.name()) +
                     ": " + std::to_string(sp.nodes()) + " nodes, " +
                     proto::Clock_Name(sp.clock()) + " clock, " +
                     (items.empty() ? std::string{"no faults"} : std::string{});
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string sep = i == 0 ? "" : "; ";
    if (text.size() - line_start + sep.size() + items[i].size() > 110) {
      text += ";\n";
      line_start = text.size();
    } else {
      text += sep;
    }
    text += items[i];
  }
  return text;
}

/// A gnuplot string with lines ('a'."\n".'b', ' doubled).
std::string gnuplot_lines(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string{"''"} : c == '\n' ? std::string{"'.\"\\n\".'"} : std::string{c};
  return out + "'";
}

/// series.gp: what compare.gp iterates over.
std::string series_gp(const std::vector<algorithm_result>& results,
                      const std::vector<std::uint64_t>& seeds, double target,
                      const std::string& scenario) {
  std::string algs, ss, stale_names, stale_colours;
  // Tallest bars (0 when none): the bar charts' y ranges, never empty.
  double ttt_max = 0, stale_max = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& a = results[i];
    algs += (algs.empty() ? "" : " ") + a.name;
    if (a.all_reached())
      ttt_max = std::max(ttt_max, a.time_to_target.mean + a.time_to_target.std);
    for (double x : a.node_staleness)
      stale_max = std::max(stale_max, x);
    if (!a.node_staleness.empty()) {  // a legend entry only with bars
      stale_names += (stale_names.empty() ? "" : " ") + a.name;
      stale_colours += (stale_colours.empty() ? "" : " ") + std::to_string(i + 1);
    }
  }
  for (auto s : seeds)
    ss += (ss.empty() ? "" : " ") + std::to_string(s);
  return "# written by atrain compare; read by apps/plot/compare.gp\nalgorithms = \"" + algs +
         "\"\nseeds = \"" + ss + "\"\ntarget = " + csv_number(target) +
         "\ntime_to_target_max = " + csv_number(ttt_max) +
         "\nstaleness_max = " + csv_number(stale_max) + "\nstaleness_names = \"" + stale_names +
         "\"\nstaleness_colours = \"" + stale_colours +
         "\"\nscenario = " + gnuplot_lines(scenario) + "\n";
}

void append_curves(std::string& csv, const std::string& name, const proto::RunReport& r) {
  for (const auto& m : r.metrics()) {
    char line[256];
    // The worst node's own accuracy; nan when no node was scored (eval.node_models: 0).
    std::snprintf(line, sizeof line, ",%llu,%.9g,%llu,%.9g,%.9g,%.9g,%.9g\n",
                  static_cast<unsigned long long>(r.seed()), m.time_seconds(),
                  static_cast<unsigned long long>(m.gradients()), m.train_loss(), m.test_accuracy(),
                  m.consensus_error(),
                  m.nodes_evaluated() > 0 ? m.node_test_accuracy_min() : std::nan(""));
    csv += name + line;
  }
}

bool write_file(const fs::path& p, const std::string& text) {
  std::ofstream out{p, std::ios::binary};
  out << text;
  out.close();
  if (!out)
    std::cerr << "atrain: " << p.string() << ": cannot write\n";
  return static_cast<bool>(out);
}

/// A gnuplot string literal ('...' with ' doubled).
std::string gnuplot_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string{"''"} : std::string{c};
  return out + "'";
}

/// Reads DIR/curves.csv and writes DIR/bands_NAME.csv and DIR/bands.gp
/// (compare_bands.hpp). "" or what is wrong.
std::string write_bands(const std::string& dir, const std::vector<algorithm_result>& results) {
  std::ifstream in{fs::path{dir} / "curves.csv", std::ios::binary};
  std::ostringstream text;
  text << in.rdbuf();
  if (!in)
    return dir + "/curves.csv: cannot read";
  std::vector<std::string> names;
  for (const auto& r : results)
    names.push_back(r.name);
  band_files bands;
  if (auto why = make_bands(text.str(), names, bands); !why.empty())
    return dir + "/curves.csv: " + why;
  bool ok = write_file(fs::path{dir} / "bands.gp", bands.gp);
  for (const auto& [name, csv] : bands.csv)
    ok = write_file(fs::path{dir} / ("bands_" + name + ".csv"), csv) && ok;
  return ok ? std::string{} : dir + ": cannot write the band files";
}

/// Runs gnuplot on compare.gp when it is on PATH, else says how to draw later.
void draw_figures(const std::string& dir, const std::vector<algorithm_result>& results) {
  if (auto why = write_bands(dir, results); !why.empty()) {
    std::cerr << "atrain: " << why << ": figures not drawn\n";
    return;
  }
  const auto script = find_in_tree(fs::path{"apps"} / "plot" / "compare.gp");
  const std::string later =
    "gnuplot -e \"dir='" + dir + "'\" " + (script.empty() ? "apps/plot/compare.gp" : script);
  if (script.empty()) {
    std::cerr << "atrain: apps/plot/compare.gp not found under " << roots_text()
              << ": figures not drawn (from the source tree: " << later << ")\n";
    return;
  }
  if (!on_path("gnuplot")) {
    std::cerr << "gnuplot not found: install gnuplot-nox, then run: " << later << "\n";
    return;
  }
  const std::string assign = "dir=" + gnuplot_quote(dir);
  std::cout << std::flush;
  const pid_t pid = fork();
  if (pid == 0) {
    execlp("gnuplot", "gnuplot", "-e", assign.c_str(), script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::cerr << "atrain: gnuplot failed; figures may be missing (" << later << ")\n";
    return;
  }
  std::cout << "figures         " << dir
            << "/{accuracy_vs_time,loss_vs_time,consensus_vs_time,time_to_target,staleness}"
               ".{png,svg}\n";
}

}  // namespace atrain::cli
