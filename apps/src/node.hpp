#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "atrain/actors/basp_guard.hpp"
#include "atrain/actors/deploy.hpp"
#include "commands.hpp"

namespace atrain::cli {

/// atrain node's checked arguments (options.cpp makes them).
struct node_args {
  std::string listen = "127.0.0.1:7420";
  std::string secret_file;
  std::string data_root;
  tls_files tls;
  bool allow_remote = false;
  bool guard = true;
  std::size_t max_runs = 4;
  std::uint32_t max_message_mb = default_max_basp_payload >> 20;
  /// Guard limits (basp_guard_options): authentication timeout, idle
  /// timeout, connections waiting to authenticate at once.
  std::size_t auth_timeout_ms = 5000;
  std::size_t idle_timeout_s = 60;
  std::size_t max_unauthenticated = 64;
  std::size_t threads = 0;  ///< scheduler threads (0: one per core)
  caf_passthrough caf;
};

/// Serves as a host of multi-host runs until SIGINT or SIGTERM.
[[nodiscard]] int node(const node_args& n);

}  // namespace atrain::cli
