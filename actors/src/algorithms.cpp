#include "atrain/actors/algorithms.hpp"

#include <stdexcept>

#include "atrain/actors/adpsgd.hpp"
#include "atrain/actors/allreduce.hpp"
#include "atrain/actors/async_ps.hpp"
#include "atrain/actors/centralized.hpp"
#include "atrain/actors/dasgd.hpp"
#include "atrain/actors/dpsgd.hpp"
#include "atrain/actors/local_sgd.hpp"
#include "atrain/actors/loscar.hpp"
#include "atrain/actors/rfast.hpp"
#include "atrain/actors/ring.hpp"
#include "atrain/actors/sgp.hpp"

namespace atrain {

namespace {

using node_fn = node_actors (*)(caf::event_based_actor*, const context_ptr&, std::uint32_t);
using wire_fn = void (*)(caf::event_based_actor*, const context_ptr&, std::vector<node_actors>&,
                         std::vector<caf::actor>&);

struct algorithm_entry {
  node_fn node = nullptr;
  wire_fn wire = nullptr;
};

[[nodiscard]] algorithm_entry entry(proto::AlgorithmSpec::KindCase kind) {
  switch (kind) {
    case proto::AlgorithmSpec::kRfast:
      return {spawn_rfast_node, wire_rfast};
    case proto::AlgorithmSpec::kCentralized:
      return {spawn_centralized_node, wire_centralized};
    case proto::AlgorithmSpec::kDpsgd:
      return {spawn_dpsgd_node, wire_dpsgd};
    case proto::AlgorithmSpec::kAdpsgd:
      return {spawn_adpsgd_node, wire_adpsgd};
    case proto::AlgorithmSpec::kAllreduce:
      return {spawn_allreduce_node, wire_ring};
    case proto::AlgorithmSpec::kLocalSgd:
      return {spawn_local_sgd_node, wire_ring};
    case proto::AlgorithmSpec::kLoscar:
      return {spawn_loscar_node, wire_loscar};
    case proto::AlgorithmSpec::kSgp:
    case proto::AlgorithmSpec::kOsgp:
      return {spawn_sgp_node, wire_sgp};
    case proto::AlgorithmSpec::kDasgd:
      return {spawn_dasgd_node, wire_dasgd};
    case proto::AlgorithmSpec::kAsyncPs:
      return {spawn_async_ps_node, wire_async_ps};
    default:
      return {};
  }
}

[[nodiscard]] algorithm_entry checked_entry(const run_context& ctx) {
  auto e = entry(ctx.plan->spec.algorithm().kind_case());
  if (e.node == nullptr)
    throw std::invalid_argument("algorithm '" + ctx.plan->algorithm_name() +
                                "' is accepted by the spec but not implemented by this engine yet");
  return e;
}

}  // namespace

bool algorithm_implemented(proto::AlgorithmSpec::KindCase kind) {
  return entry(kind).node != nullptr;
}

node_actors spawn_node(caf::event_based_actor* parent, const context_ptr& ctx, std::uint32_t i) {
  return checked_entry(*ctx).node(parent, ctx, i);
}

void wire_nodes(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, std::vector<caf::actor>& links,
                caf::actor& server) {
  checked_entry(*ctx).wire(sup, ctx, nodes, links);
  if (ctx->plan->spec.algorithm().has_async_ps())
    server = nodes.at(ctx->plan->spec.algorithm().async_ps().server()).hub;
}

caf::actor spawn_replacement(caf::event_based_actor* sup, const context_ptr& ctx, std::uint32_t k,
                             std::uint64_t incarnation) {
  const auto& a = ctx->plan->spec.algorithm();
  if (a.has_async_ps())
    return spawn_async_ps_replacement(sup, ctx, k);
  if (a.has_adpsgd())
    return spawn_adpsgd_replacement(sup, ctx, k, incarnation);
  if (a.has_dpsgd())
    return spawn_dpsgd_replacement(sup, ctx, k);
  if (a.has_allreduce())
    return spawn_allreduce_replacement(sup, ctx, k);
  if (a.has_local_sgd())
    return spawn_local_sgd_replacement(sup, ctx, k);
  if (a.has_sgp() || a.has_osgp())
    return spawn_sgp_replacement(sup, ctx, k);
  if (a.has_loscar())
    return spawn_loscar_replacement(sup, ctx, k);
  if (a.has_dasgd())
    return spawn_dasgd_replacement(sup, ctx, k);
  if (a.has_centralized())
    return spawn_centralized_replacement(sup, ctx);
  return {};
}

void join_replacement(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                      restart_started started) {
  const auto& a = ctx->plan->spec.algorithm();
  if (a.has_async_ps())
    join_async_ps_worker(sup, ctx, r, std::move(started));
  else if (a.has_adpsgd())
    join_adpsgd_worker(sup, ctx, r, std::move(started));
  else if (a.has_dpsgd())
    join_dpsgd_worker(sup, ctx, r, std::move(started));
  else if (a.has_allreduce() || a.has_local_sgd())
    join_ring_worker(sup, ctx, r, std::move(started));
  else if (a.has_sgp() || a.has_osgp())
    join_sgp_worker(sup, ctx, r, std::move(started));
  else if (a.has_loscar())
    join_loscar_worker(sup, ctx, r, std::move(started));
  else if (a.has_dasgd())
    join_dasgd_worker(sup, ctx, r, std::move(started));
  else if (a.has_centralized())
    join_centralized_worker(sup, ctx, r, std::move(started));
}

caf::expected<std::vector<node_actors>> spawn_algorithm(caf::event_based_actor* sup,
                                                        const context_ptr& ctx,
                                                        std::vector<caf::actor>& links,
                                                        caf::actor& server) {
  if (!algorithm_implemented(ctx->plan->spec.algorithm().kind_case()))
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
