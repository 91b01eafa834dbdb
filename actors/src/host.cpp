/// The spawner of a multi-host run's host (see host.hpp).
#include "atrain/actors/host.hpp"

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "atrain/actors/algorithms.hpp"
#include "atrain/actors/basp_filter.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/context.hpp"
#include "atrain/actors/exceptions.hpp"
#include "atrain/messages/spec.hpp"

namespace atrain {

bool same_secret(const std::string& a, const std::string& b) noexcept {
  if (a.size() != b.size())  // only the length leaks
    return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

namespace {

/// Ends one run's actors on this host when the driver's supervisor goes
/// down: the run ended normally, or the driver (or its connection) was lost.
/// It also answers a checkpoint's drain poll for this host (see drain()).
struct keeper_state {
  std::vector<caf::actor> actors;
  context_ptr ctx;
  /// remote_sent at the previous poll when every packet was answered then.
  std::optional<std::uint64_t> quiet_at;
  static inline const char* name = "atrain_run_keeper";

  /// The answer to ckpt_drain_atom: quiet (-1) when every packet this
  /// host's outboxes sent to another process was answered, at this poll and
  /// at the previous one, with none sent in between. Then every such packet
  /// reached its receiver (a link, a node) before the round that asked
  /// everyone this time began, so that round saw it. Otherwise 0: ask again.
  double drain() {
    const auto answered = ctx->remote_answered.load();
    const auto sent = ctx->remote_sent.load();  // read second: sent >= answered
    const bool quiet = sent == answered && quiet_at == sent;
    quiet_at = sent == answered ? std::optional<std::uint64_t>{sent} : std::nullopt;
    return quiet ? -1.0 : 0.0;
  }
};

caf::behavior run_keeper(caf::stateful_actor<keeper_state>* self, std::vector<caf::actor> actors,
                         context_ptr ctx, caf::actor supervisor, caf::actor spawner) {
  name_exceptions(self);
  self->state.actors = std::move(actors);
  self->state.ctx = std::move(ctx);
  self->attach_functor([actors = self->state.actors] {
    for (const auto& a : actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  });
  self->monitor(supervisor);
  self->set_down_handler([=](caf::down_msg&) {
    for (const auto& a : self->state.actors)
      self->send_exit(a, caf::exit_reason::user_shutdown);
    self->send(spawner, done_atom::value);
    self->quit();
  });
  return {
    [](stop_atom) {},
    [=](ckpt_drain_atom) { return self->state.drain(); },
  };
}

struct spawner_state {
  host_options opts;
  host_counters counters;
  /// Shared with the exit functor, which runs after the state is gone.
  std::shared_ptr<std::set<caf::actor>> keepers = std::make_shared<std::set<caf::actor>>();
  /// The actor ids of each run (by its keeper's id), to forget at its end.
  std::map<caf::actor_id, std::vector<caf::actor_id>> run_ids;
  static inline const char* name = "atrain_host_spawner";
};
using spawner_ptr = caf::stateful_actor<spawner_state>*;

void log(spawner_ptr self, const std::string& line) {
  auto& st = self->state;
  if (st.opts.log)
    st.opts.log(line);
  else
    std::cerr << "atrain node: " << line << std::endl;
}

[[nodiscard]] std::string peer_of(spawner_ptr self) {
  const auto& src = self->current_sender();
  return src ? caf::to_string(src->node()) : std::string{"an anonymous sender"};
}

/// Checks and prepares request `r`; returns the run's context or the reason
/// to refuse it.
caf::expected<context_ptr> admit(spawner_ptr self, const spawn_request& r) {
  auto& st = self->state;
  auto refuse = [](std::string why) -> caf::expected<context_ptr> {
    return caf::make_error(caf::sec::invalid_argument, std::move(why));
  };
  if (!st.opts.secret.empty() && !same_secret(st.opts.secret, r.secret))
    return refuse("wrong shared secret");
  if (st.keepers->size() >= st.opts.max_runs)
    return refuse("this host already serves " + std::to_string(st.keepers->size()) +
                  " runs (its limit)");
  loaded_spec ls;
  if (r.spec.empty() || !ls.spec.ParseFromString(r.spec))
    return refuse("the spec is not a binary atrain.proto.ExperimentSpec");
  ls.file = r.spec_label.empty() ? std::string{"(spec from the driver)"} : r.spec_label;
  ls.base_dir = st.opts.data_root.empty() ? r.base_dir : st.opts.data_root;
  if (r.nodes.empty())
    return refuse("no nodes requested");
  std::shared_ptr<const run_plan> plan;
  try {
    plan = prepare_host_run(ls, r.nodes);  // check_spec first, then this host's rows
  } catch (const std::exception& e) {
    return refuse(std::string{"the spec cannot run here: "} + e.what());
  }
  std::set<std::uint32_t> seen;
  for (auto k : r.nodes)
    if (k >= plan->nodes() || !seen.insert(k).second)
      return refuse("node " + std::to_string(k) +
                    " is out of range or requested twice (the run has " +
                    std::to_string(plan->nodes()) + " nodes)");
  if (!r.supervisor)
    return refuse("no supervisor to report to");
  auto ctx = std::make_shared<run_context>();
  ctx->plan = std::move(plan);
  ctx->spans_processes = true;
  if (!r.checkpoint.empty()) {
    auto ck = std::make_shared<proto::Checkpoint>();
    const auto label =
      r.checkpoint_label.empty() ? std::string{"the checkpoint"} : r.checkpoint_label;
    if (!ck->ParseFromString(r.checkpoint))
      return refuse("cannot resume: " + label + ": this host's part cannot be parsed");
    if (auto why = check_checkpoint_nodes(*ck, *ctx->plan, r.nodes); !why.empty())
      return refuse("cannot resume: " + label + ": " + why);
    ctx->resume = std::move(ck);
    ctx->resume_file = label;
  }
  // The driver's run clock, less the one-way delay of this request (a
  // resumed run's clock reads the checkpoint's time plus the time since).
  ctx->t0 = self->clock().now() - to_timespan(r.run_seconds);
  return ctx;
}

/// The run's actors (and its keeper) belong to the requester's node: its
/// connection may address them (basp_filter.hpp).
void record_owner(spawner_ptr self, const spawn_reply& out) {
  auto& st = self->state;
  const auto& src = self->current_sender();
  if (!st.opts.owners || !src)
    return;
  std::vector<caf::actor_id> ids{out.keeper.id()};
  for (const auto& n : out.nodes)
    for (const auto& a : {n.worker, n.buffer, n.hub})
      if (a)
        ids.push_back(a.id());
  st.opts.owners->add(src->node(), ids);
  st.run_ids[out.keeper.id()] = std::move(ids);
}

void forget_owner(spawner_ptr self, caf::actor_id keeper) {
  auto& st = self->state;
  auto i = st.run_ids.find(keeper);
  if (i == st.run_ids.end())
    return;
  if (st.opts.owners)
    st.opts.owners->remove(i->second);
  st.run_ids.erase(i);
}

caf::behavior spawner(spawner_ptr self, host_options opts) {
  name_exceptions(self);
  self->state.opts = std::move(opts);
  // A host shutting down ends the runs it serves (their keepers end the nodes).
  self->attach_functor([keepers = self->state.keepers] {
    for (const auto& k : *keepers)
      caf::anon_send_exit(k, caf::exit_reason::user_shutdown);
  });
  self->set_default_handler(
    [=](caf::scheduled_actor*, caf::message_view& x) -> caf::result<caf::message> {
      auto& st = self->state;
      if (++st.counters.unexpected <= 100) {
        auto text = x.content().stringify();
        if (text.size() > 200)
          text = text.substr(0, 200) + "...";
        log(self, "ignored a message of unexpected type from " + peer_of(self) + ": " + text);
      }
      return caf::sec::unexpected_message;
    });
  return {
    [=](spawn_atom, spawn_request& r) -> caf::result<spawn_reply> {
      auto& st = self->state;
      auto ctx = admit(self, r);
      if (!ctx) {
        ++st.counters.refused;
        const auto why = error_text(ctx.error());
        log(self, "refused a spawn request from " + peer_of(self) + ": " + why);
        return ctx.error();
      }
      spawn_reply out;
      std::vector<caf::actor> actors;
      try {
        for (auto k : r.nodes) {
          auto node = spawn_node(self, *ctx, k);
          out.nodes.push_back({k, node.worker, node.buffer, node.hub});
          for (const auto& a : {node.worker, node.buffer, node.hub})
            if (a && std::find(actors.begin(), actors.end(), a) == actors.end())
              actors.push_back(a);
        }
      } catch (const std::exception& e) {
        for (const auto& a : actors)
          self->send_exit(a, caf::exit_reason::user_shutdown);
        ++st.counters.refused;
        log(self, std::string{"refused a spawn request: "} + e.what());
        return caf::make_error(caf::sec::invalid_argument, e.what());
      }
      out.keeper = self->spawn(run_keeper, std::move(actors), *ctx, r.supervisor,
                               caf::actor_cast<caf::actor>(self));
      st.keepers->insert(out.keeper);
      record_owner(self, out);
      ++st.counters.runs;
      std::string ids;
      for (auto k : r.nodes)
        ids += (ids.empty() ? "" : ",") + std::to_string(k);
      log(self, "run '" + (*ctx)->plan->name + "' (" + (*ctx)->plan->algorithm_name() +
                  "): spawned nodes " + ids + " for " + peer_of(self) + ", holding " +
                  std::to_string((*ctx)->plan->train->size()) + " of " +
                  std::to_string((*ctx)->plan->train_rows) + " training rows" +
                  ((*ctx)->resume ? ", resumed from " + (*ctx)->resume_file + " (t=" +
                                      std::to_string((*ctx)->resume->time_seconds()) + " s)"
                                  : std::string{}));
      return out;
    },
    [=](done_atom) {
      auto& st = self->state;
      st.keepers->erase(caf::actor_cast<caf::actor>(self->current_sender()));
      forget_owner(self, self->current_sender()->id());
      log(self, "a run ended; " + std::to_string(st.keepers->size()) + " still running");
    },
    [=](stats_atom) {
      const auto& c = self->state.counters;
      return caf::make_message(c.runs, c.refused, c.unexpected);
    },
  };
}

}  // namespace

caf::actor spawn_host(caf::actor_system& sys, host_options opts) {
  return sys.spawn(spawner, std::move(opts));
}

}  // namespace atrain
