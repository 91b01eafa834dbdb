/// LOSCAR-SGD: local SGD with overlapped, sparse, delay-corrected averaging
/// (ALGORITHMS.md §3). One worker actor per node and one root aggregator actor.
///
/// Round r = 0, 1, ... of worker i (steps gamma_k = gamma / (1 + decay k),
/// k = local steps of this worker so far):
///   1. S_r = K coordinates of [0, d) drawn uniformly without replacement
///      (loscar_sample: partial Fisher-Yates from rng(derive_seed(
///      derive_seed(run seed, 'LOSC'), r))), K = max(1, round(p d)). Every
///      worker draws S_r itself; indices are never sent.
///   2. w = x_i; N_i times: g = g_i(w) (takes tau_i: the wake), w -= gamma_k g.
///      y_i = w; only y_i[S_r] is ever used again, so only those K values are
///      copied (a real copy: later steps do not touch it). Send y_i[S_r]
///      (stream loscar_up, seq r + 1) to the aggregator.
///   3. Q_i more steps on w while the average is in flight: z_i = w.
///   4. The aggregator, once it holds all n vectors of round r, sums them in
///      double in node order 0..n-1 (the result does not depend on arrival
///      order), m_r = sum / n, and sends m_r (stream loscar_down, seq r + 1)
///      to every worker.
///   5. merge (loscar_merge, one code path, a flag):
///        DELAY_CORRECTED  x_i = z_i;  x_i[S_r] += m_r - y_i[S_r]
///        NAIVE            x_i = z_i;  x_i[S_r]  = m_r
///      then round r + 1 starts at once.
/// Choices:
///  - The average arriving before the Q_i overlap steps are done waits until
///    they are (the overlap count is exact); the Q_i steps done first, the
///    worker idles until the average arrives (no extra steps).
///  - blocking: Q_i = 0 (send, wait, merge).
///  - N_i = local_steps if set, else max(1, round(round_seconds / tau_i)),
///    tau_i = cost tau of node i x its slowdown (the plan's, jitter ignored).
///  - Q_i = overlap_steps if set, else the whole steps that fit in the
///    expected in-flight window:
///        hop      = latency + (24 + 4K) / bandwidth   (bandwidth 0: no term)
///        up_j     = 0 for the aggregator's own node a, hop otherwise
///        down_i   = 0 for i = a, hop otherwise
///        arrive_i = max_j (N_j tau_j + up_j) + down_i
///        Q_i      = floor((arrive_i - N_i tau_i) / tau_i)
///    i.e. the wait for the slowest worker's N_j tau_j minus one's own
///    N_i tau_i, plus the round trip on the link model. On the real clock the
///    same plan figures are used (they are the spec's, not measured).
///  - Worker a (the node hosting the aggregator) talks to the aggregator
///    directly, without a link (same node); every other worker over the
///    acknowledged links i -> a and a -> i.
///  - Packets arrive at least once, maybe duplicated or reordered. Both ends
///    de-duplicate by (sender, round): the aggregator keeps round r's vector
///    per sender and ignores a second one or one of a finished round; a
///    worker ignores a second mean of its round or one of an earlier round.
///    A vector of a round the aggregator has not reached, a mean of a round
///    the worker has not sent yet or is beyond it, an unknown sender or
///    stream, a wrong size or a non-finite value are rejected (counted,
///    traced, never applied).
///  - Staleness (report): per merge, the local steps between the snapshot
///    y_i and the merge, i.e. Q_i.
///  - The evaluated model is the node average of the workers' x_i; the
///    aggregator holds no model. It is node a's "buffer" for the evaluator:
///    it answers (stats_atom) with its messages, bytes and rejections.
/// Checkpoints (README "Checkpoint and resume"): a worker asked to pause
/// holds at its next gradient boundary, i.e. instead of starting a gradient
/// (in any phase); a worker waiting for m_r has no gradient in flight and
/// counts as at rest. At rest the aggregator may be collecting a round (a
/// held worker has not sent its y_i yet): its round number and the vectors
/// already in are saved with node a's state, as is each worker's place in
/// its round (phase, steps done, y_i[S_r], an early m_r). The aggregator
/// takes part in the drain through worker a: worker a asks it and answers
/// the supervisor with both answers (the aggregator is busy once when it
/// sent means since it last answered: they must be seen on the links, or,
/// for worker a, merged).
/// Restart: see loscar_aggregator.cpp.
#include "algorithms/loscar/loscar.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/exceptions.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "algorithms/gossip/gossip.hpp"
#include "algorithms/loscar/loscar_internal.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/kernels/rng.hpp"

namespace atrain {

std::size_t loscar_k(double sparsity, std::size_t dim) {
  const auto k = static_cast<std::size_t>(std::llround(sparsity * static_cast<double>(dim)));
  return std::min(dim, std::max<std::size_t>(1, k));
}

std::vector<std::uint32_t> loscar_sample(std::uint64_t run_seed, std::uint64_t round,
                                         std::size_t dim, std::size_t k) {
  rng gen{derive_seed(derive_seed(run_seed, 0x4c4f5343ULL), round)};
  std::vector<std::uint32_t> idx(dim);
  std::iota(idx.begin(), idx.end(), 0U);
  k = std::min(k, dim);
  for (std::size_t j = 0; j < k; ++j)
    std::swap(idx[j], idx[j + gen.below(dim - j)]);
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

void loscar_merge(std::vector<float>& x, const std::vector<std::uint32_t>& sample, const float* y_s,
                  const float* mean, bool naive) {
  for (std::size_t j = 0; j < sample.size(); ++j) {
    float& v = x[sample[j]];
    v = naive ? mean[j] : v + (mean[j] - y_s[j]);
  }
}

std::vector<loscar_steps> loscar_schedule(const run_plan& plan) {
  const auto& algo = plan.config<loscar_config>();
  const std::size_t n = plan.nodes();
  const std::uint32_t a = algo.aggregator;
  const auto& link = plan.link;
  const double bytes = 24.0 + 4.0 * static_cast<double>(loscar_k(algo.sparsity, plan.dim()));
  const double hop =
    link.latency_seconds +
    (link.bandwidth_bytes_per_second > 0 ? bytes / link.bandwidth_bytes_per_second : 0.0);
  std::vector<loscar_steps> out(n);
  std::vector<double> tau(n), busy(n);
  double arrive = 0;  // max_j (N_j tau_j + up_j)
  for (std::size_t i = 0; i < n; ++i) {
    tau[i] = plan.tau[i] * plan.slowdown[i];
    out[i].local = algo.local_steps ? *algo.local_steps
                                    : static_cast<std::uint32_t>(std::max<long long>(
                                        1, std::llround(algo.round_seconds / tau[i])));
    busy[i] = out[i].local * tau[i];
    arrive = std::max(arrive, busy[i] + (i == a ? 0.0 : hop));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (algo.blocking)
      out[i].overlap = 0;
    else if (algo.overlap_steps)
      out[i].overlap = *algo.overlap_steps;
    else {
      const double window = arrive + (i == a ? 0.0 : hop) - busy[i];
      // 1e-9: a window of exactly q steps computed in floating point still fits q.
      out[i].overlap =
        static_cast<std::uint32_t>(std::max(0.0, std::floor(window / tau[i] + 1e-9)));
    }
  }
  return out;
}

namespace loscar_detail {

namespace {

// ---- the worker

enum class phase { local, overlap, waiting };

struct loscar_worker_state : gossip::node_base {
  std::uint32_t aggregator = 0;
  std::size_t k = 1;
  loscar_steps counts;
  bool naive = false;
  double gamma = 0;
  double decay = 0;
  std::uint64_t seed = 0;
  std::uint64_t steps = 0;        // local steps so far (step-size schedule)
  std::uint64_t snapshot_at = 0;  // `steps` when y_i was taken
  std::uint64_t round = 0;
  phase at = phase::local;
  std::uint32_t done = 0;  // steps done in the current phase
  std::vector<std::uint32_t> sample;
  std::vector<float> y_s;
  std::vector<float> mean;
  bool have_mean = false;
  bool record = false;  // keep the merge ledger (test probe only)
  std::vector<loscar_merge_record> ledger;
  barrier_hold hold;  // checkpoints
  static inline const char* name = "atrain_loscar_worker";
};
using worker_ptr = loscar_worker_actor::stateful_pointer<loscar_worker_state>;

/// Starts the next gradient, unless a checkpoint holds the worker here.
void next_gradient(worker_ptr self) {
  auto& st = self->state;
  if (st.hold.stop_here())
    return;
  const double wait = st.cu->gradient(self, st.x.data(), st.g);
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  send_after(self, caf::actor_cast<loscar_worker_actor>(self), wait, wake_atom::value, st.steps);
}

void begin_round(worker_ptr self, const run_plan& plan) {  // 1.
  auto& st = self->state;
  st.sample = loscar_sample(plan.seed, st.round, plan.dim(), st.k);
  st.at = phase::local;
  st.done = 0;
  st.have_mean = false;
  next_gradient(self);
}

/// Step 5 once the overlap steps are done and m_r is in.
void try_merge(worker_ptr self, const run_plan& plan) {
  auto& st = self->state;
  if (st.at != phase::waiting || !st.have_mean)
    return;
  // Steps on w since y_i: Q_i, counted rather than assumed.
  const auto overlap = static_cast<std::uint32_t>(st.steps - st.snapshot_at);
  loscar_merge_record rec;
  if (st.record)
    rec = {st.round, overlap, st.sample, st.y_s, st.mean, st.x, {}};
  loscar_merge(st.x, st.sample, st.y_s.data(), st.mean.data(), st.naive);
  st.staleness.add(static_cast<double>(overlap));
  if (st.record) {
    rec.x = st.x;
    st.ledger.push_back(std::move(rec));
  }
  ++st.round;
  begin_round(self, plan);
}

/// Step 2's end: y_i[S_r] to the aggregator, then step 3.
void send_snapshot(worker_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  st.y_s.resize(st.sample.size());
  for (std::size_t j = 0; j < st.sample.size(); ++j)
    st.y_s[j] = st.x[st.sample[j]];
  packet p;
  p.from = id;
  p.kind = loscar_up;
  p.seq = st.round + 1;
  p.f = float_blob{st.y_s};
  st.out.broadcast(self, ctx, std::move(p));  // one route: the aggregator
  st.snapshot_at = st.steps;
  st.at = st.counts.overlap > 0 ? phase::overlap : phase::waiting;
  st.done = 0;
}

void on_wake(worker_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  const double gamma = gossip::step_size(st.gamma, st.decay, st.steps++);
  vec::axpy(static_cast<float>(-gamma), st.g.data(), st.x.data(), st.x.size());
  ++st.done;
  if (st.at == phase::local && st.done == st.counts.local)
    send_snapshot(self, ctx, id);  // 2.
  else if (st.at == phase::overlap && st.done == st.counts.overlap)
    st.at = phase::waiting;  // 3.
  if (st.at == phase::waiting)
    return try_merge(self, *ctx.plan);
  next_gradient(self);
}

void on_mean(worker_ptr self, run_context& ctx, std::uint32_t id, const packet& coded) {
  auto& st = self->state;
  const auto opened = open_values(coded, st.k);  // link.codec
  if (!opened)
    return gossip::reject(self, ctx, st, id, coded);
  const packet& p = *opened;
  if (p.from != st.aggregator || !sparse_well_formed(p, loscar_down, st.k))
    return gossip::reject(self, ctx, st, id, p);
  const std::uint64_t r = p.seq - 1;
  if (r < st.round || (r == st.round && st.have_mean))
    return;  // a duplicate of a mean already taken
  if (r > st.round || st.at == phase::local)
    return gossip::reject(self, ctx, st, id, p);  // a round not sent yet: impossible
  st.mean = p.f.vec();
  st.have_mean = true;
  try_merge(self, *ctx.plan);
}

// ---- checkpoints

std::string save_worker(const loscar_worker_state& st) {
  proto::NodeState s;
  save_worker_basics(st, st.steps, s);
  auto& l = *s.mutable_loscar()->mutable_worker();
  l.set_round(st.round);
  l.set_phase(static_cast<proto::LoscarWorkerState::Phase>(st.at));
  l.set_done(st.done);
  l.set_snapshot_at(st.snapshot_at);
  if (st.at != phase::local) {  // y_i[S_r] is that of an earlier round before the snapshot
    *l.mutable_y_s() = {st.y_s.begin(), st.y_s.end()};
    l.set_have_mean(st.have_mean);
    if (st.have_mean)
      *l.mutable_mean() = {st.mean.begin(), st.mean.end()};
  }
  return s.SerializeAsString();
}

void restore_worker(loscar_worker_state& st, const proto::NodeState& s, const run_plan& plan) {
  st.steps = restore_worker_basics(st, s);
  const auto& l = s.loscar().worker();
  st.round = l.round();
  st.sample = loscar_sample(plan.seed, st.round, plan.dim(), st.k);
  st.at = static_cast<phase>(l.phase());
  st.done = l.done();
  st.snapshot_at = l.snapshot_at();
  st.y_s.assign(l.y_s().begin(), l.y_s().end());
  st.have_mean = l.have_mean();
  st.mean.assign(l.mean().begin(), l.mean().end());
  // Until the supervisor's go; a worker waiting for m_r was not held (no
  // gradient to start) and goes on waiting.
  st.hold.requested = true;
  st.hold.held = st.at != phase::waiting;
}

/// The worker's drain answer (< 0: quiet). Node a's also holds the
/// aggregator's (its route is the aggregator itself).
caf::result<double> drain(worker_ptr self, const context_ptr& ctx, std::uint32_t id) {
  const auto& st = self->state;
  // Waiting for m_r: no gradient in flight, nothing to do until it comes.
  const double mine = st.at == phase::waiting ? -1.0 : st.hold.busy_for(self);
  if (id != st.aggregator)
    return mine;
  auto rp = self->make_response_promise<double>();
  self
    ->request(caf::actor_cast<loscar_aggregator_actor>(st.out.routes.front().second),
              ctx->reply_timeout(), ckpt_drain_atom::value)
    .then([rp, mine](double hub) mutable { rp.deliver(std::max(mine, hub)); },
          [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

/// The running worker: wiring, wakes, means and node_actor's messages.
loscar_worker_actor::behavior_type running_worker(worker_ptr self, std::uint32_t id,
                                                  const context_ptr& ctx, bool restored) {
  return compose<loscar_worker_actor::behavior_type>(
    [=](init_atom, const caf::actor& route) {
      self->state.out.routes.emplace_back(self->state.aggregator, route);
    },
    [=](start_atom) {
      if (!restored)  // restored: holds until the supervisor's go
        begin_round(self, *ctx->plan);
    },
    [=](wake_atom, std::uint64_t step) {
      ctx->events.record(ctx->ns(self), id, event_kind::wake, step);
      on_wake(self, *ctx, id);
    },
    [=](deliver_atom, const packet& p) {
      ctx->events.record(ctx->ns(self), id, event_kind::receive, p.from, p.seq);
      on_mean(self, *ctx, id, p);
    },
    [=](model_atom) {
      auto s = gossip::snapshot(self->state, id);
      s.rejected = self->state.rejected;  // no buffer of its own reports them
      return s;
    },
    [=](ckpt_drain_atom) { return drain(self, ctx, id); },
    // A replacement's join after it started (never sent twice): nothing.
    [](start_atom, std::uint64_t, const float_blob&, const caf::actor&) {},
    ckpt_go_handler(self, [=] { next_gradient(self); }), ckpt_pause_handler(self),
    ckpt_state_handler([=] { return save_worker(self->state); }));
}

/// Worker `id`; a replacement (`joining`, after a crash) keeps every
/// message until the aggregator starts it: (start_atom, round, A, route).
loscar_worker_actor::behavior_type loscar_worker(worker_ptr self, std::uint32_t id,
                                                 loscar_steps counts, context_ptr ctx,
                                                 bool joining) {
  name_exceptions(self);
  const auto& plan = *ctx->plan;
  const auto& algo = plan.config<loscar_config>();
  auto& st = self->state;
  st.cu.emplace(*ctx, id);
  st.x = plan.x0;
  st.aggregator = algo.aggregator;
  st.neighbours = {st.aggregator};
  st.k = loscar_k(algo.sparsity, plan.dim());
  st.counts = counts;
  st.naive = algo.merge == loscar_merge_rule::naive;
  st.gamma = algo.step_size;
  st.decay = algo.decay;
  st.record = ctx->probe != nullptr;
  st.out.coder = coder_for(plan, [](std::uint32_t kind) { return kind == loscar_up; });
  const auto* saved = joining ? nullptr : resumed_node(*ctx, id);  // a replacement joins
  if (saved)
    restore_worker(st, *saved, plan);
  if (!joining)
    run_probe::show_model(ctx->probe, self, id, &self->state.x);
  auto running = running_worker(self, id, ctx, saved != nullptr);
  if (!joining)
    return running;
  self->set_default_handler(caf::skip);
  return waiting_for<loscar_worker_actor>(
    [=](start_atom, std::uint64_t round, const float_blob& x, const caf::actor& route) mutable {
      auto& st = self->state;
      st.round = round;
      st.x = x.vec();
      st.out.routes.emplace_back(st.aggregator, route);
      self->set_default_handler(caf::print_and_drop);
      self->become(std::move(running));
      run_probe::show_model(ctx->probe, self, id, &self->state.x);
      begin_round(self, *ctx->plan);
    });
}

}  // namespace

}  // namespace loscar_detail

std::vector<loscar_merge_record> loscar_take_merges(const caf::actor_addr& worker) {
  auto handle = caf::actor_cast<caf::actor>(worker);
  if (!handle)
    return {};
  auto* w = dynamic_cast<loscar_detail::worker_ptr>(caf::actor_cast<caf::abstract_actor*>(handle));
  if (w == nullptr)
    return {};
  return std::exchange(w->state.ledger, {});
}

namespace {

[[nodiscard]] std::shared_ptr<std::vector<loscar_steps>> shared_schedule(const context_ptr& ctx) {
  return process_shared<std::vector<loscar_steps>>(*ctx, "loscar.schedule", [&] {
    return std::make_shared<std::vector<loscar_steps>>(loscar_schedule(*ctx->plan));
  });
}

}  // namespace

std::string loscar_check_checkpoint(const proto::Checkpoint& ck, const run_plan& plan) {
  const auto& algo = plan.config<loscar_config>();
  const auto k = static_cast<int>(loscar_k(algo.sparsity, plan.dim()));
  const auto n = static_cast<std::uint32_t>(plan.nodes());
  const auto& agg = ck.nodes(static_cast<int>(algo.aggregator)).loscar().aggregator();
  const std::string at_agg = "node " + std::to_string(algo.aggregator) + ": loscar_aggregator.";
  if (static_cast<std::size_t>(agg.average_size()) != plan.dim())
    return at_agg + "average has " + std::to_string(agg.average_size()) +
           " values; the spec's model " + std::to_string(plan.dim());
  if (agg.got_size() != agg.got_from_size() * k)
    return at_agg + "got holds " + std::to_string(agg.got_size()) + " values for " +
           std::to_string(agg.got_from_size()) + " senders of K = " + std::to_string(k);
  for (int j = 0; j < agg.got_from_size(); ++j)
    if (agg.got_from(j) >= n || (j > 0 && agg.got_from(j) <= agg.got_from(j - 1)))
      return at_agg + "got_from must list nodes of the run once each, in increasing order";
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto& l = ck.nodes(static_cast<int>(i)).loscar().worker();
    const std::string at = "node " + std::to_string(i) + ": loscar.";
    // The aggregator collects round R: round R - 1 completed, so every
    // worker sent y_i of R - 1 (is in R - 1 or later); none can be past R
    // (leaving round r needs m_r).
    if (l.round() > agg.round() || l.round() + 1 < agg.round())
      return at + "round " + std::to_string(l.round()) + " is not the aggregator's round " +
             std::to_string(agg.round()) + " or the one before";
    if (!proto::LoscarWorkerState::Phase_IsValid(l.phase()))
      return at + "phase " + std::to_string(l.phase()) + " is not LOCAL, OVERLAP or WAITING";
    const bool sent = l.phase() != proto::LoscarWorkerState::LOCAL;
    if ((sent && l.y_s_size() != k) || (l.have_mean() && l.mean_size() != k))
      return at + "y_s or mean does not hold K = " + std::to_string(k) + " values";
  }
  return {};
}

node_actors spawn_loscar_node(caf::event_based_actor* parent, const context_ptr& ctx,
                              std::uint32_t i) {
  const auto& plan = *ctx->plan;
  const auto schedule = shared_schedule(ctx);
  node_actors node;
  node.worker = caf::actor_cast<caf::actor>(
    parent->spawn(loscar_detail::loscar_worker, i, schedule->at(i), ctx, false));
  if (i == plan.config<loscar_config>().aggregator) {
    node.hub = caf::actor_cast<caf::actor>(parent->spawn(loscar_detail::loscar_aggregator, ctx));
    node.buffer = node.hub;
  }
  return node;
}

caf::actor spawn_loscar_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                    std::uint32_t k) {
  return caf::actor_cast<caf::actor>(
    sup->spawn(loscar_detail::loscar_worker, k, shared_schedule(ctx)->at(k), ctx, true));
}

void wire_loscar(caf::event_based_actor* sup, const context_ptr& ctx,
                 std::vector<node_actors>& nodes, link_list& links) {
  wire_star(sup, ctx, links, ctx->plan->config<loscar_config>().aggregator, nodes);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
algorithm_descriptor loscar_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kLoscar;
  d.node_part = proto::NodeState::kLoscar;
  d.name = "loscar";
  d.check_block = loscar_check_block;
  d.parse = loscar_parse_block;
  d.label = [](const algorithm_config& c) {
    return std::string{
      config_as<loscar_config>(c).merge == loscar_merge_rule::naive ? "loscar_naive" : "loscar"};
  };
  d.spawn_node = spawn_loscar_node;
  d.wire = wire_loscar;
  d.needs_every_node = "every round's average waits for every worker";
  d.spawn_replacement = ignoring_incarnation<spawn_loscar_replacement>;
  d.join = join_loscar_worker;
  d.joins = "a joining worker counts from the round after the one being collected (the next "
            "round boundary), starting from the aggregator's average; no round waits for a node "
            "before its join";
  d.whole_restart_refusal = [](const algorithm_config& c, std::uint32_t k) {
    if (k != config_as<loscar_config>(c).aggregator)
      return std::string{};
    return "node " + std::to_string(k) +
           " holds the LOSCAR aggregator (algorithm.loscar.aggregator): the round it collects "
           "and its running average live nowhere else (crash only the worker to restart it)";
  };
  d.check_checkpoint = loscar_check_checkpoint;
  d.links.coding = values_coding;
  return d;
}

}  // namespace atrain
