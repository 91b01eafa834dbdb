/// DASGD's restart hand-over (docs/ALGORITHMS.md §2 "In the code"): the
/// donor's and the replacement's side in the worker, then the supervisor's.
/// Apart from dasgd.cpp's training cycle, which only calls into it.
#include <algorithm>
#include <functional>
#include <set>
#include <tuple>

#include "algorithms/dasgd/dasgd.hpp"
#include "algorithms/dasgd/dasgd_internal.hpp"
#include "algorithms/gossip/gossip.hpp"
#include "atrain/actors/algorithm.hpp"

namespace atrain {

namespace dasgd_detail {

namespace {

/// Passes `p` (first seen here) on to replacement route `route`.
void relay_packet(dasgd_ptr self, run_context& ctx, std::size_t route, const packet& p) {
  auto& st = self->state;
  packet copy = p;
  copy.kind = dasgd_relayed;
  copy.scalars = {p.scalars[0]};
  st.out.send(self, ctx, route, std::move(copy));
  if (st.record)
    ++st.ledger.relayed;
}

/// Drops the relays that are done: fences known and every number up to
/// them seen here (then relayed, or in the record the replacement took).
void prune_relays(dasgd_state& st, std::uint32_t id) {
  auto done = [&st, id](const dasgd_state::relay& r) {
    if (r.until.empty())
      return false;
    for (std::uint32_t j = 0; j < st.n; ++j)
      if (j != id && r.until[j] > 0 && st.dedup.first_unseen(j, dasgd_gradients) <= r.until[j])
        return false;
    return true;
  };
  st.relays.erase(std::remove_if(st.relays.begin(), st.relays.end(), done), st.relays.end());
}

/// Per origin the numbers lost with dead workers, for a replacement.
[[nodiscard]] std::vector<std::vector<std::uint64_t>> lost_lists(const dasgd_state& st) {
  std::vector<std::vector<std::uint64_t>> out(st.n);
  for (std::uint32_t j = 0; j < st.n; ++j)
    out[j].assign(st.lost[j].begin(), st.lost[j].end());
  return out;
}

}  // namespace

/// Marks gradients `first` .. `last` of `origin` lost with a dead worker:
/// seen (a copy can never come: they were not sent), never applied.
void mark_lost(dasgd_state& st, std::uint32_t origin, std::uint64_t first, std::uint64_t last) {
  for (auto s = first; s <= last; ++s) {
    static_cast<void>(st.dedup.first_time(origin, dasgd_gradients, s));
    st.lost[origin].insert(s);
  }
  if (first <= last)
    st.highest[origin] = std::max(st.highest[origin], last);
}

/// This node's highest gradient number handed to its links; its next
/// packet opens a segment no link merges into earlier ones (a restart
/// fence for node k: every packet of this node numbered above it reaches
/// k's replacement over its re-pointed link, whole).
std::uint64_t fence_stream(dasgd_ptr self, run_context& ctx, std::uint32_t id, std::uint32_t k) {
  auto& st = self->state;
  st.fence_next = true;
  const auto sent = st.steps - st.batch_count;
  ctx.events.record(ctx.ns(self), id, event_kind::stream_fence, k, sent);
  return sent;
}

/// A packet seen here for the first time that a replacement needs from
/// this donor (numbers <= its origin's fence) goes on to it; before the
/// fences are known it waits.
void relay_to_replacements(dasgd_ptr self, run_context& ctx, std::uint32_t id, const packet& p) {
  auto& st = self->state;
  for (auto& r : st.relays) {
    if (r.until.empty())
      r.pending.push_back(p);
    else if (p.seq <= r.until[p.from])
      relay_packet(self, ctx, r.route, p);
  }
  prune_relays(st, id);
}

/// The donor learns the fences of replacement `k`: relays what waited and
/// from now on every packet up to them it sees first.
void relay_until(dasgd_ptr self, run_context& ctx, std::uint32_t id, std::uint32_t k,
                 std::vector<std::uint64_t> until) {
  auto& st = self->state;
  if (until.size() != st.n)
    return;
  for (auto& r : st.relays)
    if (st.out.routes[r.route].first == k && r.until.empty()) {
      r.until = std::move(until);
      for (const auto& p : r.pending)
        if (p.seq <= r.until[p.from])
          relay_packet(self, ctx, r.route, p);
      r.pending.clear();
      break;
    }
  prune_relays(st, id);
}

/// The donor's side of a restart of node k, whose dead worker handed its
/// links gradients up to `sent` and made up to `made` (the rest lost): its
/// model without its own unsent batch (that batch goes to the replacement
/// as a packet, whole), its record (per origin every number seen; its own:
/// every one sent), the numbers lost with dead workers, its inbox, and its
/// own fence (the highest number it sent). Relays from now on what the
/// replacement needs from it (relay_until).
std::tuple<float_blob, std::vector<std::vector<std::uint64_t>>,
           std::vector<std::vector<std::uint64_t>>, std::vector<packet>, std::uint64_t>
donate(dasgd_ptr self, run_context& ctx, std::uint32_t id, std::uint32_t k, std::uint64_t sent,
       std::uint64_t made) {
  auto& st = self->state;
  mark_lost(st, k, sent + 1, made);
  const auto own = fence_stream(self, ctx, id, k);
  std::vector<std::vector<std::uint64_t>> record(st.n);
  for (std::uint32_t j = 0; j < st.n; ++j) {
    auto& seen = record[j];
    if (j == id) {
      seen.push_back(own);  // 1..own: in x, and every other node's from the links
      continue;
    }
    const auto first = st.dedup.first_unseen(j, dasgd_gradients);
    seen.push_back(first - 1);  // 1..first-1, then the ones seen above
    for (auto s = first + 1; s <= st.highest[j]; ++s)
      if (st.dedup.seen(j, dasgd_gradients, s))
        seen.push_back(s);
  }
  ctx.events.record(ctx.ns(self), id, event_kind::restart, k, st.steps);
  for (std::size_t r = 0; r < st.out.routes.size(); ++r)
    if (st.out.routes[r].first == k) {
      st.relays.push_back({r, {}, {}});
      break;
    }
  std::vector<float> x = st.x;
  if (st.batch_count > 0)  // applied here, not yet sent: the replacement gets it as a packet
    vec::axpy(1.0f, st.batch.data(), x.data(), x.size());
  return {float_blob{std::move(x)}, std::move(record), lost_lists(st), st.inbox, own};
}

/// The replacement takes the donor's model, record, lost numbers and inbox
/// and the fences; its own gradients continue after the dead worker's
/// `made`, in a new segment.
void adopt(dasgd_ptr self, const float_blob& x,
           const std::vector<std::vector<std::uint64_t>>& record,
           const std::vector<std::vector<std::uint64_t>>& lost, const std::vector<packet>& inbox,
           std::uint64_t made, const std::vector<std::uint64_t>& fence) {
  auto& st = self->state;
  st.x = x.vec();
  st.steps = made;
  st.inbox = inbox;
  st.fence = fence;
  st.fence.resize(st.n, 0);
  st.fence_next = true;
  for (std::uint32_t j = 0; j < st.n && j < lost.size(); ++j)
    for (auto s : lost[j])
      mark_lost(st, j, s, s);
  std::set<std::pair<std::uint32_t, std::uint64_t>> waiting;  // in the inbox: applied later
  for (const auto& p : inbox)
    for (auto s = first_of(p); s <= p.seq; ++s)
      waiting.emplace(p.from, s);
  auto mark = [&](std::uint32_t j, std::uint64_t s) {
    static_cast<void>(st.dedup.first_time(j, dasgd_gradients, s));
    st.highest[j] = std::max(st.highest[j], s);
    if (waiting.count({j, s}) != 0 || st.lost[j].count(s) != 0)
      return;
    ++st.applied;
    if (st.record)
      st.ledger.used.push_back({j, s});
  };
  for (std::uint32_t j = 0; j < st.n && j < record.size(); ++j) {
    if (record[j].empty())
      continue;
    for (std::uint64_t s = 1; s <= record[j].front(); ++s)
      mark(j, s);
    for (std::size_t e = 1; e < record[j].size(); ++e)
      mark(j, record[j][e]);
  }
  st.used_total = st.applied;
}

// ---- the supervisor's side

namespace {

/// A restart hand-over in progress at the supervisor (join_dasgd_worker).
struct dasgd_join {
  worker_restart r;
  restart_started started;
  std::uint64_t sent = 0;  // the dead worker's highest gradient number handed to its links
  std::uint64_t made = 0;  // its gradients made: sent + its unsent batch (lost)
  std::uint32_t donor = 0;
  float_blob x;
  std::vector<std::vector<std::uint64_t>> record;
  std::vector<std::vector<std::uint64_t>> lost;
  std::vector<packet> inbox;
  std::vector<std::uint64_t> fence;   // per origin
  std::vector<std::uint32_t> silent;  // nodes that did not answer the fence request (dead)
  std::size_t pending = 0;
};
using join_ptr = std::shared_ptr<dasgd_join>;

/// Asks every link (after it re-pointed: the supervisor's messages to it
/// stay in order) for the highest gradient number its sender handed it;
/// `then` gets, per sender, the largest.
void read_links(caf::event_based_actor* sup, const context_ptr& ctx, const link_list& links,
                std::size_t n, std::function<void(std::vector<std::uint64_t>)> then) {
  struct highest {
    std::size_t pending = 0;
    std::vector<std::uint64_t> seq;  // per sender
  };
  auto h = std::make_shared<highest>();
  h->pending = links.size();
  h->seq.assign(n, 0);
  if (links.empty())
    return then(h->seq);
  for (const auto& link : links)
    sup->request(link, ctx->reply_timeout(), resume_atom::value)
      .then(
        [=](std::uint32_t from, bool any, std::uint64_t seq) {
          if (any && from < h->seq.size())
            h->seq[from] = std::max(h->seq[from], seq);
          if (--h->pending == 0)
            then(h->seq);
        },
        [=](const caf::error&) {
          if (--h->pending == 0)
            then(h->seq);
        });
}

/// Starts the replacement with the donor's state and the fences, tells the
/// donor up to where to relay, and reports the hand-over.
void finish_join(caf::event_based_actor* sup, const join_ptr& j) {
  const auto& r = j->r;
  sup->send(caf::actor_cast<dasgd_worker_actor>(r.replacement), start_atom::value, j->x, j->record,
            j->lost, j->inbox, j->made, r.nodes.at(r.node).worker_routes, j->fence);
  sup->send(caf::actor_cast<dasgd_worker_actor>(r.nodes.at(j->donor).worker), restart_atom::value,
            r.node, j->fence);
  std::uint64_t seen = 0;
  for (std::size_t o = 0; o < j->record.size(); ++o) {
    const auto& per = j->record[o];
    seen += per.empty() ? 0 : per.front() + per.size() - 1;
    seen -= o < j->lost.size() ? j->lost[o].size() : 0;
  }
  std::string lost;
  if (j->made == j->sent + 1)
    lost = "; the dead worker's 1 gradient made but not yet sent (number " +
           std::to_string(j->made) + ") is lost with it";
  else if (j->made > j->sent)
    lost = "; the dead worker's " + std::to_string(j->made - j->sent) +
           " gradients made but not yet sent (numbers " + std::to_string(j->sent + 1) + ".." +
           std::to_string(j->made) + ") are lost with it";
  j->started("node " + std::to_string(j->donor) + "'s model and its record of " +
             std::to_string(seen) + " gradients seen (inbox: " + std::to_string(j->inbox.size()) +
             " packets), numbering from " + std::to_string(j->made + 1) + lost);
}

/// Every live node but the donor fences its gradient stream (fence_stream);
/// a node that does not answer is dead, its fence the highest number its
/// links got from it (it sends no more).
void fence_others(caf::event_based_actor* sup, const context_ptr& ctx, const join_ptr& j) {
  const auto n = static_cast<std::uint32_t>(j->r.nodes.size());
  auto done = [=] {
    if (j->silent.empty())
      return finish_join(sup, j);
    read_links(sup, ctx, j->r.links, n, [=](std::vector<std::uint64_t> highest) {
      for (auto s : j->silent)
        j->fence[s] = highest[s];
      finish_join(sup, j);
    });
  };
  j->pending = n - 2;
  if (j->pending == 0)
    return done();
  for (std::uint32_t o = 0; o < n; ++o) {
    if (o == j->r.node || o == j->donor)
      continue;
    sup
      ->request(caf::actor_cast<dasgd_worker_actor>(j->r.nodes.at(o).worker), ctx->reply_timeout(),
                dasgd_fence_atom::value, j->r.node, j->sent, j->made)
      .then(
        [=](std::uint64_t sent) {
          j->fence[o] = sent;
          if (--j->pending == 0)
            done();
        },
        [=](const caf::error&) {
          j->silent.push_back(o);
          if (--j->pending == 0)
            done();
        });
  }
}

/// Asks the live nodes from `candidate` on, in id order, to donate; the
/// first that answers does (and relays). Without one: x^0, no record and
/// no fences (every packet reaches the replacement over its links).
void ask_donor(caf::event_based_actor* sup, const context_ptr& ctx, const join_ptr& j,
               std::uint32_t candidate) {
  const auto& r = j->r;
  const auto n = static_cast<std::uint32_t>(r.nodes.size());
  while (candidate < n && candidate == r.node)
    ++candidate;
  if (candidate >= n) {
    std::vector<std::vector<std::uint64_t>> lost(n);
    for (auto s = j->sent + 1; s <= j->made; ++s)
      lost[r.node].push_back(s);
    sup->send(caf::actor_cast<dasgd_worker_actor>(r.replacement), start_atom::value,
              float_blob{ctx->plan->x0}, dasgd_numbers{}, lost, std::vector<packet>{}, j->made,
              r.nodes.at(r.node).worker_routes, std::vector<std::uint64_t>(n, 0));
    return j->started("x^0 (no live node to copy from)");
  }
  sup
    ->request(caf::actor_cast<dasgd_worker_actor>(r.nodes.at(candidate).worker),
              ctx->reply_timeout(), restart_atom::value, r.node, j->sent, j->made)
    .then(
      [=](const float_blob& x, const std::vector<std::vector<std::uint64_t>>& record,
          const std::vector<std::vector<std::uint64_t>>& lost, const std::vector<packet>& inbox,
          std::uint64_t own) {
        j->donor = candidate;
        j->x = x;
        j->record = record;
        j->lost = lost;
        j->inbox = inbox;
        j->fence.assign(n, 0);
        j->fence[candidate] = own;
        j->fence[r.node] = j->sent;
        fence_others(sup, ctx, j);
      },
      [=](const caf::error&) { ask_donor(sup, ctx, j, candidate + 1); });
}

}  // namespace

}  // namespace dasgd_detail

void join_dasgd_worker(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                       restart_started started) {
  auto j = std::make_shared<dasgd_detail::dasgd_join>();
  j->r = r;
  j->started = std::move(started);
  auto created = dasgd_detail::shared_record(ctx);
  dasgd_detail::read_links(
    sup, ctx, r.links, r.nodes.size(), [=](std::vector<std::uint64_t> highest) {
      // The dead worker's links hold every packet it sent (they deliver them
      // whatever happens to it); its unsent batch is lost (the creation
      // record knows how many it made; across processes nobody does).
      j->sent = highest.at(r.node);
      j->made = created ? std::max(j->sent, created->made(r.node)) : j->sent;
      if (j->made > j->sent) {
        created->lose(r.node, j->sent + 1, j->made);
        ctx->events.record(ctx->ns(sup), r.node, event_kind::gradients_lost, j->sent + 1, j->made);
      }
      dasgd_detail::ask_donor(sup, ctx, j, 0);
    });
}

}  // namespace atrain
