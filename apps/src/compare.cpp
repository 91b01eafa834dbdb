/// `atrain compare SPEC --algorithms a,b,... [--seeds N] [--set k=v]... [--out DIR]`
///
/// Every run takes the task from SPEC (dataset, shard, model, nodes, cost and
/// link models, faults, stop rule, eval) and two blocks from
/// config/algorithms/NAME.textproto: `algorithm` (the tuned step size) and,
/// when that file has one, `topology` (AD-PSGD needs a bipartite ring). The
/// --set overrides come last, so `--set link.loss=0.1` applies to every run;
/// an override of another algorithm's block (`algorithm.rfast.step_size`) is
/// applied only to the runs of that algorithm. Seeds are seed, seed+1, ...,
/// seed+N-1 with `seed` from SPEC (or --set seed=...).
///
/// Choices: every combined spec is validated and prepared (data loaded,
/// topology built, algorithm refusals) before the first run starts, so a bad
/// name or spec exits 2 without running anything. Statistics are over the
/// completed runs; the time to target is a mean only when every seed reached
/// it. gnuplot is an optional external program run by this command (never by
/// the engine).
#include "compare.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "atrain/engine.hpp"
#include "atrain/messages/json.hpp"
#include "compare_bands.hpp"
#include "interrupt.hpp"
#include "options.hpp"
#include "plot.hpp"

#ifndef ATRAIN_SOURCE_DIR
#define ATRAIN_SOURCE_DIR "."
#endif
#ifndef ATRAIN_BUILD_DIR
#define ATRAIN_BUILD_DIR ""
#endif
#ifndef ATRAIN_INSTALL_DATA
#define ATRAIN_INSTALL_DATA "../share/atrain"
#endif

namespace fs = std::filesystem;

namespace atrain::cli {

summary summarize(const std::vector<double>& xs) {
  summary s;
  s.n = xs.size();
  if (s.n == 0)
    return s;
  double sum = 0;
  for (double x : xs)
    sum += x;
  s.mean = sum / static_cast<double>(s.n);
  if (s.n < 2)
    return s;
  double sq = 0;
  for (double x : xs)
    sq += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(s.n - 1));
  return s;
}

run_figures figures_of(const proto::RunReport& r) {
  run_figures f;
  f.seed = r.seed();
  f.completed = r.error().empty();
  f.error = r.error();
  if (r.has_time_to_target())
    f.time_to_target = r.time_to_target();
  f.final_accuracy = r.final().test_accuracy();
  f.final_train_loss = r.final().train_loss();
  f.gradients = static_cast<double>(r.gradients_total());
  f.bytes_per_node = static_cast<double>(r.bytes_sent()) / std::max<std::uint32_t>(1, r.nodes());
  f.messages = static_cast<double>(r.messages_sent());
  f.packets_dropped = static_cast<double>(r.packets_dropped());
  f.staleness_mean = r.staleness_mean();
  f.staleness_max = r.staleness_max();
  f.consensus_error = r.consensus_error();
  f.duration_seconds = r.duration_seconds();
  f.wall_seconds = r.wall_seconds();
  f.stop_reason = r.stop_reason();
  f.trace_hash = r.trace_hash();
  for (const auto& n : r.per_node())
    f.node_staleness.push_back(n.staleness_mean());
  return f;
}

void aggregate(std::vector<algorithm_result>& results) {
  for (auto& a : results) {
    std::vector<double> ttt, acc, loss, grads, bytes, stale;
    a.completed = a.failed = a.reached = 0;
    a.node_staleness.clear();
    std::vector<std::size_t> node_count;
    for (const auto& r : a.runs) {
      if (!r.completed) {
        ++a.failed;
        continue;
      }
      ++a.completed;
      if (r.time_to_target) {
        ++a.reached;
        ttt.push_back(*r.time_to_target);
      }
      acc.push_back(r.final_accuracy);
      loss.push_back(r.final_train_loss);
      grads.push_back(r.gradients);
      bytes.push_back(r.bytes_per_node);
      stale.push_back(r.staleness_mean);
      if (a.node_staleness.size() < r.node_staleness.size()) {
        a.node_staleness.resize(r.node_staleness.size(), 0.0);
        node_count.resize(r.node_staleness.size(), 0);
      }
      for (std::size_t i = 0; i < r.node_staleness.size(); ++i) {
        a.node_staleness[i] += r.node_staleness[i];
        ++node_count[i];
      }
    }
    for (std::size_t i = 0; i < a.node_staleness.size(); ++i)
      a.node_staleness[i] /= static_cast<double>(node_count[i]);
    a.time_to_target = summarize(ttt);
    a.final_accuracy = summarize(acc);
    a.final_train_loss = summarize(loss);
    a.gradients = summarize(grads);
    a.bytes_per_node = summarize(bytes);
    a.staleness_mean = summarize(stale);
  }
  const auto ref = std::find_if(results.begin(), results.end(),
                                [](const algorithm_result& a) { return a.name == "allreduce"; });
  for (auto& a : results) {
    a.speedup.reset();
    if (ref != results.end() && ref->all_reached() && a.all_reached() && a.time_to_target.mean > 0)
      a.speedup = ref->time_to_target.mean / a.time_to_target.mean;
  }
}

namespace {

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

/// "m ± s" with `digits` decimals; just "m" for a single run.
std::string mean_std(const summary& s, int digits) {
  if (s.n < 2)
    return fixed(s.mean, digits);
  return fixed(s.mean, digits) + " ± " + fixed(s.std, digits);
}

std::string bytes_text(double b) {
  if (b >= 1e9)
    return fixed(b / 1e9, 2) + " GB";
  if (b >= 1e6)
    return fixed(b / 1e6, 2) + " MB";
  if (b >= 1e3)
    return fixed(b / 1e3, 1) + " kB";
  return fixed(b, 0) + " B";
}

}  // namespace

std::string markdown_table(const std::vector<algorithm_result>& results, double target) {
  std::ostringstream out;
  const std::string ttt = target > 0 ? "time to " + fixed(target, 3) + " (s)" : "time to target";
  out << "| algorithm | runs | " << ttt
      << " | final accuracy | gradients | bytes per node | speed-up vs allreduce |\n"
      << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& a : results) {
    out << "| " << a.name << " | " << a.completed;
    if (a.failed > 0)
      out << " (" << a.failed << " failed)";
    out << " | ";
    if (a.completed == 0 || target <= 0)
      out << "—";
    else if (a.all_reached())
      out << mean_std(a.time_to_target, 3);
    else
      out << "not reached (" << a.completed - a.reached << "/" << a.completed << ")";
    out << " | ";
    if (a.completed == 0)
      out << "— | — | — | ";
    else
      out << mean_std(a.final_accuracy, 4) << " | " << fixed(a.gradients.mean, 0) << " | "
          << bytes_text(a.bytes_per_node.mean) << " | ";
    out << (a.speedup ? fixed(*a.speedup, 2) + "×" : "—") << " |\n";
  }
  return out.str();
}

bool parse_compare(const std::vector<std::string>& args, compare_args& a) {
  for (const auto& cmd : subcommands())
    if (std::string{cmd.name} == "compare")
      try {
        a = compare_args_of(parse_invocation(cmd, args));
        return true;
      } catch (const usage_error& e) {
        std::cerr << "atrain compare: " << e.what() << "\n";
        return false;
      }
  return false;
}

namespace {

std::string valid_names() {
  std::string s;
  for (const auto& n : compare_algorithm_names())
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// Where compare's files are looked for, in order: the working directory, the
/// installed data next to this binary (<prefix>/share/atrain), and the source
/// tree only when this binary is the one in its build tree.
std::vector<fs::path> tree_roots() {
  std::vector<fs::path> roots{"."};
  std::error_code ec;
  const auto dir = fs::canonical("/proc/self/exe", ec).parent_path();
  if (ec)
    return roots;
  roots.push_back((dir / ATRAIN_INSTALL_DATA).lexically_normal());
  const auto build = fs::weakly_canonical(fs::path{ATRAIN_BUILD_DIR}, ec);
  if (!ec && !build.empty() && dir == build)
    roots.emplace_back(ATRAIN_SOURCE_DIR);
  return roots;
}

std::string roots_text() {
  std::string s;
  for (const auto& r : tree_roots())
    s += (s.empty() ? "" : ", ") + r.string();
  return s;
}

/// `relative` under the first of tree_roots() that has it; "" when none has.
/// Finds config/algorithms/NAME.textproto and apps/plot/compare.gp.
std::string find_in_tree(const fs::path& relative) {
  for (const auto& root : tree_roots()) {
    const auto p = root / relative;
    if (fs::exists(p))
      return p.lexically_normal().string();
  }
  return {};
}

}  // namespace

std::vector<std::string> compare_algorithm_names() {
  // The config/algorithms/ that find_config reads: its files are the names.
  std::vector<std::string> names;
  const auto dir = find_in_tree(fs::path{"config"} / "algorithms");
  std::error_code ec;
  if (!dir.empty())
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".textproto")
        names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

std::string find_config(const std::string& name) {
  return find_in_tree(fs::path{"config"} / "algorithms" / (name + ".textproto"));
}

/// The name of the algorithm oneof case set in `s` ("rfast", "sgp", ...).
std::string kind_name(const proto::AlgorithmSpec& s) {
  const auto* f = s.GetDescriptor()->FindFieldByNumber(static_cast<int>(s.kind_case()));
  return f ? f->name() : "";
}

/// Whether the override addresses another algorithm's block
/// ("algorithm.rfast.step_size=..." while the run is a dasgd run).
bool for_other_algorithm(const std::string& assignment, const std::string& kind) {
  const std::string prefix = "algorithm.";
  if (assignment.rfind(prefix, 0) != 0)
    return false;
  const auto end = assignment.find_first_of(".=", prefix.size());
  if (end == std::string::npos || assignment[end] != '.')
    return false;
  return assignment.substr(prefix.size(), end - prefix.size()) != kind;
}

void forget_lines(loaded_spec& s, const std::string& field) {
  for (auto it = s.lines.begin(); it != s.lines.end();)
    it = it->first.rfind(field, 0) == 0 ? s.lines.erase(it) : std::next(it);
}

/// SPEC with NAME's algorithm (and topology) block, then the overrides.
/// Throws spec_error.
loaded_spec combined_spec(const compare_args& a, const std::string& config,
                          std::vector<std::string>& skipped) {
  auto s = load_spec(a.common.spec);
  const auto algo = load_spec(config);
  *s.spec.mutable_algorithm() = algo.spec.algorithm();
  forget_lines(s, "algorithm");
  if (algo.spec.has_topology()) {
    *s.spec.mutable_topology() = algo.spec.topology();
    forget_lines(s, "topology");
  }
  const auto kind = kind_name(s.spec.algorithm());
  for (const auto& o : a.common.overrides) {
    if (for_other_algorithm(o, kind))
      skipped.push_back(o);
    else
      apply_override(s, o);
  }
  return s;
}

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
    << ", \"final_accuracy\": " << json_number(r.final_accuracy)
    << ", \"final_train_loss\": " << json_number(r.final_train_loss)
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
    items.push_back("bandwidth " + bytes_text(l.bandwidth_bytes_per_second()) + "/s");
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
    std::snprintf(line, sizeof line, ",%llu,%.9g,%llu,%.9g,%.9g,%.9g\n",
                  static_cast<unsigned long long>(r.seed()), m.time_seconds(),
                  static_cast<unsigned long long>(m.gradients()), m.train_loss(), m.test_accuracy(),
                  m.consensus_error());
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

/// One algorithm's combined spec (runs differ only by seed).
struct planned {
  std::string name;
  std::string config;
  loaded_spec spec;
};

/// Checks the names, combines and prepares every spec once (data, topology,
/// the algorithm's own refusals) so that nothing runs unless all can.
/// Prints what is wrong and returns false.
bool plan_all(const compare_args& a, std::vector<planned>& plans) {
  const auto valid = compare_algorithm_names();
  for (std::size_t i = 0; i < a.algorithms.size(); ++i) {
    const auto& n = a.algorithms[i];
    if (std::find(valid.begin(), valid.end(), n) == valid.end()) {
      std::cerr << "atrain: unknown algorithm '" << n << "'; valid: " << valid_names() << "\n";
      return false;
    }
    if (std::find(a.algorithms.begin(), a.algorithms.begin() + i, n) != a.algorithms.begin() + i) {
      std::cerr << "atrain: algorithm '" << n << "' listed twice\n";
      return false;
    }
  }
  std::vector<std::string> notes;
  for (const auto& n : a.algorithms) {
    planned p{n, find_config(n), {}};
    if (p.config.empty()) {
      std::cerr << "atrain: config/algorithms/" << n << ".textproto not found (looked under "
                << roots_text() << ")\n";
      return false;
    }
    try {
      std::vector<std::string> skipped;
      p.spec = combined_spec(a, p.config, skipped);
      for (const auto& s : skipped)
        notes.push_back("--set " + s + " not applied to " + n);
      // Prepared to be refused now rather than after hours of other runs;
      // dropped at once (a plan holds the data set) and prepared again per run.
      (void)prepare_run(p.spec);
    } catch (const spec_error& e) {
      std::cerr << "atrain: invalid spec for " << n << " (" << a.common.spec << " + " << p.config
                << "):\n"
                << e.what() << "\n";
      return false;
    }
    plans.push_back(std::move(p));
  }
  for (const auto& s : notes)
    std::cerr << "note: " << s << "\n";
  return true;
}

/// Runs one algorithm with one seed; writes DIR/NAME_seedS/ and appends its
/// curves. A run that cannot be prepared or fails comes back not completed.
run_figures run_one(const planned& p, std::uint64_t seed, const run_options& opts,
                    const std::string& dir, std::string& curves) {
  run_figures f;
  f.seed = seed;
  auto s = p.spec;
  s.spec.set_seed(seed);
  std::shared_ptr<const run_plan> plan;
  try {
    plan = prepare_run(s);
  } catch (const spec_error& e) {
    // Seed-dependent refusals (e.g. a random topology) fail this run only.
    f.error = e.what();
    return f;
  }
  const auto run_dir = dir + "/" + p.name + "_seed" + std::to_string(seed);
  auto live = opts;
  live.out_dir = run_dir;  // metrics.csv and events.jsonl as the run goes
  auto report = run_experiment(plan, live);
  if (!report) {
    f.error = error_text(report.error());
    return f;
  }
  f = figures_of(*report);
  append_curves(curves, p.name, *report);
  if (auto ok = write_outputs(*report, run_dir); !ok) {
    f.completed = false;
    f.error = error_text(ok.error());
  }
  return f;
}

std::string outcome(const run_figures& f) {
  if (!f.completed)
    return "failed: " + f.error;
  return (f.time_to_target ? "target at " + fixed(*f.time_to_target, 3) + " s"
                           : std::string{"target not reached"}) +
         ", final accuracy " + fixed(f.final_accuracy, 4) + ", " + fixed(f.wall_seconds, 2) +
         " s wall";
}

/// compare.md, compare.json, bars.csv, staleness.csv, series.gp; false when
/// one could not be written.
bool write_summary(const compare_args& a, const std::string& dir, const loaded_spec& base,
                   const std::vector<algorithm_result>& results,
                   const std::vector<std::uint64_t>& seeds) {
  const double target = base.spec.stop().target_accuracy();
  std::string md = "# atrain compare: " + a.common.spec + "\n\nTask from `" + a.common.spec + "`";
  if (!a.common.overrides.empty()) {
    md += " with";
    for (const auto& o : a.common.overrides)
      md += " `--set " + o + "`";
  }
  md += "; each algorithm's block from `config/algorithms/NAME.textproto`. Seeds " +
        std::to_string(seeds.front()) +
        (seeds.size() > 1 ? ".." + std::to_string(seeds.back()) : std::string{}) + ", " +
        proto::Clock_Name(base.spec.clock()) +
        " clock; times are run-clock seconds. Mean ± sample standard deviation over the "
        "seeds; \"not reached (k/N)\": k of N seeds missed the target.\n\n" +
        markdown_table(results, target);
  bool ok = write_file(fs::path{dir} / "compare.md", md);
  ok = write_file(fs::path{dir} / "compare.json", compare_json(a, results, seeds, target)) && ok;
  ok = write_file(fs::path{dir} / "bars.csv", bars_csv(results)) && ok;
  ok = write_file(fs::path{dir} / "staleness.csv", staleness_csv(results)) && ok;
  return write_file(fs::path{dir} / "series.gp",
                    series_gp(results, seeds, target, scenario_text(a, base))) &&
         ok;
}

}  // namespace

int compare(const compare_args& a) {
  std::vector<planned> plans;
  if (!plan_all(a, plans))
    return 2;
  const auto& base = plans.front().spec;
  std::vector<std::uint64_t> seeds;
  for (std::uint32_t k = 0; k < a.seeds; ++k)
    seeds.push_back(base.spec.seed() + k);
  const std::string dir =
    !a.common.out.empty() ? a.common.out : "compare_" + fs::path{a.common.spec}.stem().string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::cerr << "atrain: " << dir << ": cannot create: " << ec.message() << "\n";
    return 1;
  }

  run_options opts;
  opts.progress = a.common.progress;
  opts.threads = a.common.threads;
  if (!a.common.caf.empty())
    opts.configure_system = [caf = a.common.caf](caf::actor_system_config& cfg) {
      return apply_caf(cfg, caf);
    };
  // SIGINT/SIGTERM: the current run stops and reports, the rest are not
  // started, the summary covers the runs so far.
  opts.control = std::make_shared<run_control>();
  interrupt_guard interrupt{opts.control};
  std::vector<algorithm_result> results;
  std::string curves = "algorithm,seed,time_seconds,gradients,train_loss,test_accuracy,"
                       "consensus_error\n";
  bool all_completed = true;
  const std::size_t total = plans.size() * seeds.size();
  std::size_t k = 0;
  for (const auto& p : plans) {
    if (opts.control->stop_requested())
      break;
    algorithm_result res;
    res.name = p.name;
    res.config = p.config;
    for (auto seed : seeds) {
      if (opts.control->stop_requested())
        break;
      const auto head = "compare " + std::to_string(++k) + "/" + std::to_string(total) + ": " +
                        p.name + " seed " + std::to_string(seed);
      std::cerr << head << "\n";
      res.runs.push_back(run_one(p, seed, opts, dir, curves));
      std::cerr << head << ": " << outcome(res.runs.back()) << "\n";
      all_completed = all_completed && res.runs.back().completed;
    }
    if (!res.runs.empty())
      results.push_back(std::move(res));
  }
  aggregate(results);

  bool ok = write_summary(a, dir, base, results, seeds);
  ok = write_file(fs::path{dir} / "curves.csv", curves) && ok;
  std::cout << markdown_table(results, base.spec.stop().target_accuracy()) << "wrote           "
            << dir << "/{compare.md,compare.json,curves.csv,bars.csv,staleness.csv}, NAME_seedS/\n";
  draw_figures(dir, results);
  interrupt.finish();
  return interrupt.exit_status(all_completed && ok ? 0 : 1);
}

}  // namespace atrain::cli
