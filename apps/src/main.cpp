/// atrain: the command line. A thin client of atrain/engine.hpp.
///
///   atrain run SPEC [--set field.path=value]... [--out DIR] [--progress|--no-progress]
///              [--resume CHECKPOINT]
///              [--hosts HOST:PORT,... --secret-file F | --tls-cert F --tls-key F --tls-ca F]
///   atrain node [--listen HOST:PORT] [--secret-file F] [--data-root DIR]
///               [--tls-cert F --tls-key F --tls-ca F] [--allow-remote] [--max-runs N]
///               [--max-message-mb N] [--no-guard]
///   atrain topology SPEC [--set ...]... [--dot FILE]
///   atrain check SPEC [--set ...]...
///   atrain shards SPEC [--set ...]... [--out FILE]
///   atrain compare SPEC --algorithms NAME[,NAME]... [--seeds N] [--set ...]... [--out DIR]
///                  [--progress|--no-progress]
///   atrain plot RUN_DIR [--out DIR]
///
/// Exit status: 0 success, 1 the run failed, 2 bad spec / bad arguments.
#include <cstdio>
#include <malloc.h>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "compare.hpp"
#include "node.hpp"
#include "plot.hpp"
#include "shards.hpp"

namespace {

void usage(std::ostream& out) {
  out << "usage:\n"
         "  atrain run SPEC [--set field.path=value]... [--out DIR] [--progress|--no-progress]\n"
         "             [--resume CHECKPOINT]\n"
         "             [--hosts HOST:PORT,... [--secret-file F] [--tls-cert F --tls-key F --tls-ca F]]\n"
         "  atrain node [--listen HOST:PORT] [--secret-file F] [--data-root DIR]\n"
         "              [--tls-cert F --tls-key F --tls-ca F] [--allow-remote] [--max-runs N]\n"
         "              [--max-message-mb N] [--no-guard]   (atrain node --help)\n"
         "  atrain topology SPEC [--set field.path=value]... [--dot FILE]\n"
         "  atrain check SPEC [--set field.path=value]...\n"
         "  atrain shards SPEC [--set field.path=value]... [--out FILE]\n"
         "  atrain compare SPEC --algorithms NAME[,NAME]... [--seeds N] [--set field.path=value]...\n"
         "                 [--out DIR] [--progress|--no-progress]\n"
         "  atrain plot RUN_DIR [--out DIR]\n"
         "\n"
         "SPEC is an ExperimentSpec in protobuf text format (see config/ and messages/atrain.proto).\n"
         "compare runs SPEC's task once per algorithm and seed (seed .. seed+N-1): the algorithm\n"
         "block, and the topology block when there is one, come from\n"
         "config/algorithms/NAME.textproto, everything else from SPEC; --set applies to every run\n"
         "(an algorithm.NAME.* override only to that algorithm's runs). It writes\n"
         "DIR/compare.md, compare.json, curves.csv, bars.csv, staleness.csv, NAME_seedS/ per run,\n"
         "and PNG/SVG figures when gnuplot is on PATH (DIR defaults to compare_<SPEC name>).\n"
         "NAME: rfast, dasgd, loscar, loscar_naive, allreduce, dpsgd, adpsgd, sgp, osgp,\n"
         "local_sgd, async_ps, centralized.\n"
         "node serves as a host of multi-host runs until SIGINT/SIGTERM (default --listen\n"
         "127.0.0.1:7420; port 0 picks a free one and prints it); run --hosts places node i on\n"
         "host i mod H (or deploy.placement) and runs there; the hosts need the same secret\n"
         "file, or certificates of one CA (mutual TLS).\n"
         "run --resume continues SPEC's run from a checkpoint it wrote (spec block checkpoint {\n"
         "at_seconds, every_seconds, file}); only stop/checkpoint/out_dir/progress may differ.\n"
         "plot draws RUN_DIR/metrics.csv (accuracy, loss, consensus error, bytes vs time) with\n"
         "the fault windows of RUN_DIR/report.json shaded: DIR/run.{png,svg} (DIR: RUN_DIR).\n"
         "shards writes the run's data split as JSON (node i's training rows, the test rows),\n"
         "for peers outside atrain (bench/ddp_peer.py); FILE defaults to stdout.\n"
         "Exit status: 0 success, 1 the run failed, 2 bad spec or arguments.\n";
}

} // namespace

int main(int argc, char** argv) {
  // Parameter blobs are large and short-lived: serve them from the heap
  // rather than a fresh mmap per message (page faults were ~10% of a run).
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "node")
    return atrain::cli::node(args);
  if (cmd == "compare") {
    atrain::cli::compare_args c;
    if (!atrain::cli::parse_compare(args, c)) {
      usage(std::cerr);
      return 2;
    }
    return atrain::cli::compare(c);
  }
  if (cmd == "plot") {
    std::string run_dir, out_dir;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--out" && i + 1 < args.size()) {
        out_dir = args[++i];
      } else if (args[i].rfind("--out=", 0) == 0) {
        out_dir = args[i].substr(6);
      } else if (run_dir.empty() && args[i].rfind("--", 0) != 0) {
        run_dir = args[i];
      } else {
        std::cerr << "atrain plot: unexpected argument '" << args[i]
                  << "' (usage: atrain plot RUN_DIR [--out DIR])\n";
        return 2;
      }
    }
    return atrain::cli::plot_run(run_dir, out_dir);
  }
  atrain::cli::parsed p;
  if (!atrain::cli::parse(args, p)) {
    usage(std::cerr);
    return 2;
  }
  if (cmd == "run")
    return atrain::cli::run(p);
  if (cmd == "topology")
    return atrain::cli::topology(p);
  if (cmd == "check")
    return atrain::cli::check(p);
  if (cmd == "shards")
    return atrain::cli::shards(p);
  std::cerr << "atrain: unknown command '" << cmd << "'\n";
  usage(std::cerr);
  return 2;
}
