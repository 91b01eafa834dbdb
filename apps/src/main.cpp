/// atrain: the command line. A thin client of atrain/engine.hpp.
///
///   atrain run SPEC [--set field.path=value]... [--out DIR] [--progress|--no-progress]
///   atrain topology SPEC [--set ...]... [--dot FILE]
///   atrain check SPEC [--set ...]...
///
/// Exit status: 0 success, 1 the run failed, 2 bad spec / bad arguments.
#include <cstdio>
#include <malloc.h>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"

namespace {

void usage(std::ostream& out) {
  out << "usage:\n"
         "  atrain run SPEC [--set field.path=value]... [--out DIR] [--progress|--no-progress]\n"
         "  atrain topology SPEC [--set field.path=value]... [--dot FILE]\n"
         "  atrain check SPEC [--set field.path=value]...\n"
         "\n"
         "SPEC is an ExperimentSpec in protobuf text format (see config/ and messages/atrain.proto).\n"
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
  std::cerr << "atrain: unknown command '" << cmd << "'\n";
  usage(std::cerr);
  return 2;
}
