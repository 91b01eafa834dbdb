#pragma once
/// A host of a multi-host run (docs/ARCHITECTURE.md "Across machines"): the spawner
/// actor that `atrain node --listen` publishes. A driver sends it
/// (spawn_atom, spawn_request); the spawner checks the shared secret, prepares
/// the run from the spec with its own copy of the data, spawns the requested
/// nodes with the same actor code as a local run, and answers with their
/// handles. The nodes end when the driver's supervisor goes down (the run
/// ended, or the driver was lost).
///
/// Everything a peer sends is untrusted: a wrong secret, a malformed or
/// invalid spec, node ids out of range and unknown messages are refused,
/// logged and counted; the host keeps running.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/all.hpp>

namespace atrain {

class run_owners;  // basp_filter.hpp

struct host_options {
  /// Required before anything is spawned; empty only when TLS authenticates
  /// peers (then any CA-signed peer may spawn).
  std::string secret;
  /// Relative dataset paths resolve here; empty: the driver's spec directory
  /// (the same path on every machine, as on one machine).
  std::string data_root;
  /// Runs served at the same time.
  std::size_t max_runs = 4;
  /// Where refusals and run starts/ends are written (default: stderr).
  std::function<void(const std::string&)> log;
  /// Where the spawner records which actors belong to which driver's runs
  /// (its BASP guard lets a peer address only those); null: not recorded.
  std::shared_ptr<run_owners> owners;
};

/// Counters of a spawner (stats_atom answers them).
struct host_counters {
  std::uint64_t runs = 0;
  std::uint64_t refused = 0;     // spawn requests refused (secret, spec, ids, load)
  std::uint64_t unexpected = 0;  // messages of unknown type
};

[[nodiscard]] caf::actor spawn_host(caf::actor_system& sys, host_options opts);

/// Whether `a` and `b` are equal, in time independent of where they differ.
[[nodiscard]] bool same_secret(const std::string& a, const std::string& b) noexcept;

}  // namespace atrain
