#pragma once
/// SGP's private header: the worker's state and the restart functions
/// (sgp_restart.cpp) that sgp.cpp's worker calls.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/gossip/gossip.hpp"
#include "algorithms/sgp/sgp.hpp"

namespace atrain::sgp_detail {

/// node_base::x holds z_i = x_i / w_i in float (the gradient's read point);
/// node_base::neighbours the distinct out-neighbours, aligned with the routes.
struct sgp_state : gossip::node_base {
  pushsum_node ps;
  std::uint32_t n = 1;
  bool overlap = false;         // OSGP
  std::uint64_t max_ahead = 0;  // OSGP: tau; SGP: 0
  double gamma = 0;
  double decay = 0;
  bool computing = false;                // a gradient is in progress
  exactly_once seen;                     // incoming seqs (one stream per receiver)
  std::uint64_t highest_seen = 0;        // the highest incoming seq received (0: none)
  double seq_rate = 0;                   // see future_seq_rate
  std::map<std::uint64_t, packet> held;  // SGP: messages of steps not completed yet
  barrier_hold hold;                     // checkpoints
  /// Per out-slot a (to neighbours[a]): messages and weight sent since that
  /// neighbour last (re)joined (what a restart reports lost with it).
  std::vector<std::uint64_t> sent_count;
  std::vector<double> sent_w;
  gossip::run_members members;  // joins (faults.join): who is in the run
  static inline const char* name = "atrain_sgp_worker";
};
using sgp_ptr = sgp_worker_actor::stateful_pointer<sgp_state>;

/// Restart: (donate_atom, k) asks a live node for half of its (x, w).
using donate_atom = sgp_donate_atom;

/// The in-slot of an incoming seq: the sender's step s = seq - 1 mod m.
[[nodiscard]] inline std::size_t in_slot(const sgp_state& st, std::uint64_t seq) {
  return static_cast<std::size_t>((seq - 1) % pushsum_period(st.n));
}

// ---- restart, the worker's side (sgp_restart.cpp)

std::tuple<std::uint64_t, std::uint64_t, double> fence_for(sgp_ptr self, run_context& ctx,
                                                           std::uint32_t id, std::uint32_t k);
std::tuple<double_blob, double, std::uint64_t> donate(sgp_ptr self, run_context& ctx,
                                                      std::uint32_t id, std::uint32_t k);
void join(sgp_ptr self, std::uint64_t step, const double_blob& x, double w,
          const std::vector<std::uint64_t>& fence, std::uint32_t donor);

// ---- the supervisor's side of restarts and joins (sgp_restart.cpp)

/// Donors for node k: its in-neighbours, its out-neighbours, then anyone.
[[nodiscard]] std::shared_ptr<std::vector<std::uint32_t>> donor_candidates(std::uint32_t k,
                                                                           std::uint32_t n);
/// done(x, w, donor, where the state came from).
using donor_found = std::function<void(double_blob, double, std::uint32_t, std::string)>;
/// Asks `candidates` from `next` on, in order, for half of their (x, w);
/// the first that answers is the donor (none: x^0 with weight 1).
void find_donor(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                std::shared_ptr<std::vector<std::uint32_t>> candidates, std::size_t next,
                donor_found done);

// ---- joins, the worker's side (sgp_join.cpp)

/// After step steps-1: its message counts as received when its source was
/// not in the run then (nobody waits for it); then the joins due now.
void step_done(sgp_state& st, std::uint32_t id);

}  // namespace atrain::sgp_detail
