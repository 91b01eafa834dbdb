#pragma once
/// The spec's fault schedule as the actors consult it: at run time t, how
/// much slower a node computes, what a directed link does to a packet, and
/// whether a node's gradients are corrupted. Pure lookups over the spec's
/// windows: the randomness stays in the actors' own seeded generators, so a
/// virtual run with faults replays exactly.
#include <cstdint>
#include <string>
#include <vector>

#include "atrain.pb.h"

namespace atrain {

class fault_schedule {
public:
  fault_schedule() = default;
  explicit fault_schedule(const proto::FaultSchedule& spec);

  /// Per-fault counters, indexed like describe(): how often each fault acted
  /// (gradients slowed or corrupted, packets cut, lost or delayed).
  using hits = std::vector<std::uint64_t>;

  /// Product of the straggle factors active for `node` at time t (1 = none).
  [[nodiscard]] double compute_factor(std::uint32_t node, double t, hits* h = nullptr) const;

  /// The straggles active for `node` at time t, by what they scale on the
  /// real clock (Straggle.basis) and the fixed delay they add.
  struct slowdown {
    double measured = 1;  // product of the MEASURED factors
    double nominal = 1;   // product of the NOMINAL_TAU factors
    bool nominal_active = false;
    double add_seconds = 0;  // sum of add_seconds
  };
  [[nodiscard]] slowdown compute_slowdown(std::uint32_t node, double t, hits* h = nullptr) const;

  /// What the link from -> to adds at time t.
  struct link_effect {
    bool cut = false;          // a partition separates the two ends
    double loss = 0;           // extra loss of the active bursts, combined
    double extra_latency = 0;  // sum of the active delay spikes
  };
  [[nodiscard]] link_effect link(std::uint32_t from, std::uint32_t to, double t,
                                 hits* h = nullptr) const;

  /// Corrupts g in place when a bad-gradients window of `node` is active at
  /// t; returns whether it did.
  bool corrupt(std::uint32_t node, double t, float* g, std::size_t n, hits* h = nullptr) const;

  /// Number of faults (the size of describe() and of a hits vector).
  [[nodiscard]] std::size_t size() const;
  /// The describe() index of crash i (crashes come last but for joins).
  [[nodiscard]] std::size_t crash_index(int i) const;
  /// The describe() index of join i (joins come last).
  [[nodiscard]] std::size_t join_index(int i) const;

  /// True when any fault acts on links (they must then be spawned even when
  /// the link model itself is perfect).
  [[nodiscard]] bool touches_links() const;
  [[nodiscard]] bool empty() const;

  /// One line per injected fault for the report: kind and what it does.
  struct description {
    std::string kind;
    std::string what;
    double from = 0;
    double to = 0;  // 0 = to the end
  };
  [[nodiscard]] std::vector<description> describe() const;

private:
  proto::FaultSchedule spec_;
};

}  // namespace atrain
