#pragma once
/// The typed interface of the evaluator (actors/src/evaluator.cpp;
/// atrain/actors/evaluator.hpp says what each message means).
#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "atrain/actors/barrier_atoms.hpp"
#include "atrain/actors/link_actor.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

using evaluator_actor = caf::typed_actor<
  caf::reacts_to<eval_atom>,
  // (node, buffer gone, fault, effect): the node's worker is gone.
  caf::reacts_to<crash_atom, std::uint32_t, bool, std::uint64_t, std::string>,
  // (node, new worker, fault, effect); (node, new worker, new buffer, fault,
  // effect): a whole node restarted.
  caf::reacts_to<restart_atom, std::uint32_t, caf::actor, std::uint64_t, std::string>,
  caf::reacts_to<restart_atom, std::uint32_t, caf::actor, caf::actor, std::uint64_t, std::string>,
  // A new view (epoch, root, new links, buffers gone), taking a restarted
  // node back, or after a loss (+ fault, records, lost at).
  caf::reacts_to<epoch_atom, std::uint32_t, std::uint32_t, link_list, std::vector<std::uint32_t>>,
  caf::reacts_to<epoch_atom, std::uint32_t, std::uint32_t, link_list, std::vector<std::uint32_t>,
                 std::uint64_t, std::uint32_t, double>,
  caf::replies_to<ckpt_state_atom>::with<std::string>,
  caf::replies_to<final_atom>::with<report_bytes>>;

/// What the evaluator sends its supervisor and the run's log (subsets of
/// their messages): CAF 0.17 lets a typed actor send() only to typed handles.
using evaluator_listener = caf::typed_actor<caf::reacts_to<metric_atom, metric_sample>,
                                            caf::reacts_to<stop_atom, std::string>>;
using metric_log = caf::typed_actor<caf::reacts_to<metric_atom, metric_sample, bool>>;

}  // namespace atrain
