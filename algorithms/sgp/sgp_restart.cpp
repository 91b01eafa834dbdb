/// SGP's restart (docs/RELIABILITY.md "Restart"): the in-neighbours' fences,
/// the donor's half and the replacement's join, then the supervisor's hand-over.
/// Apart from sgp.cpp's push-sum cycle, which only calls into it.
#include <algorithm>
#include <functional>
#include <memory>
#include <sstream>
#include <tuple>
#include <utility>

#include "algorithms/gossip/gossip.hpp"
#include "algorithms/sgp/sgp.hpp"
#include "algorithms/sgp/sgp_internal.hpp"
#include "atrain/actors/algorithm.hpp"

namespace atrain {

namespace sgp_detail {

/// Node k is being restarted and this node is one of its in-neighbours:
/// this node's steps (its messages to k of earlier steps were sent to the
/// dead incarnation) and the messages and weight sent to k since k last
/// (re)joined. Counting starts again for the replacement.
std::tuple<std::uint64_t, std::uint64_t, double> fence_for(sgp_ptr self, run_context& ctx,
                                                           std::uint32_t id, std::uint32_t k) {
  auto& st = self->state;
  ctx.events.record(ctx.ns(self), id, event_kind::restart, k, st.ps.steps);
  std::tuple<std::uint64_t, std::uint64_t, double> out{st.ps.steps, 0, 0.0};
  if (const auto a = gossip::neighbour_index(st, k)) {
    std::get<1>(out) = std::exchange(st.sent_count[*a], 0);
    std::get<2>(out) = std::exchange(st.sent_w[*a], 0.0);
  }
  return out;
}

/// Gives half of (x, w) to node k's replacement and keeps the other half:
/// the ratio x / w stays, the sum of the mass does not change.
std::tuple<double_blob, double, std::uint64_t> donate(sgp_ptr self, run_context& ctx,
                                                      std::uint32_t id, std::uint32_t k) {
  auto& ps = self->state.ps;
  vec::scale(0.5, ps.x.data(), ps.x.size());
  ps.w *= 0.5;
  ctx.events.record(ctx.ns(self), id, event_kind::donate, k, ps.steps);
  double_blob half{ps.x};
  if (ps.record)
    ps.donated.push_back({k, ps.steps, half, ps.w});
  return {std::move(half), ps.w, ps.steps};
}

/// The replacement joins: step `step`, the donated (x, w), the fences.
/// Incoming seqs up to the fence of their slot count as received (they were
/// sent to the dead incarnation): the node does not wait for them.
void join(sgp_ptr self, std::uint64_t step, const double_blob& x, double w,
          const std::vector<std::uint64_t>& fence, std::uint32_t donor) {
  auto& st = self->state;
  auto& ps = st.ps;
  ps.x = x.vec();
  ps.w = w;
  ps.steps = step;
  ps.fence = fence;
  ps.joined = true;
  ps.donor = donor;
  const auto last = fence.empty() ? 0 : *std::max_element(fence.begin(), fence.end());
  for (std::uint64_t q = 1; q <= last; ++q)
    if (q <= fence[in_slot(st, q)]) {
      (void)st.seen.first_time(0, pushsum_mass, q);
      st.highest_seen = q;
    }
}

std::shared_ptr<std::vector<std::uint32_t>> donor_candidates(std::uint32_t k, std::uint32_t n) {
  const auto m = pushsum_period(n);
  auto candidates = std::make_shared<std::vector<std::uint32_t>>();
  auto add = [&](std::uint32_t j) {
    if (j != k && std::find(candidates->begin(), candidates->end(), j) == candidates->end())
      candidates->push_back(j);
  };
  for (std::uint32_t a = 0; a < m; ++a)
    add(pushsum_source(k, a, n));
  for (std::uint32_t a = 0; a < m; ++a)
    add(pushsum_peer(k, a, n));
  for (std::uint32_t j = 0; j < n; ++j)
    add(j);
  return candidates;
}

/// Asks `candidates` in order for half of their (x, w); the first that
/// answers is the donor. done(x, w, donor, source text).
void find_donor(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                std::shared_ptr<std::vector<std::uint32_t>> candidates, std::size_t next,
                donor_found done) {
  if (next == candidates->size())
    return done(double_blob{std::vector<double>(ctx->plan->x0.begin(), ctx->plan->x0.end())}, 1.0,
                r.node, "x^0 with a fresh weight 1 (no live node to take half from)");
  const auto j = (*candidates)[next];
  sup
    ->request(caf::actor_cast<sgp_worker_actor>(r.nodes.at(j).worker), ctx->reply_timeout(),
              sgp_donate_atom::value, r.node)
    .then(
      [=](const double_blob& x, double w, std::uint64_t steps) {
        std::ostringstream text;
        text.precision(17);
        text << "half of node " << j << "'s push-sum state (w = " << w << " each, its ratio x/w; "
             << "node " << j << " at step " << steps << ")";
        done(x, w, j, text.str());
      },
      [=](const caf::error&) { find_donor(sup, ctx, r, candidates, next + 1, done); });
}

}  // namespace sgp_detail

namespace {

/// What join_sgp_worker gathers before it starts the replacement.
struct sgp_join {
  std::size_t pending = 0;
  bool any_sent = false;
  std::uint64_t last_sent = 0;       // the dead worker's highest seq on its links
  std::vector<std::uint64_t> fence;  // per in-slot
  std::uint64_t lost_messages = 0;   // sent to node k since it last joined
  double lost_w = 0;
  std::vector<std::uint32_t> dead_sources;  // in-neighbours that did not answer
};

}  // namespace

void join_sgp_worker(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                     restart_started started) {
  if (ctx->plan->join_of(r.node) && r.incarnation == 1)
    return join_sgp_node(sup, ctx, r, std::move(started));
  const auto k = r.node;
  const auto n = static_cast<std::uint32_t>(ctx->plan->nodes());
  const auto m = pushsum_period(n);
  auto js = std::make_shared<sgp_join>();
  js->fence.assign(m, 0);
  auto finish = [=] {
    const auto candidates = sgp_detail::donor_candidates(k, n);
    const std::uint64_t step = js->any_sent ? js->last_sent : 0;
    sgp_detail::find_donor(
      sup, ctx, r, candidates, 0,
      [=](double_blob x, double w, std::uint32_t donor, std::string source) {
        sup->send(caf::actor_cast<sgp_worker_actor>(r.replacement), start_atom::value, step,
                  std::move(x), w, js->fence, r.nodes.at(k).worker_routes, donor,
                  std::vector<std::uint32_t>{});
        std::ostringstream text;
        text.precision(17);
        text << source << ", joining at step " << step << "; lost with the dead worker: "
             << "its own (x, w), and " << js->lost_messages << " messages (w = " << js->lost_w
             << ") its in-neighbours had sent it "
             << "since it started (added by it, or dropped when they arrive)";
        for (auto j : js->dead_sources)
          text << "; in-neighbour " << j << " is down: what it sent is not counted";
        started(text.str());
      });
  };
  auto one = [js, finish] {
    if (--js->pending == 0)
      finish();
  };
  const auto& out_links = r.nodes.at(k).worker_routes;
  js->pending = out_links.size() + m;
  if (js->pending == 0)
    return finish();
  // The dead worker's last step sent: the highest seq its links took.
  for (const auto& link : out_links)
    sup->request(link, ctx->reply_timeout(), resume_atom::value)
      .then(
        [=](std::uint32_t from, bool any, std::uint64_t seq) {
          if (from == k && any) {
            js->last_sent = js->any_sent ? std::max(js->last_sent, seq) : seq;
            js->any_sent = true;
          }
          one();
        },
        [=](const caf::error&) { one(); });
  // Each in-neighbour's fence: its steps when it answers (a dead one: the
  // highest seq its link to node k took).
  for (std::uint32_t a = 0; a < m; ++a) {
    const auto j = pushsum_source(k, a, n);
    sup
      ->request(caf::actor_cast<sgp_worker_actor>(r.nodes.at(j).worker), ctx->reply_timeout(),
                restart_atom::value, k)
      .then(
        [=](std::uint64_t steps, std::uint64_t count, double w) {
          js->fence[a] = steps;
          js->lost_messages += count;
          js->lost_w += w;
          one();
        },
        [=](const caf::error&) {
          js->dead_sources.push_back(j);
          sup->request(r.nodes.at(j).worker_routes.at(a), ctx->reply_timeout(), resume_atom::value)
            .then(
              [=](std::uint32_t, bool any, std::uint64_t seq) {
                js->fence[a] = any ? seq : 0;
                one();
              },
              [=](const caf::error&) { one(); });
        });
  }
}

}  // namespace atrain
