#pragma once
/// The front end of every host (issues 7 and 16). The guard is a
/// broker in the middleman's multiplexer that owns the public port. A peer
/// first authenticates (`auth` below: challenge-response with the shared
/// secret; or, on a TLS host, a mutual TLS handshake the guard terminates
/// itself), bounded in time, in number and in bytes; until then nothing it
/// sends goes anywhere. Then the guard opens a socket pair, hands one end to
/// CAF's BASP broker as a connection to the published spawner, and forwards
/// bytes both ways; CAF listens on no port at all. In the peer-to-host
/// direction it follows the BASP framing and closes both sides when a header
/// announces more than the limit or an unknown operation: CAF 0.17.6 would
/// allocate whatever payload length a header announces (up to 4 GiB).
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace atrain {

class run_owners;  // basp_filter.hpp

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

/// One BASP header as the checker read it, with the first bytes of its
/// payload (up to basp_prefix_limit: where CAF writes the routing, the
/// forwarding stack and the message's type names).
struct basp_frame {
  std::uint8_t operation = 0;
  std::uint8_t flags = 0;
  std::uint32_t payload_len = 0;
  std::uint64_t operation_data = 0;
  std::uint64_t source_actor = 0;
  std::uint64_t dest_actor = 0;
  std::vector<char> prefix;
};
inline constexpr std::size_t basp_prefix_limit = 4096;

/// Follows one client-to-host BASP byte stream, however it is split into
/// reads: the first header must be a client handshake, every header must
/// name a known operation and announce at most the limit. After a refusal
/// it ignores everything else.
/// With an inspector, each frame (with its payload prefix) is also judged
/// by it: the message filter (basp_filter.hpp).
class basp_stream_checker {
public:
  /// Reads a frame's payload prefix and answers why it is refused ("": let
  /// it through). Called before the prefix's last byte is relayed, so a
  /// refused message never reaches CAF whole.
  using inspector = std::function<std::string(const basp_frame&)>;

  explicit basp_stream_checker(std::uint32_t max_payload, inspector inspect = {}) noexcept
    : max_payload_{max_payload}, inspect_{std::move(inspect)} {}

  /// Consumes `n` bytes; false when a header in them breaks the rules
  /// (reason() says which).
  [[nodiscard]] bool consume(const char* data, std::size_t n);

  [[nodiscard]] bool refused() const noexcept { return !reason_.empty(); }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  /// Whether the inspector (not the framing) refused.
  [[nodiscard]] bool filtered() const noexcept { return filtered_; }
  /// Complete headers accepted so far.
  [[nodiscard]] std::uint64_t headers() const noexcept { return headers_; }

private:
  void check_header();
  void take_prefix(const char*& data, std::size_t& n);
  void inspect();

  std::uint32_t max_payload_;
  inspector inspect_;
  std::array<unsigned char, basp_header_size> header_{};
  std::size_t header_fill_ = 0;
  std::uint64_t payload_left_ = 0;
  std::uint64_t headers_ = 0;
  basp_frame frame_;
  std::size_t prefix_want_ = 0;  // bytes of frame_.prefix still to read
  std::string reason_;
  bool filtered_ = false;
};

/// Authentication before BASP (issue 16): what a peer of a secret-mode host
/// must do before a single byte of it reaches CAF's BASP broker. Mutual, by
/// HMAC-SHA-256 of both sides' fresh nonces with the shared secret, which
/// never crosses the wire:
///   host -> peer: auth_magic, nonce_h                         (hello)
///   peer -> host: nonce_p, HMAC(secret, "client" nonce_h nonce_p)  (response)
///   host -> peer: HMAC(secret, "server" nonce_h nonce_p)       (proof)
/// then BASP as usual (the peer's client handshake first). A recorded
/// response is worthless on another connection (another nonce_h); the two
/// labels keep either side's MAC from serving as the other's.
namespace auth {
inline constexpr std::size_t nonce_size = 32;
inline constexpr std::size_t mac_size = 32;
inline constexpr char magic[8] = {'a', 't', 'r', 'a', 'i', 'n', '/', '1'};
inline constexpr std::size_t hello_size = sizeof magic + nonce_size;
inline constexpr std::size_t response_size = nonce_size + mac_size;
inline constexpr std::size_t proof_size = mac_size;
using nonce = std::array<unsigned char, nonce_size>;
using mac = std::array<unsigned char, mac_size>;

/// A fresh nonce from OpenSSL's CSPRNG (aborts the process when it has none:
/// authentication without randomness would be worthless).
[[nodiscard]] nonce fresh_nonce();
/// HMAC-SHA-256(secret, label host_nonce peer_nonce); label "client" for the
/// peer's response, "server" for the host's proof.
[[nodiscard]] mac mac_of(const std::string& secret, bool client, const unsigned char* host_nonce,
                         const unsigned char* peer_nonce);
/// Compares in time independent of where they differ.
[[nodiscard]] bool same_mac(const unsigned char* a, const unsigned char* b) noexcept;
}  // namespace auth

struct basp_guard_options {
  /// The public address (what `--listen` says).
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  /// The shared secret peers authenticate with (see `auth`)...
  std::string secret;
  /// ... or mutual TLS: the guard terminates TLS itself (a peer's completed
  /// handshake, its certificate checked, is its authentication) and relays
  /// the plaintext; make_guard_tls_context makes it. Null: the secret.
  std::shared_ptr<ssl_ctx_st> tls;
  /// The actor a peer reaches once authenticated (the host's spawner): the
  /// guard hands each authenticated connection to CAF's BASP broker over a
  /// socket pair, as published at `port`. CAF itself listens nowhere.
  caf::actor target;
  std::uint32_t max_payload = default_max_basp_payload;
  /// A peer that has not authenticated within this is closed.
  caf::timespan auth_timeout = std::chrono::seconds{5};
  /// An authenticated peer that sends nothing for this long is closed (CAF's
  /// heartbeats, every 500 ms, keep a live one busy).
  caf::timespan idle_timeout = std::chrono::seconds{60};
  /// Connections accepted and not yet authenticated at once; more are closed
  /// at once.
  std::size_t max_unauthenticated = 64;
  /// Bytes one side of a connection may have waiting to be written; more
  /// closes it (flow control keeps it near 1 MiB plus one burst of reads).
  std::size_t max_buffered = 16u << 20;
  /// Where refusals are written (default: stderr).
  std::function<void(const std::string&)> log;
  /// The actors of each peer's runs (the spawner keeps them): what an
  /// authenticated peer may address besides the spawner (basp_filter.hpp).
  /// Required.
  std::shared_ptr<const run_owners> owners;
};

/// The guard's counters; (stats_atom) answers them as one line of text
/// (counters_text), which `atrain node` prints at exit.
struct basp_guard_stats {
  std::uint64_t accepted = 0;       // TCP connections accepted
  std::uint64_t authenticated = 0;  // of them, authenticated and handed to BASP
  std::uint64_t refused = 0;        // closed by the guard, every reason below
  std::uint64_t wrong_mac = 0;      // wrong secret, replayed or forged response
  std::uint64_t tls = 0;            // TLS handshake failed (no or a rogue certificate, not TLS)
  std::uint64_t auth_timeout = 0;   // no response within auth_timeout (slowloris)
  std::uint64_t too_many = 0;       // over max_unauthenticated
  std::uint64_t idle = 0;           // authenticated, silent for idle_timeout
  std::uint64_t basp = 0;           // a BASP header broke the rules
  std::uint64_t filtered = 0;       // a message atrain does not send, or not to the peer's actors
  std::uint64_t buffered = 0;       // over max_buffered
  std::uint64_t gave_up = 0;        // the peer closed before authenticating
  std::uint64_t open = 0;           // open now
};
[[nodiscard]] std::string counters_text(const basp_guard_stats& s);

struct basp_guard {
  caf::actor actor;
  /// The public port it listens on (the one asked for, or the one picked).
  std::uint16_t port = 0;
};

/// The guard's TLS context for a TLS host: its certificate and key, and
/// the CA whose certificates peers must present (an error names the file).
[[nodiscard]] caf::expected<std::shared_ptr<ssl_ctx_st>>
make_guard_tls_context(const std::string& certificate, const std::string& key,
                       const std::string& ca);

/// Opens the public port (in the caller's thread, like publish) and spawns
/// the guard on it.
[[nodiscard]] caf::expected<basp_guard> spawn_basp_guard(caf::actor_system& sys,
                                                         basp_guard_options opts);

/// The peer's side of `auth`, for a driver (or any client of a secret-mode
/// host): connects to `host`:`port`, authenticates both ways within
/// `timeout`, then hands the socket to this system's BASP broker and returns
/// the actor the host published. Blocks the caller (a main thread, before
/// any actor of the run exists); an error says which step failed.
[[nodiscard]] caf::expected<caf::actor>
connect_authenticated(caf::actor_system& sys, const std::string& host, std::uint16_t port,
                      const std::string& secret, caf::timespan timeout);

/// With middleman.enable-automatic-connections CAF's BASP broker opens a
/// second port (ephemeral, every interface, plain BASP even when the node
/// speaks TLS, no guard) and tells peers about it through its ConfigServ.
/// configure_networking turns them off; should a CAF option turn them on,
/// this closes that port and tells peers to connect nowhere (they keep
/// routing through the node that introduced them). Nothing to do without
/// automatic connections. Blocks the caller (a main thread, before serving).
[[nodiscard]] caf::expected<void> close_automatic_connection_port(caf::actor_system& sys);

}  // namespace atrain
