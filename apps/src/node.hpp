#pragma once
#include <string>
#include <vector>

namespace atrain::cli {

/// atrain node --listen HOST:PORT [--secret-file F] [--data-root DIR]
///             [--tls-cert F --tls-key F --tls-ca F] [--allow-remote] [--max-runs N]
///             [--max-message-mb N] [--no-guard] | --help
/// Serves as a host of multi-host runs until SIGINT or SIGTERM.
[[nodiscard]] int node(const std::vector<std::string>& args);

} // namespace atrain::cli
