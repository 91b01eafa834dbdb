#pragma once
/// DASGD, decentralized asynchronous SGD (ALGORITHMS.md §2): the spawn
/// function for a whole DASGD network and a test hook on what each node
/// created and applied.
#include <cstdint>
#include <memory>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/node_actor.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// DASGD's packet streams. seq = the origin's local number (1, 2, ...) of
/// the newest gradient inside, scalars = {gradient count c} or {c, 1}; the
/// packet holds the origin's gradients seq-c+1 .. seq, already weighted by
/// the origin's step sizes (f = sum gamma_k g_k). {c, 1} marks the first
/// packet after a restart fence: no link or outbox merges it into an
/// earlier packet (the shapes differ). `dasgd_relayed`: a packet a restart
/// donor passes on to a replacement, `from` still its origin.
enum dasgd_stream : std::uint32_t { dasgd_gradients = 31, dasgd_relayed = 32 };

/// Restart: a live node other than the donor fences its gradient stream.
using dasgd_fence_atom = caf::atom_constant<caf::atom("dfence")>;

/// Per origin node: gradient numbers (a donor's record, or the ones lost).
using dasgd_numbers = std::vector<std::vector<std::uint64_t>>;

/// A worker (also its node's "buffer" for the evaluator): node_actor's
/// messages and the groups below, each with who sends it.
using dasgd_worker_actor = node_actor::extend<
  // The supervisor's wiring: routes to every other node in id order, then the start.
  caf::reacts_to<init_atom, std::vector<caf::actor>>, caf::reacts_to<start_atom>,
  // Its own gradient's wake (the step number); the links' packets.
  caf::reacts_to<wake_atom, std::uint64_t>, caf::reacts_to<deliver_atom, packet>,
  // The evaluator: (messages, bytes, rejected), its traffic being in its snapshot.
  caf::replies_to<stats_atom>::with<std::uint64_t, std::uint64_t, std::uint64_t>,
  // The supervisor's restart hand-over (dasgd_restart.cpp): donate to node k's
  // replacement (k, sent, made) -> (model, record, lost, inbox, own fence), relay
  // up to the fences (k, per origin), or fence its own stream (k, sent, made) -> fence.
  caf::replies_to<restart_atom, std::uint32_t, std::uint64_t, std::uint64_t>::with<
    float_blob, dasgd_numbers, dasgd_numbers, std::vector<packet>, std::uint64_t>,
  caf::reacts_to<restart_atom, std::uint32_t, std::vector<std::uint64_t>>,
  caf::replies_to<dasgd_fence_atom, std::uint32_t, std::uint64_t,
                  std::uint64_t>::with<std::uint64_t>,
  // A replacement's join (the supervisor): model, record, lost, inbox, made,
  // routes, fences.
  caf::reacts_to<start_atom, float_blob, dasgd_numbers, dasgd_numbers, std::vector<packet>,
                 std::uint64_t, std::vector<caf::actor>, std::vector<std::uint64_t>>>;

/// What a DASGD node did, recorded only when the run has a run_probe.
struct dasgd_ledger {
  /// A gradient this node computed.
  struct created {
    std::uint64_t index = 0;         // local number, 1, 2, ...
    std::int64_t read_ns = 0;        // when x_i was read (the gradient started)
    std::int64_t done_ns = 0;        // when it completed (its creation time)
    double gamma = 0;                // the step size it was applied with
    std::size_t applied_before = 0;  // this node's applied entries at the read
    std::vector<float> g;            // the raw gradient
  };
  /// One gradient applied to x_i (own or remote), in application order.
  struct applied {
    std::uint32_t origin = 0;
    std::uint64_t index = 0;
  };
  std::vector<created> made;
  std::vector<applied> used;
  std::uint64_t packets_applied = 0;  // remote packets applied (a packet may hold several)
  std::uint64_t relayed = 0;          // packets relayed to a replacement (restart donor)
  /// A replacement: packets that came straight over a link though the
  /// donor's side covers them (numbers <= the origin's fence), dropped.
  std::uint64_t covered = 0;
};

/// Test hook (virtual clock with a run_probe only, between two scheduler
/// steps): moves out what the DASGD worker at `worker` recorded since the
/// last call. Empty for any other actor or once it is gone.
[[nodiscard]] dasgd_ledger dasgd_take_ledger(const caf::actor_addr& worker);

/// DASGD's part of checkpoint `ck` against `plan` (checkpoint.hpp,
/// load_checkpoint): every node's record of applied gradients names every
/// node and claims no gradient its origin had not made, batches have the
/// model's size. Empty when fine, else the reason.
[[nodiscard]] std::string dasgd_check_checkpoint(const proto::Checkpoint& ck, const run_plan& plan);

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
/// The workers of one process share a creation record for the staleness
/// measurement; a run spanning processes measures none.
[[nodiscard]] node_actors spawn_dasgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                           std::uint32_t i);

/// Restart (docs/RELIABILITY.md): worker k's replacement, which keeps every
/// message until the supervisor starts it.
[[nodiscard]] caf::actor spawn_dasgd_replacement(caf::event_based_actor* sup,
                                                 const context_ptr& ctx, std::uint32_t k);

/// The restart hand-over (dasgd.cpp's header comment): reads from every
/// link the highest gradient number its sender handed it, takes a donor's
/// model, record and inbox for the replacement, has every other live node
/// fence its gradient stream, then starts the replacement with the fences
/// and tells the donor up to where to relay.
void join_dasgd_worker(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                       restart_started started);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it.
void wire_dasgd(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, link_list& links);

/// Its spec block, parsed once (dasgd_spec.cpp; run_plan::config<dasgd_config>()).
struct dasgd_config : algorithm_config {
  static constexpr const char* name = "dasgd";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  std::uint32_t broadcast_every = 1;  // send the sum of the last k gradients every k
  bool coalesce = false;              // a busy link sums the gradients waiting for it
};

/// Its spec block's checks (dasgd_spec.cpp; algorithm_descriptor::check_block).
void dasgd_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
/// Its block as a dasgd_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
dasgd_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
