#pragma once
/// Connecting a run to its hosts (docs/ARCHITECTURE.md "Across machines"): the
/// networking a multi-host process loads, and the driver's connections to
/// the hosts' spawners. Both run in the caller's thread before any of the
/// run's actors exist (connecting blocks; actors never do).
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "atrain/actors/context.hpp"

namespace atrain {

/// Mutual TLS files (PEM): all three or none.
struct tls_files {
  std::string certificate;
  std::string key;
  std::string ca;
  [[nodiscard]] bool enabled() const noexcept { return !certificate.empty(); }
};

/// Checks that the TLS files can be read and that the key matches the
/// certificate: caf_openssl only opens them at the first connection and
/// aborts the process when it cannot.
[[nodiscard]] caf::expected<void> check_tls_files(const tls_files& tls);

/// The scheduler of a REAL-clock process (a run, or a host of one):
/// `threads` workers (0 = one per core) sharing one FIFO queue.
void configure_real_clock(caf::actor_system_config& cfg, std::size_t threads);

/// Loads the middleman (and caf_openssl with `tls`), heartbeats so a frozen
/// peer is noticed within seconds, and direct connections between hosts.
void configure_networking(caf::actor_system_config& cfg, const tls_files& tls);

/// Where the run's nodes go and how to reach the hosts.
struct deploy_options {
  std::vector<std::string> hosts;        // "HOST:PORT"
  std::vector<std::uint32_t> placement;  // host per node; empty = round-robin
  std::string secret;
  tls_files tls;
};

/// The spec's deploy block with command-line values taking precedence;
/// reads the secret file. Returns an error naming the file or field.
[[nodiscard]] caf::expected<deploy_options> deploy_options_of(const run_plan& plan,
                                                              deploy_options flags);

/// Connects to every host; an error names the host that could not be
/// reached and why.
[[nodiscard]] caf::expected<std::shared_ptr<const deployment>>
connect_hosts(caf::actor_system& sys, const run_plan& plan, const deploy_options& opts);

/// Drops the driver's connection to host `h` at once: what CAF still
/// holds for it is discarded (SO_LINGER 0: the close resets the
/// connection) and the BASP broker sees the socket fail. CAF closes a dead
/// connection gracefully, unsent data first, and the middleman's shutdown
/// waits for every close: a frozen or cut-off host would hold the driver's
/// exit for as long as its window stays shut. Safe from any thread (plain
/// socket calls; nothing happens when the socket is no longer that host's).
/// Returns whether it dropped a connection.
bool abandon_host(const deployment& d, std::size_t h);

/// Host per node: `opts.placement`, or round-robin over `opts.hosts`.
[[nodiscard]] std::vector<std::uint32_t> placement_of(const deploy_options& opts,
                                                      std::size_t nodes);

/// Writes the deploy as run (hosts' addresses, host per node) into a
/// checkpoint's spec: a resumed run must have as many hosts, alike placed.
void record_deploy(const deployment& d, proto::Deployment& out);

/// Checks that checkpoint `ck` (read from `file`) was taken with the deploy
/// `opts` describes (none: in one process): the same host count and node
/// placement; the addresses may differ. An error names the file and both.
[[nodiscard]] caf::expected<void> check_resume_deploy(const proto::Checkpoint& ck,
                                                      const std::string& file,
                                                      const deploy_options& opts,
                                                      std::size_t nodes);

/// What each host of a resumed run gets of checkpoint `ck` (index = host;
/// `host_of`: host per node): the states of its nodes (every other node's
/// entry keeps only its id), with the spec, time and records; no links, no
/// evaluator (they live with the driver).
[[nodiscard]] std::vector<proto::Checkpoint>
checkpoint_parts(const proto::Checkpoint& ck, const std::vector<std::uint32_t>& host_of,
                 std::size_t hosts);

/// The shared secret in `path`, trailing whitespace removed (>= 16 characters).
[[nodiscard]] caf::expected<std::string> read_secret_file(const std::string& path);

/// Splits "HOST:PORT"; an error says what is wrong.
[[nodiscard]] caf::expected<std::pair<std::string, std::uint16_t>>
split_host_port(const std::string& s);

}  // namespace atrain
