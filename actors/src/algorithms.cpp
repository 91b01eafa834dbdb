#include "atrain/actors/algorithms.hpp"

#include "atrain/actors/allreduce.hpp"
#include "atrain/actors/adpsgd.hpp"
#include "atrain/actors/async_ps.hpp"
#include "atrain/actors/centralized.hpp"
#include "atrain/actors/dasgd.hpp"
#include "atrain/actors/dpsgd.hpp"
#include "atrain/actors/local_sgd.hpp"
#include "atrain/actors/loscar.hpp"
#include "atrain/actors/rfast.hpp"
#include "atrain/actors/sgp.hpp"

namespace atrain {

bool algorithm_implemented(proto::AlgorithmSpec::KindCase kind) {
  switch (kind) {
    case proto::AlgorithmSpec::kRfast:
    case proto::AlgorithmSpec::kCentralized:
    case proto::AlgorithmSpec::kDpsgd:
    case proto::AlgorithmSpec::kAdpsgd:
    case proto::AlgorithmSpec::kAllreduce:
    case proto::AlgorithmSpec::kLocalSgd:
    case proto::AlgorithmSpec::kLoscar:
    case proto::AlgorithmSpec::kSgp:
    case proto::AlgorithmSpec::kOsgp:
    case proto::AlgorithmSpec::kDasgd:
    case proto::AlgorithmSpec::kAsyncPs:
      return true;
    default:
      return false;
  }
}

caf::expected<std::vector<node_actors>> spawn_algorithm(caf::event_based_actor* sup,
                                                        const context_ptr& ctx,
                                                        std::vector<caf::actor>& links,
                                                        caf::actor& server) {
  switch (ctx->plan->spec.algorithm().kind_case()) {
    case proto::AlgorithmSpec::kRfast:
      return spawn_rfast(sup, ctx, links);
    case proto::AlgorithmSpec::kCentralized:
      return spawn_centralized(sup, ctx);
    case proto::AlgorithmSpec::kDpsgd:
      return spawn_dpsgd(sup, ctx, links);
    case proto::AlgorithmSpec::kAdpsgd:
      return spawn_adpsgd(sup, ctx, links);
    case proto::AlgorithmSpec::kAllreduce:
      return spawn_allreduce(sup, ctx, links);
    case proto::AlgorithmSpec::kLocalSgd:
      return spawn_local_sgd(sup, ctx, links);
    case proto::AlgorithmSpec::kLoscar:
      return spawn_loscar(sup, ctx, links);
    case proto::AlgorithmSpec::kSgp:
    case proto::AlgorithmSpec::kOsgp:
      return spawn_sgp(sup, ctx, links);
    case proto::AlgorithmSpec::kDasgd:
      return spawn_dasgd(sup, ctx, links);
    case proto::AlgorithmSpec::kAsyncPs:
      return spawn_async_ps(sup, ctx, links, server);
    default:
      return caf::make_error(caf::sec::invalid_argument,
                             "algorithm '" + ctx->plan->algorithm_name() +
                               "' is accepted by the spec but not implemented by this engine yet");
  }
}

} // namespace atrain
