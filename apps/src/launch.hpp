#pragma once
/// `atrain launch --local N SPEC [run options]`: N `atrain node` processes on
/// 127.0.0.1 with a throwaway secret, SPEC run across them in this process
/// exactly as `atrain run SPEC --hosts ... --secret-file ...`, the nodes
/// stopped and reaped at the end (also on SIGINT/SIGTERM of the launcher).
#include <cstddef>

#include "commands.hpp"

namespace atrain::cli {

struct launch_args {
  parsed run;  ///< SPEC and the run options; hosts and secret come from launch
  std::size_t local = 0;
};

/// Returns the run's exit status (1 when the nodes cannot be started).
[[nodiscard]] int launch(const launch_args& a);

}  // namespace atrain::cli
