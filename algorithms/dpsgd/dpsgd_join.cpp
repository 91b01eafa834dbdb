/// D-PSGD: a node absent from the start joins the run (faults.join; see
/// join_dpsgd_node in dpsgd.hpp and docs/RELIABILITY.md "Joining nodes").
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "algorithms/dpsgd/dpsgd.hpp"
#include "algorithms/gossip/gossip.hpp"
#include "atrain/actors/ask_nodes.hpp"
#include "atrain/actors/run_plan.hpp"

namespace atrain {

namespace {

using join_answer = std::tuple<std::uint64_t, float_blob>;  // (round, x)

/// The joiner's model: its first live neighbour's (g_r order), else the
/// lowest live node's; with where it came from.
std::pair<float_blob, std::string> donor_model(const run_plan& plan, std::uint32_t k,
                                               const std::vector<std::optional<join_answer>>& got) {
  auto from = [&](std::uint32_t j) {
    return std::make_pair(std::get<1>(*got[j]), "node " + std::to_string(j) + "'s model");
  };
  for (auto j : plan.topo->g_r.out(k))
    if (got[j])
      return from(j);
  for (std::uint32_t j = 0; j < got.size(); ++j)
    if (got[j])
      return from(j);
  return {float_blob{plan.x0}, "x^0 (no node answered)"};
}

}  // namespace

void join_dpsgd_node(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                     restart_started started) {
  using ask = ask_nodes<join_answer, dpsgd_worker_actor>;
  const auto n = static_cast<std::uint32_t>(r.nodes.size());
  auto decide = [=](const ask::answers& got) {
    const auto [round, members] = gossip::join_point(got, r.node);
    auto [x, source] = donor_model(*ctx->plan, r.node, got);
    for (std::uint32_t j = 0; j < n; ++j)
      if (got[j])
        sup->send(caf::actor_cast<dpsgd_worker_actor>(r.nodes[j].worker), resume_atom::value, round,
                  r.node);
    const auto neighbours = ctx->plan->topo->g_r.out(r.node).size();
    sup->send(caf::actor_cast<dpsgd_worker_actor>(r.replacement), start_atom::value, round,
              std::move(x), std::vector<float_blob>(neighbours), r.nodes.at(r.node).worker_routes,
              members);
    started(source + ", joining round " + std::to_string(round) + " (every node mixes over the " +
            std::to_string(members.size()) + " nodes in the run from then on)");
  };
  // An absent node (or a gone one) does not answer: it is not in the run.
  ask::run(sup, ctx, other_workers(r), decide, join_atom::value, r.node);
}

}  // namespace atrain
