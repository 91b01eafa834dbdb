#pragma once
/// The command line's one parser: a table of subcommands, each with its
/// Boost.Program_options description, so that adding a subcommand is one
/// entry in subcommands() (options.cpp). Every argument error is a
/// usage_error: one sentence naming the argument, exit status 2, before
/// anything runs.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>

#include "commands.hpp"

namespace atrain::cli {

/// A bad command line; what() names the argument and says what is wrong.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a subcommand's main gets.
struct invocation {
  std::string command;
  boost::program_options::variables_map vm;
  std::vector<std::string> operands;  ///< positional arguments (SPEC, ...)
  caf_passthrough caf;                ///< --caf#KEY=VALUE and --caf-config FILE
};

struct subcommand {
  const char* name;
  const char* operands;  ///< in the usage line: "SPEC", "RUN_DIR", ""
  std::size_t min_operands;
  std::size_t max_operands;
  const char* summary;  ///< one line of `atrain --help`
  const char* details;  ///< after the options in `atrain NAME --help`
  void (*add_options)(boost::program_options::options_description&);
  int (*main)(const invocation&);
  bool caf = false;  ///< takes --caf#KEY=VALUE (CAF's own options) and --caf-config
};

/// Every subcommand, in the order `atrain --help` lists them.
[[nodiscard]] const std::vector<subcommand>& subcommands();

/// The whole command line (argv without argv[0]); returns the exit status.
[[nodiscard]] int dispatch(const std::vector<std::string>& args);

/// Parses `args` (after the subcommand's name) against `cmd`'s options.
/// Throws usage_error.
[[nodiscard]] invocation parse_invocation(const subcommand& cmd,
                                          const std::vector<std::string>& args);

/// run/topology/check/shards/launch's common arguments, checked: SPEC, --set,
/// --out, --progress, deployment (HOST:PORT entries, a readable secret,
/// complete TLS), --threads, CAF's. Throws usage_error.
[[nodiscard]] parsed common_of(const invocation& in);

/// Applies CAF's own options to `cfg` (after atrain's settings, so they win):
/// the --caf-config file, then the --caf#KEY=VALUE arguments; those `cfg`
/// does not know (e.g. middleman.* in a single-process run) are skipped.
[[nodiscard]] caf::error apply_caf(caf::actor_system_config& cfg, const caf_passthrough& caf);

/// Whether `n` is a whole number in [lo, hi]; `what` names the option.
/// Throws usage_error.
[[nodiscard]] unsigned long count_of(const std::string& what, const std::string& n,
                                     unsigned long lo, unsigned long hi);

}  // namespace atrain::cli
