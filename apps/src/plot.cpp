/// `atrain plot RUN_DIR [--out DIR]` (see plot.hpp).
///
/// Choices: metrics.csv's columns are found by header name, never by
/// position (`time` or `time_seconds`, `bytes` or `bytes_sent`), and every
/// needed value is checked here so that gnuplot only ever sees good input.
/// The fault windows are the report's own records with times: injected
/// faults (a window without an end lasts to the run's end), stragglers the
/// evaluator detected, quarantined nodes. gnuplot is an external program
/// run by this command, never by the engine.
#include "plot.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "atrain.pb.h"

#ifndef ATRAIN_SOURCE_DIR
#define ATRAIN_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;

namespace atrain::cli {

namespace {

/// What the figure needs from metrics.csv: 1-based columns and ranges.
struct metrics_info {
  int time = 0, accuracy = 0, loss = 0, consensus = 0, bytes = 0;
  std::size_t rows = 0;
  double t_max = 0;
  bool consensus_positive = false;  ///< some value > 0 (log scale possible)
};

struct window {
  double from = 0;
  double to = 0;
  std::string kind;
  std::string label;
};

bool read_text(const fs::path& p, std::string& out) {
  std::ifstream in{p, std::ios::binary};
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return static_cast<bool>(in) || in.eof();
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in{line};
  while (std::getline(in, item, ','))
    out.push_back(item);
  if (!line.empty() && line.back() == ',')
    out.emplace_back();
  for (auto& s : out) {
    while (!s.empty() && (s.back() == '\r' || s.back() == ' '))
      s.pop_back();
    s.erase(0, s.find_first_not_of(' '));
  }
  return out;
}

/// The 1-based column named one of `names`, or 0.
int column_of(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
  for (const char* n : names)
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == n)
        return static_cast<int>(i) + 1;
  return 0;
}

/// Checks metrics.csv; "" when fine, else the sentence saying what is wrong.
std::string check_metrics(const fs::path& p, metrics_info& m) {
  std::string text;
  if (!read_text(p, text))
    return p.string() + ": cannot read";
  std::istringstream in{text};
  std::string line;
  if (!std::getline(in, line))
    return p.string() + ": empty (expected a header line and rows)";
  const auto header = split_csv(line);
  m.time = column_of(header, {"time_seconds", "time"});
  m.accuracy = column_of(header, {"test_accuracy"});
  m.loss = column_of(header, {"train_loss"});
  m.consensus = column_of(header, {"consensus_error"});
  m.bytes = column_of(header, {"bytes_sent", "bytes"});
  std::string missing;
  const std::pair<int, const char*> need[] = {{m.time, "time_seconds (or time)"},
                                              {m.accuracy, "test_accuracy"},
                                              {m.loss, "train_loss"},
                                              {m.consensus, "consensus_error"},
                                              {m.bytes, "bytes (or bytes_sent)"}};
  for (const auto& [col, name] : need)
    if (col == 0)
      missing += std::string{missing.empty() ? "" : ", "} + name;
  if (!missing.empty())
    return p.string() + ": no column " + missing + " in its header '" + line + "'";
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r")
      continue;
    const auto cells = split_csv(line);
    for (const auto& [col, name] : need) {
      const auto& cell = static_cast<std::size_t>(col) <= cells.size() ? cells[col - 1] : "";
      char* end = nullptr;
      const double x = std::strtod(cell.c_str(), &end);
      if (cell.empty() || *end != '\0')
        return p.string() + " line " + std::to_string(number) + ": " + name + " is '" + cell +
               "', not a number";
      if (col == m.time)
        m.t_max = std::max(m.t_max, x);
      if (col == m.consensus && x > 0)
        m.consensus_positive = true;
    }
    ++m.rows;
  }
  if (m.rows == 0)
    return p.string() + ": a header but no rows (the run ended before its first evaluation)";
  return {};
}

std::string load_report(const fs::path& p, proto::RunReport& r) {
  std::string text;
  if (!read_text(p, text))
    return p.string() + ": cannot read";
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;  // a newer report still plots
  const auto status = google::protobuf::util::JsonStringToMessage(text, &r, opts);
  if (!status.ok())
    return p.string() + ": not an atrain run report (" + std::string{status.message()} + ")";
  return {};
}

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

/// Every record of the report that has times, clipped to [0, t_end].
std::vector<window> windows_of(const proto::RunReport& r, double t_end) {
  std::vector<window> out;
  auto add = [&](double from, double to, std::string kind, const std::string& what) {
    from = std::max(0.0, from);
    to = std::min(t_end, to);
    if (to < from)
      to = from;
    const auto span = num(from) + (to >= t_end ? " s to the end" : "-" + num(to) + " s");
    out.push_back({from, to, kind, kind + " " + what + ", " + span});
  };
  for (const auto& f : r.faults())
    add(f.from_seconds(), f.has_to_seconds() ? f.to_seconds() : t_end, f.kind(), f.what());
  for (const auto& s : r.stragglers())
    add(s.detected_seconds(), s.has_recovered_seconds() ? s.recovered_seconds() : t_end,
        "straggler",
        "node " + std::to_string(s.node()) + " detected (x" +
          num(std::round(s.slowest_factor() * 10) / 10) + ")");
  for (const auto& q : r.quarantined())
    add(q.since_seconds(), t_end, "quarantine",
        "node " + std::to_string(q.node()) + " (" + std::to_string(q.gradients_refused()) +
          " gradients refused)");
  return out;
}

/// One colour per kind of window (the same in every figure).
std::string colour_of(const std::string& kind) {
  static const std::map<std::string, std::string> colours{
    {"partition", "#d62728"}, {"loss_burst", "#ff7f0e"},    {"delay_spike", "#9467bd"},
    {"straggle", "#8c564b"},  {"straggler", "#bcbd22"},     {"crash", "#7f7f7f"},
    {"host_lost", "#000000"}, {"bad_gradients", "#e377c2"}, {"quarantine", "#17becf"}};
  const auto it = colours.find(kind);
  return it == colours.end() ? "#1f77b4" : it->second;
}

/// A gnuplot string literal ('...' with ' doubled).
std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string{"''"} : std::string{c};
  return out + "'";
}

std::string title_of(const proto::RunReport& r) {
  std::string t = (r.name().empty() ? std::string{"run"} : r.name()) + ": " + r.algorithm() + ", " +
                  std::to_string(r.nodes()) + " nodes, seed " + std::to_string(r.seed()) +
                  (r.clock().empty() ? "" : ", " + r.clock() + " clock");
  std::string sub = r.error().empty() ? "stopped: " + r.stop_reason() : "failed: " + r.error();
  if (sub.size() > 140)
    sub = sub.substr(0, 137) + "...";
  return quote(t) + "\nsubtitle = " + quote(sub);
}

/// run_plot.gp: everything run.gp draws from.
std::string series_text(const fs::path& csv, const fs::path& out, const metrics_info& m,
                        const proto::RunReport& r, double t_end, const std::vector<window>& wins) {
  std::ostringstream s;
  s << "# written by atrain plot; read by apps/plot/run.gp\n"
    << "csv = " << quote(csv.string()) << "\nout = " << quote(out.string())
    << "\ncol_time = " << m.time << "\ncol_accuracy = " << m.accuracy << "\ncol_loss = " << m.loss
    << "\ncol_consensus = " << m.consensus << "\ncol_bytes = " << m.bytes
    << "\nconsensus_positive = " << m.consensus_positive << "\nt_end = " << num(t_end)
    << "\ntarget = " << num(r.target_accuracy())
    << "\ntime_to_target = " << (r.has_time_to_target() ? num(r.time_to_target()) : "NaN")
    << "\ntitle = " << title_of(r) << "\nnwin = " << wins.size() << "\n";
  if (!wins.empty()) {
    const auto n = std::to_string(wins.size());
    std::string from, to, colour, label;
    for (const auto& w : wins) {
      const std::string sep = from.empty() ? "" : ", ";
      from += sep + num(w.from);
      to += sep + num(w.to);
      colour += sep + quote(colour_of(w.kind));
      label += sep + quote(w.label);
    }
    s << "array win_from[" << n << "] = [" << from << "]\narray win_to[" << n << "] = [" << to
      << "]\narray win_colour[" << n << "] = [" << colour << "]\narray win_label[" << n << "] = ["
      << label << "]\n";
  }
  return s.str();
}

/// `relative` under the working directory, else under the source tree.
std::string find_in_tree(const fs::path& relative) {
  for (const char* root : {".", ATRAIN_SOURCE_DIR}) {
    const auto p = fs::path{root} / relative;
    if (fs::exists(p))
      return p.lexically_normal().string();
  }
  return {};
}

/// gnuplot's exit status (127: could not be started, -1: killed).
int run_gnuplot(const std::string& script, const std::string& assignment) {
  std::cout << std::flush;
  const pid_t pid = fork();
  if (pid == 0) {
    execlp("gnuplot", "gnuplot", "-e", assignment.c_str(), script.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

}  // namespace

int plot_run(const std::string& run_dir, const std::string& out_dir) {
  auto fail = [](const std::string& why, int status) {
    std::cerr << "atrain plot: " << why << "\n";
    return status;
  };
  if (run_dir.empty())
    return fail("needs RUN_DIR, a directory `atrain run --out` wrote", 2);
  if (!fs::is_directory(run_dir))
    return fail(run_dir + ": no such directory", 2);
  const fs::path csv = fs::path{run_dir} / "metrics.csv";
  const fs::path json = fs::path{run_dir} / "report.json";
  for (const auto& p : {csv, json})
    if (!fs::is_regular_file(p))
      return fail(p.string() + ": missing (is " + run_dir + " the --out directory of a run?)", 2);
  metrics_info m;
  if (auto why = check_metrics(csv, m); !why.empty())
    return fail(why, 2);
  proto::RunReport report;
  if (auto why = load_report(json, report); !why.empty())
    return fail(why, 2);
  const std::string dir = out_dir.empty() ? run_dir : out_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return fail(dir + ": cannot create: " + ec.message(), 2);
  const double t_end = std::max({m.t_max, report.duration_seconds(), 1e-3});
  const auto wins = windows_of(report, t_end);
  const fs::path series = fs::path{dir} / "run_plot.gp";
  {
    std::ofstream out{series, std::ios::binary};
    out << series_text(fs::absolute(csv), fs::absolute(fs::path{dir} / "run"), m, report, t_end,
                       wins);
    if (!out)
      return fail(series.string() + ": cannot write", 2);
  }
  const auto script = find_in_tree(fs::path{"apps"} / "plot" / "run.gp");
  if (script.empty())
    return fail("apps/plot/run.gp not found (looked under . and " ATRAIN_SOURCE_DIR ")", 1);
  const std::string assign = "series=" + quote(fs::absolute(series).string());
  const std::string later = "gnuplot -e \"" + assign + "\" " + script;
  if (!on_path("gnuplot"))
    return fail("gnuplot not found: install gnuplot-nox, then run: " + later, 1);
  if (const int status = run_gnuplot(script, assign); status != 0)
    return fail("gnuplot failed (exit status " + std::to_string(status) + ") on " + later, 1);
  std::cout << "figure          " << dir << "/run.{png,svg} (" << m.rows << " evaluations, "
            << wins.size() << " fault window" << (wins.size() == 1 ? "" : "s") << ")\n";
  return 0;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream in{path ? path : ""};
  std::string dir;
  while (std::getline(in, dir, ':'))
    if (!dir.empty() && access((fs::path{dir} / program).c_str(), X_OK) == 0)
      return true;
  return false;
}

}  // namespace atrain::cli
