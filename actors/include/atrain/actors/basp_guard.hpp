#pragma once
/// A front end for the BASP port of a host without TLS (issue 7, "Remote
/// input is untrusted"). CAF 0.17.6 reads a 32-byte BASP header and then
/// allocates whatever payload length it announces (up to 4 GiB) before
/// reading it; no CAF option limits that. The guard is a broker in the
/// middleman's multiplexer that owns the public port, opens one connection to
/// the real BASP port (loopback, ephemeral) per client, and forwards bytes
/// both ways. In the client-to-host direction it follows the BASP framing and
/// closes both sides when a header announces more than the limit or an
/// unknown operation: CAF never sees that header.
#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include <caf/all.hpp>

namespace atrain {

/// BASP framing of CAF 0.17.6 (caf/io/basp/header.hpp, written by
/// caf::binary_serializer, integers in network byte order):
/// operation (1 byte), padding (2), flags (1), payload_len (4),
/// operation_data (8), source_actor (8), dest_actor (8); then payload_len bytes.
inline constexpr std::size_t basp_header_size = 32;
/// What a client sends first, once it has read the server's handshake.
inline constexpr std::uint8_t basp_client_handshake = 0x01;
/// The highest operation CAF 0.17.6 knows (heartbeat; server_handshake is 0).
inline constexpr std::uint8_t basp_last_operation = 0x06;
/// The default limit of `atrain node --max-message-mb`: far above any atrain
/// message (a parameter vector of 10^7 floats is 40 MB).
inline constexpr std::uint32_t default_max_basp_payload = 256u << 20;

/// Follows one client-to-host BASP byte stream, however it is split into
/// reads: the first header must be a client handshake, every header must
/// name a known operation and announce at most the limit. After a refusal
/// it ignores everything else.
class basp_stream_checker {
public:
  explicit basp_stream_checker(std::uint32_t max_payload) noexcept : max_payload_{max_payload} {}

  /// Consumes `n` bytes; false when a header in them breaks the rules
  /// (reason() says which).
  [[nodiscard]] bool consume(const char* data, std::size_t n);

  [[nodiscard]] bool refused() const noexcept { return !reason_.empty(); }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  /// Complete headers accepted so far.
  [[nodiscard]] std::uint64_t headers() const noexcept { return headers_; }

private:
  void check_header();

  std::uint32_t max_payload_;
  std::array<unsigned char, basp_header_size> header_{};
  std::size_t header_fill_ = 0;
  std::uint64_t payload_left_ = 0;
  std::uint64_t headers_ = 0;
  std::string reason_;
};

struct basp_guard_options {
  /// The public address (what `--listen` says).
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  /// The middleman's BASP port on 127.0.0.1.
  std::uint16_t basp_port = 0;
  std::uint32_t max_payload = default_max_basp_payload;
  /// Where refusals are written (default: stderr).
  std::function<void(const std::string&)> log;
};

/// What the guard answers to (stats_atom): connections accepted, refused,
/// and open now.
struct basp_guard_stats {
  std::uint64_t accepted = 0;
  std::uint64_t refused = 0;
  std::uint64_t open = 0;
};

struct basp_guard {
  caf::actor actor;
  /// The public port it listens on (the one asked for, or the one picked).
  std::uint16_t port = 0;
};

/// Opens the public port (in the caller's thread, like publish) and spawns
/// the guard on it. The guard answers (stats_atom) with
/// (accepted, refused, open) as three std::uint64_t.
[[nodiscard]] caf::expected<basp_guard> spawn_basp_guard(caf::actor_system& sys,
                                                         basp_guard_options opts);

/// With middleman.enable-automatic-connections CAF's BASP broker opens a
/// second port (ephemeral, every interface, plain BASP even when the node
/// speaks TLS, no guard) and tells peers about it through its ConfigServ.
/// This closes that port and tells peers to connect to `host`:`port`
/// instead (the guard), or, with an empty `host`, nowhere (peers keep
/// routing through the node that introduced them). CAF opens the port with
/// its BASP broker, at the first publish or connection: call this after one.
/// Nothing to do without automatic connections. Blocks the caller (a main
/// thread, before serving).
[[nodiscard]] caf::expected<void> replace_automatic_connection_port(caf::actor_system& sys,
                                                                    const std::string& host,
                                                                    std::uint16_t port);

}  // namespace atrain
