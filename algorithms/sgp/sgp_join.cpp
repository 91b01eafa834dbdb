/// SGP and OSGP: a node absent from the start joins the run (faults.join;
/// join_sgp_node in sgp.hpp, docs/RELIABILITY.md "Joining nodes"). The
/// worker's side (which messages count as received without coming, the
/// members) and the supervisor's (the freeze, the step, the donor).
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "algorithms/sgp/sgp.hpp"
#include "algorithms/sgp/sgp_internal.hpp"
#include "atrain/actors/ask_nodes.hpp"

namespace atrain {

namespace sgp_detail {

void step_done(sgp_state& st, std::uint32_t id) {
  const auto steps = st.ps.steps;
  if (steps > 0 && st.n > 1 && !st.members[pushsum_source(id, steps - 1, st.n)]) {
    // Step steps-1's source was not in the run: no message comes (seq = steps).
    (void)st.seen.first_time(0, pushsum_mass, steps);
    st.highest_seen = std::max(st.highest_seen, steps);
  }
  (void)st.members.take_due(steps);
}

}  // namespace sgp_detail

void join_sgp_node(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                   restart_started started) {
  using ask = ask_nodes<std::tuple<std::uint64_t>, sgp_worker_actor>;
  const auto k = r.node;
  const auto n = static_cast<std::uint32_t>(r.nodes.size());
  auto decide = [=](const ask::answers& got) {
    auto point = gossip::join_point(got, k);  // (step, members), kept by the lambda below
    const auto step = point.first;
    const auto members = std::move(point.second);
    sgp_detail::find_donor(
      sup, ctx, r, sgp_detail::donor_candidates(k, n), 0,
      [=](double_blob x, double w, std::uint32_t donor, std::string source) {
        for (std::uint32_t j = 0; j < n; ++j)
          if (got[j])
            sup->send(caf::actor_cast<sgp_worker_actor>(r.nodes[j].worker), resume_atom::value,
                      step, k);
        // Every incoming seq up to `step` (steps before it) counts as
        // received: nobody sent to the node before it was in.
        std::vector<std::uint64_t> fence(std::max<std::uint32_t>(1, pushsum_period(n)), step);
        sup->send(caf::actor_cast<sgp_worker_actor>(r.replacement), start_atom::value, step,
                  std::move(x), w, fence, r.nodes.at(k).worker_routes, donor, members);
        started(source + ", joining at step " + std::to_string(step) + " (the run has " +
                std::to_string(members.size()) + " nodes from then on)");
      });
  };
  // An absent node (or a gone one) does not answer: it is not in the run.
  ask::run(sup, ctx, other_workers(r), decide, join_atom::value, k);
}

}  // namespace atrain
