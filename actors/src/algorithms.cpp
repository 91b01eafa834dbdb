/// The runtime's entry points into an algorithm: each reads the spec's
/// descriptor (algorithm.hpp) and never names an algorithm.
#include "atrain/actors/algorithms.hpp"

#include "atrain/actors/algorithm.hpp"

namespace atrain {

bool algorithm_implemented(proto::AlgorithmSpec::KindCase kind) {
  return find_algorithm(kind) != nullptr;
}

node_actors spawn_node(caf::event_based_actor* parent, const context_ptr& ctx, std::uint32_t i) {
  return ctx->plan->algorithm().spawn_node(parent, ctx, i);
}

void wire_nodes(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, link_list& links, caf::actor& server) {
  const auto& d = ctx->plan->algorithm();
  d.wire(sup, ctx, nodes, links);
  if (d.evaluation.evaluated_hub)
    if (const auto k = d.evaluation.evaluated_hub(*ctx->plan->algo_config))
      server = nodes.at(*k).hub;
}

caf::actor spawn_replacement(caf::event_based_actor* sup, const context_ptr& ctx, std::uint32_t k,
                             std::uint64_t incarnation) {
  const auto& d = ctx->plan->algorithm();
  return d.spawn_replacement ? d.spawn_replacement(sup, ctx, k, incarnation) : caf::actor{};
}

void join_replacement(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                      restart_started started) {
  const auto& d = ctx->plan->algorithm();
  if (d.join)
    d.join(sup, ctx, r, std::move(started));
}

caf::expected<std::vector<node_actors>> spawn_algorithm(caf::event_based_actor* sup,
                                                        const context_ptr& ctx, link_list& links,
                                                        caf::actor& server) {
  if (ctx->plan->descriptor == nullptr)  // prepare_run refuses such a spec first
    return caf::make_error(caf::sec::invalid_argument,
                           "algorithm '" + ctx->plan->algorithm_name() +
                             "' is accepted by the spec but not implemented by this engine yet");
  std::vector<node_actors> nodes;
  const auto n = static_cast<std::uint32_t>(ctx->plan->nodes());
  for (std::uint32_t i = 0; i < n; ++i)
    nodes.push_back(spawn_node(sup, ctx, i));
  wire_nodes(sup, ctx, nodes, links, server);
  return nodes;
}

}  // namespace atrain
