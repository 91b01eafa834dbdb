/// The command line's one parser (see options.hpp). Boost.Program_options
/// reads `--opt=value` and `--opt value` alike; numbers are read as text and
/// checked here (lexical_cast takes "-1" for an unsigned), and every error
/// becomes one sentence naming the argument.
#include "options.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <new>
#include <optional>
#include <sstream>
#include <thread>

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#include "atrain/engine.hpp"
#include "calibrate.hpp"
#include "compare.hpp"
#include "launch.hpp"
#include "node.hpp"
#include "plot.hpp"
#include "shards.hpp"

#ifndef ATRAIN_VERSION
#define ATRAIN_VERSION "unknown"
#endif

namespace po = boost::program_options;

namespace atrain::cli {

namespace {

// ---- option groups, shared by the subcommands' descriptions

std::string cores_text() {
  return "one per core: " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
         " here";
}

void spec_options(po::options_description& d) {
  d.add_options()(
    "set", po::value<std::vector<std::string>>()->value_name("field.path=value")->composing(),
    "override a field of SPEC, e.g. --set link.loss=0.1 (repeatable; default: none)");
}

void progress_options(po::options_description& d) {
  d.add_options()("progress", po::bool_switch(),
                  "live progress line on stderr (default: the spec's `progress`, else whether "
                  "stderr is a terminal)")("no-progress", po::bool_switch(),
                                           "no progress line (default: as for --progress)");
}

void deploy_flags(po::options_description& d) {
  d.add_options()("hosts", po::value<std::string>()->value_name("HOST:PORT,..."),
                  "run across these `atrain node` hosts, node i on host i mod H (default: the "
                  "spec's deploy.hosts; none: every node in this process)")(
    "secret-file", po::value<std::string>()->value_name("FILE"),
    "the hosts' shared secret, at least 16 characters (default: the spec's deploy.secret_file)")(
    "tls-cert", po::value<std::string>()->value_name("FILE"),
    "mutual TLS: this process's certificate, PEM (default: the spec's deploy.tls; none: no TLS)")(
    "tls-key", po::value<std::string>()->value_name("FILE"),
    "mutual TLS: its private key, PEM (default: as --tls-cert)")(
    "tls-ca", po::value<std::string>()->value_name("FILE"),
    "mutual TLS: the CA the peers' certificates must come from (default: as --tls-cert)");
}

void system_options(po::options_description& d) {
  d.add_options()("threads", po::value<std::string>()->value_name("N"),
                  ("CAF scheduler threads of REAL-clock runs, 1..1024 (default: " + cores_text() +
                   "; virtual-clock runs use one)")
                    .c_str())("caf-config", po::value<std::string>()->value_name("FILE"),
                              "a CAF config file (INI), applied after atrain's settings and "
                              "before --caf#KEY=VALUE (default: none; caf-application.ini is "
                              "not read)");
}

void run_only(po::options_description& d) {
  d.add_options()("out", po::value<std::string>()->value_name("DIR"),
                  "write report.json, metrics.csv, report.pb there (default: the spec's "
                  "out_dir; none when it is empty)")(
    "resume", po::value<std::string>()->value_name("CHECKPOINT"),
    "continue from a checkpoint this spec wrote (default: none, start afresh)");
}

void run_options_of(po::options_description& d) {
  spec_options(d);
  run_only(d);
  progress_options(d);
  deploy_flags(d);
  system_options(d);
}

void compare_options(po::options_description& d) {
  d.add_options()("algorithms",
                  po::value<std::vector<std::string>>()->value_name("NAME,...")->composing(),
                  "the algorithms to compare (required; repeatable)")(
    "seeds", po::value<std::string>()->default_value("1")->value_name("N"),
    "runs per algorithm, seeds seed..seed+N-1 (1..1000)");
  spec_options(d);
  d.add_options()("out", po::value<std::string>()->value_name("DIR"),
                  "where everything goes (default: compare_<SPEC name>)");
  progress_options(d);
  system_options(d);
}

void topology_options(po::options_description& d) {
  spec_options(d);
  d.add_options()("dot", po::value<std::string>()->value_name("FILE"),
                  "also write both graphs as Graphviz DOT (default: none)");
}

void shards_options(po::options_description& d) {
  spec_options(d);
  d.add_options()("out", po::value<std::string>()->default_value("-")->value_name("FILE"),
                  "where the JSON goes (- is stdout)");
}

void plot_options(po::options_description& d) {
  d.add_options()("out", po::value<std::string>()->default_value("")->value_name("DIR"),
                  "where run.png, run.svg and run_plot.gp go (default: RUN_DIR)");
}

void node_options(po::options_description& d) {
  const node_args n;
  d.add_options()("listen",
                  po::value<std::string>()->default_value(n.listen)->value_name("HOST:PORT"),
                  "where peers connect (port 0 picks a free one and prints it)")(
    "secret-file", po::value<std::string>()->value_name("FILE"),
    "the shared secret peers present (default: none; required without TLS)")(
    "data-root", po::value<std::string>()->value_name("DIR"),
    "where relative dataset paths resolve (default: the driver's spec directory)")(
    "tls-cert", po::value<std::string>()->value_name("FILE"),
    "mutual TLS: only peers with a certificate of --tls-ca connect (default: none, no TLS)")(
    "tls-key", po::value<std::string>()->value_name("FILE"), "its private key (default: none)")(
    "tls-ca", po::value<std::string>()->value_name("FILE"), "the CA (default: none)")(
    "allow-remote", po::bool_switch(),
    "without TLS, listen beyond loopback; peers authenticate, the traffic is not encrypted "
    "(default: off)")(
    "max-runs",
    po::value<std::string>()->default_value(std::to_string(n.max_runs))->value_name("N"),
    "runs served at once (1..64)")(
    "max-message-mb",
    po::value<std::string>()->default_value(std::to_string(n.max_message_mb))->value_name("N"),
    "without TLS: a BASP header announcing more than N MiB closes the connection before "
    "anything is allocated (1..4095)")(
    "auth-timeout-ms",
    po::value<std::string>()->default_value(std::to_string(n.auth_timeout_ms))->value_name("N"),
    "without TLS: a peer that has not authenticated within N ms is closed (10..600000)")(
    "idle-timeout",
    po::value<std::string>()->default_value(std::to_string(n.idle_timeout_s))->value_name("S"),
    "without TLS: an authenticated peer silent for S seconds is closed (1..86400)")(
    "max-unauthenticated",
    po::value<std::string>()->default_value(std::to_string(n.max_unauthenticated))->value_name("N"),
    "without TLS: connections waiting to authenticate at once; more are closed (1..10000)")(
    "no-guard", po::bool_switch(),
    "without TLS: CAF listens itself, without the BASP guard; loopback only, for measuring "
    "the guard (default: off)");
  system_options(d);
}

void launch_options(po::options_description& d) {
  d.add_options()("local", po::value<std::string>()->value_name("N"),
                  "start N `atrain node` processes on 127.0.0.1 and run SPEC across them "
                  "(required; 1..64)");
  spec_options(d);
  run_only(d);
  progress_options(d);
  system_options(d);
}

void calibrate_options(po::options_description& d) {
  d.add_options()("out", po::value<std::string>()->value_name("FILE"),
                  "write the calibrated spec (the virtual twin) there (required)")(
    "local", po::value<std::string>()->value_name("N"),
    "probe across N `atrain node` processes on 127.0.0.1 (1..64; default: --hosts, else "
    "this process)")("seconds", po::value<std::string>()->default_value("8")->value_name("S"),
                     "the probe's budget in seconds (1..3600)")(
    "probe-out", po::value<std::string>()->value_name("DIR"),
    "the probe run's directory (default: FILE.probe)");
  spec_options(d);
  progress_options(d);
  deploy_flags(d);
  system_options(d);
}

// ---- conversions: checked values

std::string text_of(const po::variables_map& vm, const char* name) {
  return vm.count(name) ? vm[name].as<std::string>() : std::string{};
}

std::vector<std::string> list_of(const po::variables_map& vm, const char* name) {
  return vm.count(name) ? vm[name].as<std::vector<std::string>>() : std::vector<std::string>{};
}

std::optional<bool> progress_of(const po::variables_map& vm) {
  const bool on = vm.count("progress") && vm["progress"].as<bool>();
  const bool off = vm.count("no-progress") && vm["no-progress"].as<bool>();
  if (on && off)
    throw usage_error("--progress and --no-progress contradict each other");
  if (on || off)
    return on;
  return std::nullopt;
}

std::size_t threads_of(const po::variables_map& vm) {
  return vm.count("threads") ? count_of("--threads", text_of(vm, "threads"), 1, 1024) : 0;
}

/// Comma-separated items; an empty one is an error naming `flag`.
std::vector<std::string> split_list(const std::string& flag, const std::string& v) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in{v};
  while (std::getline(in, item, ','))
    out.push_back(item);
  if (v.empty() || v.back() == ',')
    out.push_back("");
  for (const auto& s : out)
    if (s.empty())
      throw usage_error(flag + ": '" + v + "' has an empty entry");
  return out;
}

std::vector<std::string> hosts_of(const std::string& v) {
  auto hosts = split_list("--hosts", v);
  for (const auto& h : hosts) {
    std::string why;
    const auto hp = parse_host_port(h, why);
    if (!hp || hp->second == 0)
      throw usage_error("--hosts: '" + h + "' is not HOST:PORT with a port in 1..65535");
  }
  return hosts;
}

void check_secret(const std::string& flag, const std::string& file) {
  if (file.empty())
    return;
  if (auto s = read_secret_file(file); !s)
    throw usage_error(flag + ": " + error_text(s.error()));
}

void check_tls(const std::string& cert, const std::string& key, const std::string& ca) {
  const int given = !cert.empty() + !key.empty() + !ca.empty();
  if (given == 0 || given == 3)
    return;
  std::string missing;
  for (auto [flag, v] : {std::pair{"--tls-cert", &cert}, {"--tls-key", &key}, {"--tls-ca", &ca}})
    if (v->empty())
      missing += (missing.empty() ? "" : " and ") + std::string{flag};
  throw usage_error("--tls-cert, --tls-key and --tls-ca go together: " + missing + " missing");
}

/// `args` without CAF's own arguments (--caf#KEY=VALUE), which go to `caf`.
std::vector<std::string> take_caf_args(const std::vector<std::string>& args, caf_passthrough& caf) {
  std::vector<std::string> rest;
  const std::string config_file = "--caf#config-file=";
  for (const auto& a : args) {
    if (a.rfind(config_file, 0) == 0)
      caf.config_file = a.substr(config_file.size());
    else if (a.rfind("--caf#", 0) == 0)
      caf.args.push_back(a);
    else
      rest.push_back(a);
  }
  return rest;
}

/// "--caf#KEY=VALUE" -> "caf#KEY" (CAF's lookup takes the prefix).
std::string caf_name(const std::string& a) {
  const auto eq = a.find('=');
  return a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
}

/// The options `cfg` knows (protected in CAF 0.17: reached through a
/// pointer to member formed in a derived class).
struct config_access : caf::actor_system_config {
  static const caf::config_option_set& options(const caf::actor_system_config& cfg) {
    return cfg.*(&config_access::custom_options_);
  }
};

/// CAF's options checked against a config that knows them all (middleman
/// and OpenSSL loaded). Returns false when CAF printed its help.
bool check_caf(const caf_passthrough& caf) {
  if (!caf.config_file.empty() && !std::ifstream{caf.config_file})
    throw usage_error("--caf-config: " + caf.config_file + ": cannot read");
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  cfg.load<caf::openssl::manager>();
  for (const auto& a : caf.args)
    if (config_access::options(cfg).cli_long_name_lookup(caf_name(a)) == nullptr)
      throw usage_error("'" + a + "' is not a CAF option (--caf#help lists them)");
  if (auto err = apply_caf(cfg, caf))
    throw usage_error("CAF options: " + error_text(err));
  return !cfg.cli_helptext_printed;
}

void print_usage_line(std::ostream& out, const subcommand& c) {
  out << "usage: atrain " << c.name << (*c.operands ? " " : "") << c.operands << " [options]\n";
}

po::options_description visible_options(const subcommand& c) {
  po::options_description d{"options", 100, 50};
  c.add_options(d);
  d.add_options()("help,h", "print this help and exit");
  return d;
}

void print_help(std::ostream& out, const subcommand& c) {
  print_usage_line(out, c);
  auto d = visible_options(c);
  if (c.caf)  // shown only: parse_invocation takes these off before Program_options
    d.add_options()("caf#KEY=VALUE",
                    "one of CAF's own options, e.g. --caf#scheduler.max-threads=4; wins over "
                    "atrain's settings (default: none; --caf#help lists them)");
  out << c.summary << "\n\n" << d;
  if (*c.details)
    out << "\n" << c.details;
  out << "\nExit status: 0 success, 1 the run failed, 2 bad spec or arguments.\n";
}

void print_overview(std::ostream& out) {
  out << "usage: atrain COMMAND [options]   (atrain COMMAND --help: its options)\n\ncommands:\n";
  for (const auto& c : subcommands()) {
    std::string head = std::string{c.name} + (*c.operands ? " " : "") + c.operands;
    head.resize(std::max<std::size_t>(head.size() + 2, 24), ' ');
    out << "  " << head << c.summary << "\n";
  }
  out << "  version                 print atrain's version\n"
         "\nSPEC is an ExperimentSpec in protobuf text format (see config/ and "
         "messages/atrain.proto).\n"
         "Exit status: 0 success, 1 the run failed, 2 bad spec or arguments.\n";
}

// ---- the subcommands' mains: checked arguments, then the command

int run_main(const invocation& in) {
  return run(common_of(in));
}
int topology_main(const invocation& in) {
  return topology(common_of(in));
}
int check_main(const invocation& in) {
  return check(common_of(in));
}
int shards_main(const invocation& in) {
  return shards(common_of(in));
}
int compare_main(const invocation& in) {
  return compare(compare_args_of(in));
}

int node_main(const invocation& in) {
  const auto& vm = in.vm;
  node_args n;
  n.listen = text_of(vm, "listen");
  std::string why;
  if (!parse_host_port(n.listen, why))
    throw usage_error("--listen: '" + n.listen + "' is not HOST:PORT" +
                      (why == "expected HOST:PORT" ? "" : " (" + why + ")"));
  n.secret_file = text_of(vm, "secret-file");
  check_secret("--secret-file", n.secret_file);
  n.data_root = text_of(vm, "data-root");
  n.tls = {text_of(vm, "tls-cert"), text_of(vm, "tls-key"), text_of(vm, "tls-ca")};
  check_tls(n.tls.certificate, n.tls.key, n.tls.ca);
  n.allow_remote = vm["allow-remote"].as<bool>();
  n.guard = !vm["no-guard"].as<bool>();
  n.max_runs = count_of("--max-runs", text_of(vm, "max-runs"), 1, 64);
  n.max_message_mb = static_cast<std::uint32_t>(
    count_of("--max-message-mb", text_of(vm, "max-message-mb"), 1, 4095));
  n.auth_timeout_ms = count_of("--auth-timeout-ms", text_of(vm, "auth-timeout-ms"), 10, 600000);
  n.idle_timeout_s = count_of("--idle-timeout", text_of(vm, "idle-timeout"), 1, 86400);
  n.max_unauthenticated =
    count_of("--max-unauthenticated", text_of(vm, "max-unauthenticated"), 1, 10000);
  n.threads = threads_of(vm);
  n.caf = in.caf;
  return node(n);
}

int plot_main(const invocation& in) {
  return plot_run(in.operands.at(0), text_of(in.vm, "out"));
}

int launch_main(const invocation& in) {
  launch_args a;
  if (!in.vm.count("local"))
    throw usage_error("--local N is required (the number of node processes)");
  a.local = count_of("--local", text_of(in.vm, "local"), 1, 64);
  a.run = common_of(in);
  return launch(a);
}

int calibrate_main(const invocation& in) {
  calibrate_args a;
  if (!in.vm.count("out"))
    throw usage_error("--out FILE is required (where the calibrated spec goes)");
  a.out = text_of(in.vm, "out");
  a.run = common_of(in);
  a.run.out = text_of(in.vm, "probe-out");
  if (in.vm.count("local")) {
    if (!a.run.hosts.empty())
      throw usage_error("--local and --hosts contradict each other: probe one deployment");
    a.local = count_of("--local", text_of(in.vm, "local"), 1, 64);
  }
  a.seconds = static_cast<double>(count_of("--seconds", text_of(in.vm, "seconds"), 1, 3600));
  return calibrate(a);
}

const char* const calibrate_details =
  "calibrate runs SPEC for S seconds on the REAL clock where it will run (--local N node\n"
  "processes, --hosts, or this process), without its faults and slowdowns, and writes FILE:\n"
  "SPEC on the virtual clock with cost.tau_per_node = each node's measured seconds per\n"
  "gradient and link.latency_seconds = half the median round trip of the routes between\n"
  "processes (the measurements as comments). `atrain run FILE` is the deployment's twin.\n";

const char* const compare_details =
  "compare runs SPEC's task once per algorithm and seed (seed .. seed+N-1): the algorithm\n"
  "block, and the topology block when there is one, come from\n"
  "config/algorithms/NAME.textproto, everything else from SPEC; --set applies to every run\n"
  "(an algorithm.NAME.* override only to that algorithm's runs). It writes\n"
  "DIR/compare.md, compare.json, curves.csv, bars.csv, staleness.csv, NAME_seedS/ per run,\n"
  "and PNG/SVG figures when gnuplot is on PATH.\n"
  "NAME: one of config/algorithms/NAME.textproto (an unknown name lists them all).\n";

const char* const run_details =
  "run --resume continues SPEC's run from a checkpoint it wrote (spec block checkpoint {\n"
  "at_seconds, every_seconds, file}); only stop/checkpoint/out_dir/progress may differ.\n"
  "With --hosts, the hosts need the same secret file, or certificates of one CA.\n";

const char* const node_details =
  "Serves as a host of multi-host runs until SIGINT/SIGTERM; prints\n"
  "\"atrain node: listening on HOST:PORT (...)\" once it does.\n";

const char* const plot_details =
  "plot draws RUN_DIR/metrics.csv (accuracy, loss, consensus error, bytes against time) with\n"
  "the fault windows of RUN_DIR/report.json shaded, as DIR/run.png and DIR/run.svg.\n";

const char* const launch_details =
  "launch starts N `atrain node --listen 127.0.0.1:0` processes sharing a throwaway secret,\n"
  "runs SPEC across them as `atrain run SPEC --hosts ...` would (with the run options given\n"
  "here; --threads and CAF's options go to the nodes too), then stops them (SIGTERM, SIGKILL\n"
  "after 5 s), also on SIGINT/SIGTERM or when a node dies before it prints its port.\n"
  "The exit status is the run's. The spec must use clock: REAL (--set clock=REAL).\n";

}  // namespace

unsigned long count_of(const std::string& what, const std::string& n, unsigned long lo,
                       unsigned long hi) {
  if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(n) < lo || std::stoul(n) > hi)
    throw usage_error(what + ": '" + n + "' is not a whole number from " + std::to_string(lo) +
                      " to " + std::to_string(hi));
  return std::stoul(n);
}

const std::vector<subcommand>& subcommands() {
  static const std::vector<subcommand> table{
    {"run", "SPEC", 1, 1, "run an experiment (SPEC's clock: virtual or real)", run_details,
     run_options_of, run_main, true},
    {"compare", "SPEC", 1, 1, "run SPEC's task under several algorithms and seeds", compare_details,
     compare_options, compare_main, true},
    {"check", "SPEC", 1, 1, "load, validate and prepare SPEC; run nothing", "", spec_options,
     check_main},
    {"topology", "SPEC", 1, 1, "print the run's graphs G_R and G_C", "", topology_options,
     topology_main},
    {"shards", "SPEC", 1, 1, "write the run's data split as JSON (for peers outside atrain)", "",
     shards_options, shards_main},
    {"node", "", 0, 0, "serve as a host of multi-host runs", node_details, node_options, node_main,
     true},
    {"plot", "RUN_DIR", 1, 1, "draw one run's curves (PNG and SVG)", plot_details, plot_options,
     plot_main},
    {"launch", "SPEC", 1, 1, "run SPEC across N local `atrain node` processes", launch_details,
     launch_options, launch_main, true},
    {"calibrate", "SPEC", 1, 1, "write a virtual twin of SPEC measured where it runs",
     calibrate_details, calibrate_options, calibrate_main, true},
  };
  return table;
}

caf::error apply_caf(caf::actor_system_config& cfg, const caf_passthrough& caf) {
  if (caf.empty())
    return caf::none;
  const auto& known = config_access::options(cfg);
  std::vector<std::string> args;
  for (const auto& a : caf.args)
    if (known.cli_long_name_lookup(caf_name(a)) != nullptr)
      args.push_back(a);
  std::ifstream file;
  std::istringstream none;
  if (!caf.config_file.empty()) {
    file.open(caf.config_file);
    if (!file)
      return caf::make_error(caf::sec::runtime_error, caf.config_file + ": cannot read");
  }
  auto err = cfg.parse(args, caf.config_file.empty() ? static_cast<std::istream&>(none) : file);
  if (!err && !cfg.remainder.empty())
    err = caf::make_error(caf::sec::runtime_error, "'" + cfg.remainder.front() + "' not taken");
  return err;
}

invocation parse_invocation(const subcommand& cmd, const std::vector<std::string>& given) {
  invocation in;
  in.command = cmd.name;
  const auto args = cmd.caf ? take_caf_args(given, in.caf) : given;
  auto d = visible_options(cmd);
  po::options_description hidden;
  hidden.add_options()("operand", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(d).add(hidden);
  po::positional_options_description pos;
  pos.add("operand", -1);
  const auto style = po::command_line_style::unix_style ^ po::command_line_style::allow_guessing;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).style(style).run(), in.vm);
    po::notify(in.vm);
  } catch (const po::unknown_option& e) {
    const auto name = e.get_option_name();
    throw usage_error("unknown option '" + name.substr(0, name.find('=')) + "' (atrain " +
                      cmd.name + " --help lists the options)");
  } catch (const po::invalid_command_line_syntax& e) {
    if (e.kind() == po::invalid_syntax::missing_parameter)
      throw usage_error(e.get_option_name() + " needs a value");
    throw usage_error(e.what());
  } catch (const po::multiple_occurrences& e) {
    throw usage_error(e.get_option_name() + " is given twice");
  } catch (const po::error& e) {
    throw usage_error(e.what());
  }
  in.operands = list_of(in.vm, "operand");
  if (in.operands.size() < cmd.min_operands)
    throw usage_error(std::string{"no "} + cmd.operands + " given");
  if (in.operands.size() > cmd.max_operands)
    throw usage_error("unexpected argument '" + in.operands[cmd.max_operands] + "'");
  if (cmd.caf) {
    const auto file = text_of(in.vm, "caf-config");
    if (!file.empty() && !in.caf.config_file.empty())
      throw usage_error("--caf-config and --caf#config-file say the same: give one");
    if (!file.empty())
      in.caf.config_file = file;
  }
  return in;
}

parsed common_of(const invocation& in) {
  const auto& vm = in.vm;
  parsed p;
  p.spec = in.operands.at(0);
  p.overrides = list_of(vm, "set");
  p.out = text_of(vm, "out");
  p.dot = text_of(vm, "dot");
  p.progress = progress_of(vm);
  if (vm.count("hosts"))
    p.hosts = hosts_of(text_of(vm, "hosts"));
  p.secret_file = text_of(vm, "secret-file");
  check_secret("--secret-file", p.secret_file);
  p.tls_cert = text_of(vm, "tls-cert");
  p.tls_key = text_of(vm, "tls-key");
  p.tls_ca = text_of(vm, "tls-ca");
  check_tls(p.tls_cert, p.tls_key, p.tls_ca);
  p.resume = text_of(vm, "resume");
  p.threads = threads_of(vm);
  p.caf = in.caf;
  return p;
}

compare_args compare_args_of(const invocation& in) {
  compare_args a;
  a.common = common_of(in);
  for (const auto& list : list_of(in.vm, "algorithms"))
    for (auto& n : split_list("--algorithms", list))
      a.algorithms.push_back(std::move(n));
  if (a.algorithms.empty())
    throw usage_error("--algorithms NAME[,NAME]... is required");
  a.seeds = static_cast<std::uint32_t>(count_of("--seeds", text_of(in.vm, "seeds"), 1, 1000));
  return a;
}

int dispatch(const std::vector<std::string>& args) {
  if (args.empty()) {
    print_overview(std::cerr);
    return 2;
  }
  const auto& first = args[0];
  if (first == "--version" || first == "version") {
    std::cout << "atrain " ATRAIN_VERSION "\n";
    return 0;
  }
  const bool help = first == "--help" || first == "-h" || first == "help";
  const std::string name = help && args.size() > 1 ? args[1] : first;
  if (help && args.size() == 1) {
    print_overview(std::cout);
    return 0;
  }
  const subcommand* cmd = nullptr;
  for (const auto& c : subcommands())
    if (name == c.name)
      cmd = &c;
  if (!cmd) {
    std::cerr << "atrain: unknown command '" << name << "' (atrain --help lists them)\n";
    return 2;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (help || std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
      std::find(rest.begin(), rest.end(), "-h") != rest.end()) {
    print_help(std::cout, *cmd);
    return 0;
  }
  try {
    auto in = parse_invocation(*cmd, rest);
    if (cmd->caf && !in.caf.empty() && !check_caf(in.caf))
      return 0;  // CAF printed its help (--caf#help)
    return cmd->main(in);
  } catch (const usage_error& e) {
    std::cerr << "atrain " << cmd->name << ": " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {  // never an abort: prepare() reports the usual place
    std::cerr << "atrain " << cmd->name << ": out of memory (std::bad_alloc); "
              << "docs/RELIABILITY.md \"Bounds\" lists the limits on specs and data\n";
    return 2;
  }
}

}  // namespace atrain::cli
