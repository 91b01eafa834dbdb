/// The supervisor's multi-host part: asking the hosts to spawn their nodes,
/// and a host lost during the run.
#include <cstdio>
#include <filesystem>

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/algorithms.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/deploy.hpp"
#include "atrain/actors/evaluator.hpp"
#include "atrain/actors/host.hpp"
#include "supervisor_state.hpp"

namespace atrain::sup {

/// A resumed run's host lost before it answered: it may have refused the
/// size of its part (the BASP guard closes a connection announcing more
/// than the host's --max-message-mb).
[[nodiscard]] std::string resume_hint(const sup_state& st, std::uint32_t h) {
  if (h >= st.request_bytes.size())
    return {};
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f", static_cast<double>(st.request_bytes[h]) / (1 << 20));
  return std::string{" (resuming, it was sent "} + mib +
         " MiB in one message, the spec and its "
         "nodes' part of the checkpoint: above its --max-message-mb?)";
}

/// Multi-host run: asks every host to spawn its nodes; once all answered,
/// wires them from here and starts the run.
void spawn_on_hosts(sup_ptr self) {
  auto& st = self->state;
  const auto& d = *st.ctx->deploy;
  const auto n = static_cast<std::uint32_t>(st.ctx->plan->nodes());
  std::string spec_bytes;
  st.ctx->plan->spec.SerializeToString(&spec_bytes);  // output: each host prepares its own plan
  // A resumed run: each host gets its nodes' states (checkpoint_parts).
  std::vector<proto::Checkpoint> parts;
  if (st.ctx->resume)
    parts = checkpoint_parts(*st.ctx->resume, d.host_of, d.hosts.size());
  st.keepers.assign(d.hosts.size(), caf::actor{});
  auto nodes = std::make_shared<std::vector<node_actors>>(n);
  auto pending = std::make_shared<std::size_t>(0);
  for (std::uint32_t h = 0; h < d.hosts.size(); ++h) {
    spawn_request r;
    for (std::uint32_t k = 0; k < n; ++k)
      if (d.host_of[k] == h)
        r.nodes.push_back(k);
    if (r.nodes.empty())
      continue;
    r.secret = d.secret;
    r.spec = spec_bytes;
    r.spec_label = st.ctx->plan->spec_file;
    // Absolute: the host's working directory is not ours.
    r.base_dir =
      std::filesystem::absolute(st.ctx->plan->base_dir.empty() ? "." : st.ctx->plan->base_dir)
        .string();
    r.run_seconds = st.ctx->seconds(self);
    r.supervisor = caf::actor_cast<caf::actor>(self);
    if (!parts.empty()) {
      parts[h].SerializeToString(&r.checkpoint);
      r.checkpoint_label = st.ctx->resume_file;
      st.request_bytes.resize(d.hosts.size());
      st.request_bytes[h] = r.spec.size() + r.checkpoint.size();
    }
    ++*pending;
    const auto name = d.names[h];
    self->monitor(d.hosts[h]);
    st.spawner_of[d.hosts[h].address()] = h;
    // Loading the data on the host takes a while (MNIST: seconds).
    self->request(d.hosts[h], std::chrono::seconds{120}, spawn_atom::value, std::move(r))
      .then(
        [self, nodes, pending, h](spawn_reply& reply) {
          self->state.keepers.at(h) = std::move(reply.keeper);
          for (auto& x : reply.nodes)
            if (x.node < nodes->size())
              (*nodes)[x.node] =
                node_actors{std::move(x.worker), std::move(x.buffer), std::move(x.hub), {}};
          if (--*pending > 0 || self->state.stopping)
            return;
          for (std::size_t k = 0; k < nodes->size(); ++k)
            if (!(*nodes)[k].worker)
              return fail(self, "a host did not return node " + std::to_string(k));
          link_list links;
          caf::actor server;
          wire_nodes(self, self->state.ctx, *nodes, links, server);
          start_run(self, std::move(*nodes), std::move(links), server);
        },
        [self, name](caf::error& e) {
          fail(self, "host " + name + " did not spawn its nodes: " + error_text(e));
        });
  }
}

/// Multi-host run: host `h` is gone (its connection closed or stopped
/// answering heartbeats). Its nodes are lost for good, like a whole-node
/// crash: the run goes on without them, or ends saying why it cannot.
void host_lost(sup_ptr self, std::uint32_t h) {
  auto& st = self->state;
  const auto& d = *st.ctx->deploy;
  // CAF gave up on it, but would keep what it queued for it (relayed
  // messages too) until a frozen or cut-off host takes it: dropped now, so
  // that neither the rest of the run nor the driver's exit waits on it.
  abandon_host(d, h);
  if (!st.lost_hosts.insert(h).second)
    return;
  const auto& plan = *st.ctx->plan;
  const double t = st.ctx->seconds(self);
  std::vector<std::uint32_t> gone;
  std::string ids;
  for (std::uint32_t k = 0; k < st.nodes.size(); ++k)
    if (d.host_of[k] == h) {
      gone.push_back(k);
      ids += (ids.empty() ? "" : ",") + std::to_string(k);
      for (const auto& a : {st.nodes[k].worker, st.nodes[k].buffer, st.nodes[k].hub})
        if (a)
          st.crashed.insert(a.address());
    }
  const std::string what = "host " + d.names[h] + " lost at " + std::to_string(t) +
                           " s (its connection closed or its heartbeats stopped); node" +
                           (gone.size() > 1 ? "s " : " ") + ids + " gone with it";
  if (st.stopping) {  // no recovery now; the final evaluation goes on without them
    if (st.evaluator)
      for (auto k : gone)
        self->send(st.evaluator, crash_atom::value, k, true, unplanned_fault,
                   what + "; the run was ending");
    return;
  }
  if (st.ckpt && st.ckpt->active())  // its nodes' states are gone with it
    return fail(self, what + ", during a checkpoint barrier: the checkpoint cannot be "
                             "taken (or the resumed run started) without them");
  if (gone.size() == st.nodes.size())
    return fail(self, what + ": no node is left");
  const auto& algo = plan.algorithm();
  if (algo.critical_node)
    if (const auto k = algo.critical_node(*plan.algo_config); k && d.host_of[*k] == h)
      return fail(self, what + ": " + algo.critical_role + " was on it");
  if (const auto why = needs_every_node(plan); !why.empty())
    return fail(self,
                what + ": " + plan.algorithm_name() + " cannot go on without them (" + why + ")");
  std::optional<loss_outcome> loss;
  if (st.recovery) {
    loss = st.recovery->lose(*st.side, node_loss{gone, true, t, false, what});
    if (!loss)
      return;
  }
  for (auto k : gone) {
    st.ctx->events.record(st.ctx->ns(self), k, event_kind::crash, unplanned_fault);
    self->send(st.evaluator, crash_atom::value, k, true, unplanned_fault,
               what + (loss ? loss->effect : "; the others go on"));
  }
  if (loss && loss->new_view)
    st.recovery->start_view(*st.side, unplanned_fault, static_cast<std::uint32_t>(gone.size()), t);
}

}  // namespace atrain::sup
