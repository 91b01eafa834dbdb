#pragma once
/// The typed interface of a link actor (one per directed edge,
/// actors/src/link.cpp; docs/ARCHITECTURE.md "Messages and interfaces").
/// Senders reach a link through their outbox's routes, which stay
/// caf::actor: a route is a link or, over a perfect link, the receiver
/// itself, and crosses processes inside rfast_epoch.
#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "atrain/actors/barrier_atoms.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// Whatever takes packets: a link, or the receiving worker, buffer or hub
/// (the subset of their interfaces a link sends to).
using packet_sink = caf::typed_actor<caf::reacts_to<deliver_atom, packet>>;

using link_actor = caf::typed_actor<
  // A packet to carry (from a sender's outbox, or relayed).
  caf::reacts_to<deliver_atom, packet>,
  // Its own timers: the wire is free again; an ack came back; a
  // retransmission timer (id, attempt) fired.
  caf::reacts_to<release_atom>, caf::reacts_to<ack_atom, std::uint64_t>,
  caf::reacts_to<resend_atom, std::uint64_t, std::uint64_t>,
  // link.window: answer a sender's request now (answer_later's timer).
  caf::reacts_to<answer_atom, std::uint64_t>,
  // cost.message_seconds: a packet held while its sender coded the ones
  // before it now leaves.
  caf::reacts_to<depart_atom, packet>,
  // Its counters (the evaluator).
  caf::replies_to<stats_atom>::with<link_stats>,
  // The supervisor: re-point at a replacement (dead worker, new handle);
  // (sender node, whether it sent anything, the highest seq it sent).
  caf::reacts_to<restart_atom, caf::actor_addr, caf::actor>,
  caf::replies_to<resume_atom>::with<std::uint32_t, bool, std::uint64_t>,
  // The checkpoint barrier: seconds it stays busy (< 0: quiet); its state.
  caf::replies_to<ckpt_drain_atom>::with<double>,
  caf::replies_to<ckpt_state_atom>::with<std::string>>;

/// The links of a run, in spawn order.
using link_list = std::vector<link_actor>;

}  // namespace atrain
