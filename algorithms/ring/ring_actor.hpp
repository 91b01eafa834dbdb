#pragma once
/// The typed interface of a ring worker (Ring-AllReduce SGD and Local SGD,
/// ring.hpp ring_worker; docs/ARCHITECTURE.md "Messages and interfaces").
#include <cstdint>
#include <vector>

#include "atrain/actors/node_actor.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

using ring_worker_actor = node_actor::extend<
  // The wiring (wire_ring): its route to the successor (none with one node).
  caf::reacts_to<start_atom, std::vector<caf::actor>>,
  // Its gradient's wake (its own timer).
  caf::reacts_to<wake_atom>,
  // The predecessor's chunks (its link).
  caf::reacts_to<deliver_atom, packet>,
  // Supervision (join_ring_worker): rank k is restarted, freeze -> (rounds
  // finished, last sum, its count, model, steps, averages, the ring's
  // members); then the round decided (m, a finished round m-1's sum, its
  // count), which ends the freeze (k not a member: it joins the ring).
  caf::replies_to<restart_atom, std::uint32_t>::with<std::uint64_t, float_blob, double, float_blob,
                                                     std::uint64_t, std::uint64_t,
                                                     std::vector<std::uint32_t>>,
  caf::reacts_to<resume_atom, std::uint64_t, float_blob, double>,
  // A replacement's join (join_ring_worker): its routes, a donor's model,
  // steps and averages, the round to join and the members from then on.
  caf::reacts_to<start_atom, std::vector<caf::actor>, float_blob, std::uint64_t, std::uint64_t,
                 std::uint64_t, std::vector<std::uint32_t>>>;

}  // namespace atrain
