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
#include "compare_files.hpp"
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
  if (r.has_sustained_time_to_target())
    f.sustained_time_to_target = r.sustained_time_to_target();
  f.final_accuracy = r.final().test_accuracy();
  f.final_train_loss = r.final().train_loss();
  if (r.final().nodes_evaluated() > 0)
    f.worst_node_accuracy = r.final().node_test_accuracy_min();
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
    std::vector<double> ttt, acc, loss, worst, grads, bytes, stale;
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
      if (r.worst_node_accuracy)
        worst.push_back(*r.worst_node_accuracy);
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
    a.worst_node_accuracy = summarize(worst);
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

/// "m ± s" with `digits` decimals; just "m" for a single run.
std::string mean_std(const summary& s, int digits) {
  if (s.n < 2)
    return fixed(s.mean, digits);
  return fixed(s.mean, digits) + " ± " + fixed(s.std, digits);
}

}  // namespace

std::string markdown_table(const std::vector<algorithm_result>& results, double target) {
  std::ostringstream out;
  const std::string ttt = target > 0 ? "time to " + fixed(target, 3) + " (s)" : "time to target";
  out << "| algorithm | runs | " << ttt
      << " | final accuracy | worst node | gradients | bytes per node | speed-up vs allreduce |\n"
      << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
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
      out << "— | — | — | — | ";
    else
      out << mean_std(a.final_accuracy, 4) << " | "
          << (a.worst_node_accuracy.n > 0 ? mean_std(a.worst_node_accuracy, 4) : "—") << " | "
          << fixed(a.gradients.mean, 0) << " | " << human_bytes(a.bytes_per_node.mean, 2) << " | ";
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

}  // namespace

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

/// config/algorithms/nodesN/NAME.textproto when the runs have N nodes and
/// that file exists (its step size tuned for N, bench/tune_steps.py), else
/// config/algorithms/NAME.textproto.
std::string find_config(const std::string& name, std::uint32_t nodes) {
  const fs::path dir = fs::path{"config"} / "algorithms";
  const auto file = name + ".textproto";
  const auto tuned = find_in_tree(dir / ("nodes" + std::to_string(nodes)) / file);
  return tuned.empty() ? find_in_tree(dir / file) : tuned;
}

/// The runs' node count: SPEC's, after the overrides that are not an
/// algorithm's block. Throws spec_error.
std::uint32_t nodes_of_runs(const compare_args& a) {
  auto s = load_spec(a.common.spec);
  for (const auto& o : a.common.overrides)
    if (o.rfind("algorithm", 0) != 0)
      apply_override(s, o);
  return s.spec.nodes();
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
  std::uint32_t nodes = 0;
  try {
    nodes = nodes_of_runs(a);
  } catch (const spec_error& e) {
    std::cerr << "atrain: invalid spec " << a.common.spec << ":\n" << e.what() << "\n";
    return false;
  }
  for (const auto& n : a.algorithms) {
    planned p{n, find_config(n, nodes), {}};
    if (p.config.empty()) {
      std::cerr << "atrain: config/algorithms/" << n << ".textproto not found (looked under "
                << roots_text() << ")\n";
      return false;
    }
    try {
      std::vector<std::string> skipped;
      p.spec = combined_spec(a, p.config, skipped);
      const auto tuned_for = load_spec(p.config).spec.nodes();
      if (tuned_for > 1 && tuned_for != nodes)  // 1: a single-node method (centralized)
        notes.push_back(n + "'s step size was tuned for " + std::to_string(tuned_for) +
                        " nodes (" + p.config + "), the runs have " + std::to_string(nodes));
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

/// "`config/algorithms/a.textproto`, ...": where each algorithm's block came from.
std::string config_list(const std::vector<algorithm_result>& results) {
  std::string s;
  for (const auto& r : results)
    s += (s.empty() ? "`" : ", `") + r.config + "`";
  return s;
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
  md += "; each algorithm's block from its config (" + config_list(results) + "). Seeds " +
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
                       "consensus_error,worst_node_accuracy\n";
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
