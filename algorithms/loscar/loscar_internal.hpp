#pragma once
/// LOSCAR's private header: the root aggregator's state and behaviour
/// (loscar_aggregator.cpp), which loscar.cpp spawns, and the packet check both use.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "algorithms/gossip/gossip.hpp"
#include "algorithms/loscar/loscar.hpp"
#include "atrain/actors/blob_checks.hpp"

namespace atrain::loscar_detail {

/// True for a packet of stream `kind` carrying K finite floats and nothing else.
[[nodiscard]] inline bool sparse_well_formed(const packet& p, std::uint32_t kind, std::size_t k) {
  return p.kind == kind && p.seq > 0 && p.f.size() == k && p.d.empty() && p.scalars.empty() &&
         all_finite(p.f);
}

struct loscar_aggregator_state {
  std::uint32_t node = 0;  // hosting node a
  std::size_t n = 0;
  std::size_t k = 1;
  std::uint64_t round = 0;              // the round being collected
  std::vector<std::vector<float>> got;  // per sender; empty = not yet
  std::size_t count = 0;
  outbox out;  // routes to every worker, by node
  std::uint64_t rejected = 0;
  bool sent_since_drain = false;  // means sent since the last drain answer
  std::uint64_t seed = 0;         // the run's (S_r)
  std::vector<float> average;     // A: every coordinate's newest mean (x^0 first)
  std::vector<bool> dropped;      // per node: out of the round being collected
  std::size_t dropped_count = 0;
  /// Per node: absent from the start and not joined yet (faults.join): no
  /// round waits for it.
  std::vector<bool> absent;
  std::size_t absent_count = 0;
  /// Replacements waiting for the round being collected: node -> (worker,
  /// its route to the aggregator).
  std::map<std::uint32_t, std::pair<caf::actor, caf::actor>> joining;
  static inline const char* name = "atrain_loscar_aggregator";
};
using aggregator_ptr = loscar_aggregator_actor::stateful_pointer<loscar_aggregator_state>;

/// The root aggregator on node a (loscar_aggregator.cpp).
loscar_aggregator_actor::behavior_type loscar_aggregator(aggregator_ptr self, context_ptr ctx);

}  // namespace atrain::loscar_detail
