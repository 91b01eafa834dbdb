/// atrain: the command line. A thin client of atrain/engine.hpp; the
/// subcommands and their options are the table in options.cpp
/// (`atrain --help`, `atrain COMMAND --help`).
///
/// Exit status: 0 success, 1 the run failed, 2 bad spec / bad arguments.
#include <malloc.h>

#include <string>
#include <vector>

#include "options.hpp"

int main(int argc, char** argv) {
  // Parameter blobs are large and short-lived: serve them from the heap
  // rather than a fresh mmap per message (page faults were ~10% of a run).
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  return atrain::cli::dispatch({argv + 1, argv + argc});
}
