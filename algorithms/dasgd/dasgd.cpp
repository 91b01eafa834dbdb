/// DASGD: decentralized asynchronous SGD (docs/ALGORITHMS.md §2). No
/// averaging: every node applies every gradient made anywhere, exactly once.
/// A cycle: read g at x_i (takes tau_i); at the wake apply the inbox, then
/// x_i -= gamma_k g and send u = gamma_k g (the sender's step, so sums stay
/// exact when batched or coalesced) to every other node. Packets cover a
/// range of the sender's gradient numbers (seq, count c); duplicates are
/// dropped per (origin, number), partial overlaps rejected. Staleness: the
/// gradients completed anywhere strictly before a read that the node had not
/// applied (a single-process measurement, from the shared creation record).
/// Checkpoints and the restart hand-over (fences per origin, the donor's
/// relays, the dead worker's lost batch) are described step by step in
/// docs/ALGORITHMS.md §2 "In the code".
#include "algorithms/dasgd/dasgd.hpp"

#include "atrain/actors/algorithm.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <tuple>

#include "algorithms/gossip/gossip.hpp"
#include "atrain/actors/checkpoint.hpp"

namespace atrain {

namespace {

/// When every gradient of the run was created: shared by the run's workers.
class creation_record {
public:
  explicit creation_record(std::size_t n) : times_(n), first_(n, 1), lost_through_(n, 0) {}

  /// Node `node` created its next gradient at `ns`.
  void add(std::uint32_t node, std::int64_t ns) {
    std::lock_guard<std::mutex> lock{mtx_};
    if (ns > last_ns_) {
      before_last_ = total_;
      last_ns_ = ns;
    }
    ++total_;
    times_.at(node).push_back(ns);
  }

  /// Gradients created strictly before `ns` (on the real clock, a time at
  /// or before the newest creation counts as that newest instant).
  [[nodiscard]] std::uint64_t before(std::int64_t ns) const {
    std::lock_guard<std::mutex> lock{mtx_};
    return ns > last_ns_ ? total_ : before_last_;
  }

  /// Creation time of gradient `index` (1, 2, ...) of `node`.
  [[nodiscard]] std::int64_t at(std::uint32_t node, std::uint64_t index) const {
    std::lock_guard<std::mutex> lock{mtx_};
    return times_.at(node).at(index - first_.at(node));
  }

  /// Gradients `node` made so far.
  [[nodiscard]] std::uint64_t made(std::uint32_t node) const {
    std::lock_guard<std::mutex> lock{mtx_};
    return first_.at(node) - 1 + times_.at(node).size();
  }

  /// Gradients `first` .. `last` of `node` will never be applied anywhere
  /// (made by a worker that died before sending them): from now on they no
  /// longer count as created, so they leave every node's staleness.
  void lose(std::uint32_t node, std::uint64_t first, std::uint64_t last) {
    std::lock_guard<std::mutex> lock{mtx_};
    auto& through = lost_through_.at(node);
    for (auto s = std::max(first, through + 1); s <= last; ++s) {
      --total_;
      if (times_.at(node).at(s - first_.at(node)) < last_ns_)
        --before_last_;
    }
    through = std::max(through, last);
  }

  /// The totals, for a checkpoint.
  [[nodiscard]] std::tuple<std::int64_t, std::uint64_t, std::uint64_t> totals() const {
    std::lock_guard<std::mutex> lock{mtx_};
    return {last_ns_, before_last_, total_};
  }

  /// Creation times of `node`'s gradients from `index` on, for a checkpoint.
  [[nodiscard]] std::vector<std::int64_t> since(std::uint32_t node, std::uint64_t index) const {
    std::lock_guard<std::mutex> lock{mtx_};
    const auto& t = times_.at(node);
    return {t.begin() + static_cast<std::ptrdiff_t>(index - first_.at(node)), t.end()};
  }

  /// A resumed run: the totals, and `node`'s creation times from gradient
  /// `index` on (earlier ones were applied everywhere and are not asked for).
  void restore(std::uint32_t node, std::int64_t last_ns, std::uint64_t before_last,
               std::uint64_t total, std::uint64_t index, std::vector<std::int64_t> times) {
    std::lock_guard<std::mutex> lock{mtx_};
    last_ns_ = last_ns;
    before_last_ = before_last;
    total_ = total;
    first_.at(node) = index;
    times_.at(node) = std::move(times);
  }

private:
  mutable std::mutex mtx_;
  std::vector<std::vector<std::int64_t>> times_;
  std::vector<std::uint64_t> first_;         // per node: the index of times_[node][0]
  std::vector<std::uint64_t> lost_through_;  // per node: the highest number `lose` took
  std::int64_t last_ns_ = std::numeric_limits<std::int64_t>::min();
  std::uint64_t before_last_ = 0;
  std::uint64_t total_ = 0;
};

/// Largest gradient count one packet may claim (a hostile count must not
/// make the receiver loop for ever).
constexpr double max_packet_gradients = 1 << 24;

/// Restart: a live node other than the donor fences its gradient stream.
using dasgd_fence_atom = caf::atom_constant<caf::atom("dfence")>;

/// Shortest wait between two gradients of one node (run-clock seconds): a
/// zero wait would be a plain send to itself, and CAF keeps running an actor
/// whose mailbox never empties (the real clock would starve other actors).
constexpr double min_wait = 1e-6;

struct dasgd_state : gossip::node_base {
  std::shared_ptr<creation_record> created;  // null: staleness not measured (multi-process)
  double seq_rate = 0;                       // see future_seq_rate
  std::uint32_t n = 0;
  double gamma = 0;
  double decay = 0;
  std::uint32_t every = 1;
  std::uint64_t steps = 0;    // local gradients completed
  std::int64_t read_ns = 0;   // when the running gradient was read
  double read_staleness = 0;  // the running gradient's staleness
  exactly_once dedup;
  std::vector<packet> inbox;  // arrived, applied at the next wake
  std::vector<float> batch;   // sum of gamma_k g not yet sent
  std::uint32_t batch_count = 0;
  std::uint64_t applied = 0;      // gradients applied to x (own + remote)
  std::int64_t instant_ns = -1;   // the instant of `applied_now`
  std::uint64_t applied_now = 0;  // applied ones created at instant_ns
  bool record = false;            // keep the ledger (test probe only)
  dasgd_ledger ledger;
  std::size_t used_total = 0;  // ledger.used entries ever recorded
  std::size_t used_at_read = 0;
  barrier_hold hold;                   // checkpoints
  std::vector<std::uint64_t> highest;  // per origin: the highest gradient number seen
  /// Per origin: numbers lost with a dead worker (made, never sent), marked
  /// seen in `dedup` so its record stays contiguous, never applied.
  std::vector<std::set<std::uint64_t>> lost;
  /// A replacement: per origin the fence F_j — numbers <= F_j come from the
  /// donor (its record, its inbox, relayed), numbers above over the link.
  std::vector<std::uint64_t> fence;
  bool fence_next = false;  // the next packet opens a segment (scalars {c, 1})
  /// Restart donor: replacements this node relays to (route index, per
  /// origin the fence up to which to relay — empty until the supervisor
  /// sends it, the packets first seen meanwhile wait in `pending`);
  /// dropped once every number up to the fences was seen here.
  struct relay {
    std::size_t route = 0;
    std::vector<std::uint64_t> until;
    std::vector<packet> pending;
  };
  std::vector<relay> relays;
  static inline const char* name = "atrain_dasgd_worker";
};
using dasgd_ptr = caf::stateful_actor<dasgd_state>*;

/// Bookkeeping of one gradient (origin, index) applied at `now_ns`.
void note_applied(dasgd_state& st, std::uint32_t origin, std::uint64_t index, std::int64_t now_ns) {
  ++st.applied;
  if (st.created && st.created->at(origin, index) == now_ns) {
    if (st.instant_ns != now_ns) {
      st.instant_ns = now_ns;
      st.applied_now = 0;
    }
    ++st.applied_now;
  }
  if (st.record)
    st.ledger.used.push_back({origin, index});
  ++st.used_total;
}

/// Step 1 for one remote packet: x_i -= u, every gradient inside noted.
void apply_packet(dasgd_state& st, const packet& p, std::int64_t now_ns) {
  vec::axpy(-1.0f, p.f.ptr(), st.x.data(), st.x.size());
  const auto count = static_cast<std::uint64_t>(p.scalars[0]);
  for (std::uint64_t s = p.seq - count + 1; s <= p.seq; ++s)
    note_applied(st, p.from, s, now_ns);
  if (st.record)
    ++st.ledger.packets_applied;
}

/// Reads x_i: measures the new gradient's staleness and starts it.
void begin_cycle(dasgd_ptr self, run_context& ctx) {
  auto& st = self->state;
  const std::int64_t now = ctx.ns(self);
  st.read_ns = now;
  const std::uint64_t same_instant = st.instant_ns == now ? st.applied_now : 0;
  const std::uint64_t applied_earlier = st.applied - same_instant;
  const std::uint64_t earlier = st.created ? st.created->before(now) : 0;
  st.read_staleness =
    earlier > applied_earlier ? static_cast<double>(earlier - applied_earlier) : 0.0;
  st.used_at_read = st.used_total;
  const double wait = std::max(st.cu->gradient(self, st.x.data(), st.g), min_wait);
  st.hold.wake_due = self->clock().now() + to_timespan(wait);
  self->delayed_send(self, to_timespan(wait), wake_atom::value, st.steps);
}

void wake(dasgd_ptr self, run_context& ctx, std::uint32_t id) {
  auto& st = self->state;
  const std::int64_t now = ctx.ns(self);
  const std::size_t dim = st.x.size();
  for (const auto& p : st.inbox)  // 1
    apply_packet(st, p, now);
  st.inbox.clear();
  const double gamma = gossip::step_size(st.gamma, st.decay, st.steps++);  // 2
  if (st.created) {  // measured in one process only
    st.created->add(id, now);
    st.staleness.add(st.read_staleness);  // recorded once the gradient exists
  }
  vec::axpy(static_cast<float>(-gamma), st.g.data(), st.x.data(), dim);
  note_applied(st, id, st.steps, now);
  if (st.record)
    st.ledger.made.push_back({st.steps, st.read_ns, now, gamma, st.used_at_read, st.g});
  if (st.n > 1) {  // 3
    if (st.batch_count == 0)
      st.batch.assign(dim, 0.0f);
    vec::axpy(static_cast<float>(gamma), st.g.data(), st.batch.data(), dim);
    if (++st.batch_count == st.every) {
      packet p;
      p.from = id;
      p.kind = dasgd_gradients;
      p.seq = st.steps;
      p.f = float_blob{std::move(st.batch)};
      p.scalars = {static_cast<double>(st.batch_count)};
      if (st.fence_next)  // the first packet after a restart fence: merged into nothing earlier
        p.scalars.push_back(1);
      st.fence_next = false;
      st.batch = {};
      st.batch_count = 0;
      st.out.broadcast(self, ctx, std::move(p));
    }
  }
  if (!st.hold.stop_here())  // (a checkpoint holds here)
    begin_cycle(self, ctx);
}

/// A well-formed gradient packet (count and fence mark checked too): from
/// another node, or relayed by a restart donor (then also one of this
/// node's own dead incarnation's).
[[nodiscard]] bool well_formed(const dasgd_state& st, std::uint32_t id, const packet& p) {
  const std::size_t dim = st.x.size();
  if ((p.kind != dasgd_gradients && p.kind != dasgd_relayed) || p.from >= st.n ||
      (p.from == id && p.kind != dasgd_relayed) || p.f.size() != dim || !p.d.empty() ||
      p.scalars.empty() || p.scalars.size() > 2 || (p.scalars.size() == 2 && p.scalars[1] != 1) ||
      !vec::all_finite(p.f.ptr(), dim))
    return false;
  const double c = p.scalars[0];
  return c >= 1 && c <= max_packet_gradients && c == std::floor(c) &&
         static_cast<std::uint64_t>(c) <= p.seq;
}

/// The first gradient number packet `p` covers.
[[nodiscard]] std::uint64_t first_of(const packet& p) {
  return p.seq - static_cast<std::uint64_t>(p.scalars[0]) + 1;
}

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

/// Per origin the numbers lost with dead workers, for a replacement.
[[nodiscard]] std::vector<std::vector<std::uint64_t>> lost_lists(const dasgd_state& st) {
  std::vector<std::vector<std::uint64_t>> out(st.n);
  for (std::uint32_t j = 0; j < st.n; ++j)
    out[j].assign(st.lost[j].begin(), st.lost[j].end());
  return out;
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

void deliver(dasgd_ptr self, run_context& ctx, std::uint32_t id, const packet& p) {
  auto& st = self->state;
  ctx.events.record(ctx.ns(self), id, event_kind::receive, p.from, p.seq);
  if (!well_formed(st, id, p) || from_the_future(p.seq, st.seq_rate, ctx.seconds(self)))
    return gossip::reject(self, ctx, st, id, p);
  const auto first = first_of(p);
  // A replacement: up to the origin's fence only relayed packets, above it
  // only direct ones; no range crosses a fence (the origin fenced its stream).
  const auto fence = st.fence.empty() ? 0 : st.fence[p.from];
  if (p.kind == dasgd_relayed) {
    if (p.seq > fence)
      return gossip::reject(self, ctx, st, id, p);  // nobody relays beyond a fence
  } else if (p.seq <= fence) {
    if (st.record)
      ++st.ledger.covered;
    return;  // handed to the link before the fence: the donor's side covers it
  } else if (first <= fence) {
    return gossip::reject(self, ctx, st, id, p);  // crosses the fence
  }
  if (st.dedup.seen(p.from, dasgd_gradients, p.seq))
    return;  // a duplicate (retransmitted, or duplicated by the link)
  for (auto s = first; s < p.seq; ++s)
    if (st.dedup.seen(p.from, dasgd_gradients, s))
      return gossip::reject(self, ctx, st, id, p);  // overlaps gradients already here
  for (auto s = first; s <= p.seq; ++s)
    static_cast<void>(st.dedup.first_time(p.from, dasgd_gradients, s));
  st.highest[p.from] = std::max(st.highest[p.from], p.seq);
  relay_to_replacements(self, ctx, id, p);
  if (st.hold.held)
    return apply_packet(st, p, ctx.ns(self));  // no gradient in flight: the next read sees it
  st.inbox.push_back(p);
}

// ---- checkpoints

std::string save_dasgd(const dasgd_state& st, std::uint32_t id) {
  proto::NodeState s;
  save_worker_basics(st, st.steps, s);
  auto& d = *s.mutable_dasgd();
  d.set_applied(st.applied);
  d.set_instant_ns(st.instant_ns);
  d.set_applied_now(st.applied_now);
  for (std::uint32_t j = 0; j < st.n; ++j)
    d.add_applied_from(j == id ? st.steps : st.dedup.first_unseen(j, dasgd_gradients) - 1);
  *d.mutable_batch() = {st.batch.begin(), st.batch.end()};
  d.set_batch_count(st.batch_count);
  for (std::uint32_t j = 0; j < st.n; ++j)
    for (auto lost : st.lost[j]) {
      s.mutable_dasgd()->add_lost(j);
      s.mutable_dasgd()->add_lost(lost);
    }
  if (st.created) {
    const auto [last, before_last, total] = st.created->totals();
    d.set_created_last_ns(last);
    d.set_created_before_last(before_last);
    d.set_created_total(total);
    for (auto ns : st.created->since(id, st.steps - st.batch_count + 1))
      d.add_batch_created_ns(ns);
  }
  return s.SerializeAsString();
}

void restore_dasgd(dasgd_state& st, std::uint32_t id, const proto::NodeState& s) {
  st.steps = restore_worker_basics(st, s);
  const auto& d = s.dasgd();
  st.applied = d.applied();
  st.instant_ns = d.instant_ns();
  st.applied_now = d.applied_now();
  st.used_total = d.applied();
  // The drained links delivered every gradient sent: 1..k of each origin.
  for (std::uint32_t j = 0; j < st.n; ++j) {
    st.highest[j] = d.applied_from(static_cast<int>(j));
    if (j != id)
      for (std::uint64_t k = 1; k <= d.applied_from(static_cast<int>(j)); ++k)
        static_cast<void>(st.dedup.first_time(j, dasgd_gradients, k));
  }
  for (int e = 0; e + 1 < s.dasgd().lost_size(); e += 2)
    if (s.dasgd().lost(e) < st.n)
      st.lost[s.dasgd().lost(e)].insert(s.dasgd().lost(e + 1));
  st.batch.assign(d.batch().begin(), d.batch().end());
  st.batch_count = d.batch_count();
  if (st.created)
    st.created->restore(id, d.created_last_ns(), d.created_before_last(), d.created_total(),
                        st.steps - st.batch_count + 1,
                        {d.batch_created_ns().begin(), d.batch_created_ns().end()});
  st.hold.requested = st.hold.held = true;  // until the supervisor's go
}

/// Node `id`'s worker; a replacement (`joining`, after a crash) keeps every
/// message until the supervisor starts it with a donor's state.
caf::behavior dasgd_worker(dasgd_ptr self, std::uint32_t id, context_ptr ctx,
                           std::shared_ptr<creation_record> created, bool joining) {
  const auto& plan = *ctx->plan;
  const auto& algo = plan.spec.algorithm().dasgd();
  auto& st = self->state;
  st.cu.emplace(*ctx, id);
  st.seq_rate = future_seq_rate(plan);
  st.x = plan.x0;
  st.n = static_cast<std::uint32_t>(plan.nodes());
  st.created = std::move(created);
  st.gamma = algo.step_size();
  st.decay = algo.decay();
  st.every = std::max<std::uint32_t>(1, algo.broadcast_every());
  st.record = ctx->probe != nullptr;
  st.highest.assign(st.n, 0);
  st.lost.resize(st.n);
  const auto* saved = joining ? nullptr : resumed_node(*ctx, id);  // a replacement joins
  if (saved)
    restore_dasgd(st, id, *saved);
  auto show_model = [self, ctx, id] {
    run_probe::show_model(ctx->probe, self, id, &self->state.x);
  };
  if (!joining)
    show_model();
  caf::behavior running =
    caf::message_handler{
      [=](init_atom, const std::vector<caf::actor>& routes) {
        // routes: to every other node in increasing id order
        auto& st = self->state;
        for (std::uint32_t j = 0, k = 0; j < st.n; ++j)
          if (j != id)
            st.out.routes.emplace_back(j, routes.at(k++));
      },
      [=](start_atom) {
        if (!saved)  // restored: holds until the supervisor's go
          begin_cycle(self, *ctx);
      },
      [=](wake_atom, std::uint64_t step) {
        ctx->events.record(ctx->ns(self), id, event_kind::wake, step);
        wake(self, *ctx, id);
      },
      [=](deliver_atom, const packet& p) { deliver(self, *ctx, id, p); },
      [=](model_atom) { return gossip::snapshot(self->state, id); },
      [=](stats_atom) { return gossip::stats(self->state); },
      // Node k is being restarted (its dead worker sent gradients up to
      // `sent`, made up to `made`): this node is its donor ...
      [=](restart_atom, std::uint32_t k, std::uint64_t sent, std::uint64_t made) {
        return donate(self, *ctx, id, k, sent, made);
      },
      // ... and relays up to these fences (per origin) ...
      [=](restart_atom, std::uint32_t k, std::vector<std::uint64_t> until) {
        relay_until(self, *ctx, id, k, std::move(until));
      },
      // ... or, not the donor, fences its own stream.
      [=](dasgd_fence_atom, std::uint32_t k, std::uint64_t sent, std::uint64_t made) {
        mark_lost(self->state, k, sent + 1, made);
        return fence_stream(self, *ctx, id, k);
      },
    }
      .or_else(barrier_handlers(
        self, [=] { begin_cycle(self, *ctx); }, [=] { return save_dasgd(self->state, id); }));
  if (!joining)
    return running;
  self->set_default_handler(caf::skip);
  return {
    [=](start_atom, const float_blob& x, const std::vector<std::vector<std::uint64_t>>& record,
        const std::vector<std::vector<std::uint64_t>>& lost, const std::vector<packet>& inbox,
        std::uint64_t made, const std::vector<caf::actor>& routes,
        const std::vector<std::uint64_t>& fence) mutable {
      adopt(self, x, record, lost, inbox, made, fence);
      auto& st = self->state;
      for (std::uint32_t j = 0, r = 0; j < st.n; ++j)
        if (j != id)
          st.out.routes.emplace_back(j, routes.at(r++));
      self->set_default_handler(caf::print_and_drop);
      self->become(std::move(running));
      show_model();
      begin_cycle(self, *ctx);
    },
  };
}

}  // namespace

dasgd_ledger dasgd_take_ledger(const caf::actor_addr& worker) {
  return gossip::take_from_worker(worker, &dasgd_state::ledger);
}

std::string dasgd_check_checkpoint(const proto::Checkpoint& ck, const run_plan& plan) {
  const auto n = static_cast<int>(plan.nodes());
  for (int i = 0; i < n; ++i) {
    const auto& s = ck.nodes(i);
    const auto& d = s.dasgd();
    const std::string at = "node " + std::to_string(i) + ": dasgd.";
    if (d.applied_from_size() != n)
      return at + "applied_from names " + std::to_string(d.applied_from_size()) +
             " nodes; the spec runs " + std::to_string(n);
    for (int j = 0; j < n; ++j)
      if (d.applied_from(j) > ck.nodes(j).wakes())
        return at + "applied_from[" + std::to_string(j) +
               "] = " + std::to_string(d.applied_from(j)) + " gradients, but node " +
               std::to_string(j) + " made " + std::to_string(ck.nodes(j).wakes());
    if (s.dasgd().lost_size() % 2 != 0)
      return "node " + std::to_string(i) + ": dasgd_lost holds an odd number of values";
    for (int e = 0; e + 1 < s.dasgd().lost_size(); e += 2)
      if (s.dasgd().lost(e) >= static_cast<std::uint64_t>(n) ||
          s.dasgd().lost(e + 1) > ck.nodes(static_cast<int>(s.dasgd().lost(e))).wakes())
        return "node " + std::to_string(i) + ": dasgd_lost claims gradient " +
               std::to_string(s.dasgd().lost(e + 1)) + " of node " +
               std::to_string(s.dasgd().lost(e)) + ", which it never made";
    if (d.batch_count() > s.wakes() ||
        (d.batch_count() > 0 && static_cast<std::size_t>(d.batch_size()) != plan.dim()) ||
        static_cast<std::uint64_t>(d.batch_created_ns_size()) != d.batch_count())
      return at + "batch does not match batch_count and the model's dimension";
  }
  return {};
}

namespace {

/// The run's creation record in this process (null across processes).
[[nodiscard]] std::shared_ptr<creation_record> shared_record(const context_ptr& ctx) {
  if (ctx->spans_processes)
    return nullptr;
  return process_shared<creation_record>(
    *ctx, "dasgd.created", [&] { return std::make_shared<creation_record>(ctx->plan->nodes()); });
}

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
void read_links(caf::event_based_actor* sup, const context_ptr& ctx,
                const std::vector<caf::actor>& links, std::size_t n,
                std::function<void(std::vector<std::uint64_t>)> then) {
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
  sup->send(r.replacement, start_atom::value, j->x, j->record, j->lost, j->inbox, j->made,
            r.nodes.at(r.node).worker_routes, j->fence);
  sup->send(r.nodes.at(j->donor).worker, restart_atom::value, r.node, j->fence);
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
      ->request(j->r.nodes.at(o).worker, ctx->reply_timeout(), dasgd_fence_atom::value, j->r.node,
                j->sent, j->made)
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
    sup->send(r.replacement, start_atom::value, float_blob{ctx->plan->x0},
              std::vector<std::vector<std::uint64_t>>{}, lost, std::vector<packet>{}, j->made,
              r.nodes.at(r.node).worker_routes, std::vector<std::uint64_t>(n, 0));
    return j->started("x^0 (no live node to copy from)");
  }
  sup
    ->request(r.nodes.at(candidate).worker, ctx->reply_timeout(), restart_atom::value, r.node,
              j->sent, j->made)
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

node_actors spawn_dasgd_node(caf::event_based_actor* parent, const context_ptr& ctx,
                             std::uint32_t i) {
  node_actors node;
  node.worker = parent->spawn(dasgd_worker, i, ctx, shared_record(ctx), false);
  node.buffer = node.worker;  // answers stats_atom with its rejected count
  return node;
}

caf::actor spawn_dasgd_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                   std::uint32_t k) {
  return sup->spawn(dasgd_worker, k, ctx, shared_record(ctx), true);
}

void join_dasgd_worker(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                       restart_started started) {
  auto j = std::make_shared<dasgd_join>();
  j->r = r;
  j->started = std::move(started);
  auto created = shared_record(ctx);
  read_links(sup, ctx, r.links, r.nodes.size(), [=](std::vector<std::uint64_t> highest) {
    // The dead worker's links hold every packet it sent (they deliver them
    // whatever happens to it); its unsent batch is lost (the creation
    // record knows how many it made; across processes nobody does).
    j->sent = highest.at(r.node);
    j->made = created ? std::max(j->sent, created->made(r.node)) : j->sent;
    if (j->made > j->sent) {
      created->lose(r.node, j->sent + 1, j->made);
      ctx->events.record(ctx->ns(sup), r.node, event_kind::gradients_lost, j->sent + 1, j->made);
    }
    ask_donor(sup, ctx, j, 0);
  });
}

void wire_dasgd(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, std::vector<caf::actor>& links) {
  const auto n = static_cast<std::uint32_t>(nodes.size());
  const auto workers = workers_of(nodes);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t j = 0; j < n; ++j)
      if (j != i)
        edges.emplace_back(i, j);
  network net{sup, ctx, edges, workers, links};
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<caf::actor> routes;
    for (std::uint32_t j = 0; j < n; ++j)
      if (j != i)
        routes.push_back(net.route(i, j));
    nodes[i].worker_routes = routes;  // for a replacement
    sup->send(workers[i], init_atom::value, std::move(routes));
  }
  // Every worker knows its routes before any starts (real clock: an early
  // starter may already send to one not yet started).
  for (const auto& w : workers)
    sup->send(w, start_atom::value);
}

// ---- the descriptor the runtime reads (registry.cpp lists it)
algorithm_descriptor dasgd_algorithm() {
  algorithm_descriptor d;
  d.kind = proto::AlgorithmSpec::kDasgd;
  d.node_part = proto::NodeState::kDasgd;
  d.name = "dasgd";
  d.check_block = dasgd_check_block;
  d.spawn_node = spawn_dasgd_node;
  d.wire = wire_dasgd;
  d.spawn_replacement = ignoring_incarnation<spawn_dasgd_replacement>;
  d.join = join_dasgd_worker;
  d.check_checkpoint = dasgd_check_checkpoint;
  d.links.outbox_sums = true;
  d.links.coalesces = [](const proto::AlgorithmSpec& a) { return a.dasgd().coalesce(); };
  return d;
}

}  // namespace atrain
