/// Ring all-reduce: the per-rank state machine (reduce-scatter, then
/// all-gather), its packet endpoint and the ring's wiring (see ring.hpp).
#include "algorithms/ring/ring.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "atrain.pb.h"
#include "atrain/actors/ask_nodes.hpp"
#include "atrain/actors/blob_checks.hpp"
#include "atrain/kernels/vector_ops.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

std::pair<std::size_t, std::size_t> ring_chunk(std::size_t d, std::uint32_t n, std::uint32_t c) {
  const std::size_t base = d / n;
  const std::size_t rem = d % n;
  const std::size_t begin = c * base + std::min<std::size_t>(c, rem);
  return {begin, begin + base + (c < rem ? 1 : 0)};
}

// ---------------------------------------------------------------- state machine

ring_allreduce::ring_allreduce(std::uint32_t rank, std::uint32_t n, std::size_t dim,
                               std::uint32_t fragments)
  : rank_(rank), n_(n), dim_(dim), fragments_(std::max<std::uint32_t>(1, fragments)),
    buf_(dim, 0.0F), counts_(n, 0.0) {}

std::pair<std::size_t, std::size_t> ring_allreduce::fragment(std::uint64_t round) const {
  return ring_chunk(dim_, fragments_, static_cast<std::uint32_t>(round % fragments_));
}

namespace {

/// Chunk c of fragment [f.first, f.second) split over n ranks.
std::pair<std::size_t, std::size_t> chunk_of(std::pair<std::size_t, std::size_t> f, std::uint32_t n,
                                             std::uint32_t c) {
  const auto [b, e] = ring_chunk(f.second - f.first, n, c);
  return {f.first + b, f.first + e};
}

}  // namespace

bool ring_allreduce::called() const {
  auto it = stash_.lower_bound({round_, 0});
  return !active_ && it != stash_.end() && it->first.first == round_;
}

std::uint32_t ring_allreduce::sent_chunk(std::uint32_t rank, std::uint32_t step) const {
  if (step < n_ - 1)
    return (rank + n_ - step) % n_;  // reduce-scatter: (r - s) mod n
  const std::uint32_t s = step - (n_ - 1);
  return (rank + 1 + n_ - s) % n_;  // all-gather: (r + 1 - s) mod n
}

ring_allreduce::send ring_allreduce::make_send(std::uint32_t step) {
  const auto c = sent_chunk(rank_, step);
  const auto [b, e] = chunk_of(fragment(round_), n_, c);
  if (!codec_)
    return {round_,
            step,
            float_blob{std::vector<float>(buf_.begin() + static_cast<std::ptrdiff_t>(b),
                                          buf_.begin() + static_cast<std::ptrdiff_t>(e))},
            counts_[c],
            {}};
  if (step > n_ - 1)  // all-gather: the bytes the chunk came in
    return {round_, step, {}, counts_[c], relay_};
  auto coded = codec::encode(*codec_, buf_.data() + b, e - b);
  if (step == n_ - 1)  // this rank completed chunk c: keep what every other rank will decode
    (void)codec::decode_into(coded.data(), coded.size(), buf_.data() + b, e - b);
  return {round_, step, {}, counts_[c], blob<std::uint8_t>{std::move(coded)}};
}

std::vector<ring_allreduce::send> ring_allreduce::begin(const float* v, double count) {
  const auto [fb, fe] = fragment(round_);
  std::copy(v + fb, v + fe, buf_.begin() + static_cast<std::ptrdiff_t>(fb));
  contribution_.assign(v, v + dim_);
  contribution_count_ = count;
  std::fill(counts_.begin(), counts_.end(), count);
  active_ = true;
  finished_ = false;
  next_ = 0;
  std::vector<send> out;
  if (steps_per_round() == 0) {  // one rank: the sum is its own vector
    finish_round();
    return out;
  }
  out.push_back(make_send(0));
  run(out);
  return out;
}

void ring_allreduce::run(std::vector<send>& out) {
  while (active_) {
    auto it = stash_.find({round_, next_});
    if (it == stash_.end())
      return;
    const std::uint32_t predecessor = (rank_ + n_ - 1) % n_;
    const auto c = sent_chunk(predecessor, next_);
    const auto [b, e] = chunk_of(fragment(round_), n_, c);
    const float* in = it->second.chunk.ptr();
    if (next_ < n_ - 1) {  // reduce-scatter: add
      vec::axpy(1.0F, in, buf_.data() + b, e - b);
      counts_[c] += it->second.count;
    } else {  // all-gather: copy
      std::copy(in, in + (e - b), buf_.begin() + static_cast<std::ptrdiff_t>(b));
      counts_[c] = it->second.count;
      relay_ = it->second.coded;
    }
    stash_.erase(it);
    if (++next_ == steps_per_round()) {
      finish_round();
      return;
    }
    out.push_back(make_send(next_));
  }
}

void ring_allreduce::finish_round() {
  last_round_ = round_;
  active_ = false;
  finished_ = true;
  ++round_;
  last_sum_ = buf_;
  last_count_ = counts_.front();
}

void ring_allreduce::adopt(const std::vector<float>& sum, double count) {
  buf_ = sum;
  std::fill(counts_.begin(), counts_.end(), count);
  finish_round();
  stash_.erase(stash_.begin(), stash_.lower_bound({round_, 0}));
}

std::vector<ring_allreduce::send> ring_allreduce::skip_to(std::uint64_t round) {
  const bool again = active_;
  active_ = false;
  round_ = round;
  stash_.erase(stash_.begin(), stash_.lower_bound({round_, 0}));
  if (!again)
    return {};
  const auto v = contribution_;
  return begin(v.data(), contribution_count_);
}

void ring_allreduce::reshape(std::uint32_t rank, std::uint32_t n) {
  rank_ = rank;
  n_ = n;
  counts_.resize(n, counts_.empty() ? 0.0 : counts_.front());  // count() stays the last sum's
}

ring_allreduce::verdict ring_allreduce::offer(std::uint64_t round, std::uint32_t step,
                                              const float_blob& raw, std::vector<send>& out,
                                              std::optional<double> count,
                                              const blob<std::uint8_t>& coded) {
  if (step >= steps_per_round() || round > round_ + 1)
    return verdict::invalid;
  if (count && !(*count >= 0 && std::isfinite(*count) && std::floor(*count) == *count))
    return verdict::invalid;
  const std::uint32_t predecessor = (rank_ + n_ - 1) % n_;
  const auto [b, e] = chunk_of(fragment(round), n_, sent_chunk(predecessor, step));
  if (codec_.has_value() != !coded.empty() || (codec_ && !raw.empty()))
    return verdict::invalid;  // a raw chunk in a coded ring, or coded bytes in a raw one
  float_blob chunk = raw;
  if (codec_) {
    std::vector<float> values(e - b);
    if (codec::decode_into(coded.ptr(), coded.size(), values.data(), values.size()))
      return verdict::invalid;
    chunk = float_blob{std::move(values)};
  }
  if (chunk.size() != e - b || !all_finite(chunk))
    return verdict::invalid;
  if (round < round_ || (round == round_ && active_ && step < next_) ||
      stash_.count({round, step}) > 0)
    return verdict::duplicate;
  // Without counts every rank put in one vector: the chunk sent at
  // reduce-scatter step s has passed s+1 ranks, every all-gather chunk n.
  const double implied = step < n_ - 1 ? step + 1.0 : static_cast<double>(n_);
  stash_.emplace(std::make_pair(round, step), stashed{chunk, count.value_or(implied), coded});
  run(out);
  return verdict::accepted;
}

// ---------------------------------------------------------------- endpoint

packet ring_endpoint::to_packet(ring_allreduce::send& s) const {
  packet p;
  p.from = rank_;
  p.kind = 1 + s.step;
  p.seq = s.round;
  p.f = std::move(s.chunk);
  p.coded = std::move(s.coded);
  if (counted_)
    p.scalars.push_back(s.count);
  return p;
}

void ring_endpoint::set_members(std::vector<std::uint32_t> members, std::uint64_t from) {
  const auto at = std::lower_bound(members.begin(), members.end(), rank_);
  if (at == members.end() || *at != rank_)
    throw std::logic_error("ring_endpoint::set_members: node " + std::to_string(rank_) +
                           " is not among the members");
  const auto pos = static_cast<std::uint32_t>(at - members.begin());
  const auto m = static_cast<std::uint32_t>(members.size());
  ring_.reshape(pos, m);
  successor_ = members[(pos + 1) % m];
  predecessor_ = members[(pos + m - 1) % m];
  since_ = from;
  members_ = std::move(members);
}

std::vector<std::uint32_t> ring_endpoint::members() const {
  if (!members_.empty())
    return members_;
  std::vector<std::uint32_t> all(n_);
  for (std::uint32_t i = 0; i < n_; ++i)
    all[i] = i;
  return all;
}

bool ring_endpoint::is_member(std::uint32_t node) const {
  return members_.empty() ? node < n_ : std::binary_search(members_.begin(), members_.end(), node);
}

bool ring_endpoint::take(caf::local_actor* self, run_context& ctx, const packet& p,
                         std::vector<ring_allreduce::send>& sends) {
  ctx.events.record(ctx.ns(self), rank_, event_kind::receive, p.from, p.seq);
  if (p.seq < since_)
    return false;  // a round of the ring before a join: every such round is over here
  const bool known = p.from == predecessor_ && p.kind >= 1 && p.d.empty() &&
                     p.scalars.size() == (counted_ ? 1U : 0U);
  const auto count = counted_ && known ? std::optional<double>{p.scalars.front()} : std::nullopt;
  if (!known || ring_.offer(p.seq, p.kind - 1, p.f, sends, count, p.coded) ==
                  ring_allreduce::verdict::invalid) {
    ++rejected_;
    ctx.events.record(ctx.ns(self), rank_, event_kind::reject, p.from, p.seq);
    return false;
  }
  return true;
}

void ring_check_codec(spec_checker& c) {
  if (c.spec().link().codec().error_feedback())
    c.bad("link.codec.error_feedback",
          "a ring codes each chunk once and every rank must end with the same sum; set it false");
}

// ---------------------------------------------------------------- wiring

std::vector<std::uint32_t> ring_successors(const run_plan& plan, std::uint32_t i) {
  const auto n = static_cast<std::uint32_t>(plan.nodes());
  std::vector<std::uint32_t> out;
  for (std::uint32_t j = (i + 1) % n; n > 1 && j != i; j = (j + 1) % n) {
    out.push_back(j);
    if (!plan.join_of(j))
      break;
  }
  return out;
}

std::vector<std::uint32_t> ring_members_at_start(const run_plan& plan) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(plan.nodes()); ++i)
    if (!plan.join_of(i))
      out.push_back(i);
  return out;
}

void connect_ring(ring_endpoint& ring, const run_plan& plan, std::uint32_t id,
                  const std::vector<caf::actor>& out) {
  const auto next = ring_successors(plan, id);
  for (std::size_t k = 0; k < out.size() && k < next.size(); ++k)
    ring.connect(next[k], out[k]);
}

void wire_ring(caf::event_based_actor* sup, const context_ptr& ctx, std::vector<node_actors>& nodes,
               link_list& links) {
  const auto n = static_cast<std::uint32_t>(nodes.size());
  const auto workers = workers_of(nodes);
  std::vector<std::vector<std::uint32_t>> next(n);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 0; i < n; ++i) {
    next[i] = ring_successors(*ctx->plan, i);
    for (auto j : next[i])
      edges.emplace_back(i, j);
  }
  network net{sup, ctx, edges, workers, links};
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<caf::actor> out;
    for (auto j : next[i])
      out.push_back(net.route(i, j));
    nodes[i].worker_routes = out;
    sup->send(caf::actor_cast<ring_worker_actor>(workers[i]), start_atom::value, std::move(out));
  }
}

// ---------------------------------------------------------------- restart

void join_ring_worker(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                      restart_started started) {
  using frozen = std::tuple<std::uint64_t, float_blob, double, float_blob, std::uint64_t,
                            std::uint64_t, std::vector<std::uint32_t>>;
  using ask = ask_nodes<frozen, ring_worker_actor>;
  const auto n = static_cast<std::uint32_t>(r.nodes.size());
  auto decide = [=](const ask::answers& got) {
    // m: the most rounds a live rank finished; the donor: the first rank
    // (from the dead one's predecessor backwards) that finished m.
    std::uint64_t m = 0;
    for (const auto& x : got)
      if (x)
        m = std::max(m, std::get<0>(*x));
    std::optional<std::uint32_t> donor;
    for (std::uint32_t back = 1; back < n && !donor; ++back) {
      const auto j = (r.node + n - back) % n;
      if (got[j] && std::get<0>(*got[j]) == m)
        donor = j;
    }
    float_blob sum, x{ctx->plan->x0};
    double count = 0;
    std::uint64_t steps = 0, averages = 0;
    std::string source = "x^0 (no rank answered)";
    // The members from round m+1 on: the live ranks' (all alike), with the
    // restarted node (a joining one is not among them yet).
    auto members = ring_members_at_start(*ctx->plan);
    for (const auto& a : got)
      if (a)
        members = std::get<6>(*a);
    const bool joins = !std::binary_search(members.begin(), members.end(), r.node);
    if (joins)
      members.insert(std::upper_bound(members.begin(), members.end(), r.node), r.node);
    if (donor) {
      const auto& d = *got[*donor];
      sum = std::get<1>(d);
      count = std::get<2>(d);
      x = std::get<3>(d);
      steps = std::get<4>(d);
      averages = std::get<5>(d);
      source = "node " + std::to_string(*donor) + "'s model";
    }
    std::size_t completed = 0;
    for (std::uint32_t j = 0; j < n; ++j)
      if (got[j]) {
        if (m > 0 && std::get<0>(*got[j]) + 1 == m)
          ++completed;
        sup->send(caf::actor_cast<ring_worker_actor>(r.nodes[j].worker), resume_atom::value, m, sum,
                  count);
      }
    sup->send(caf::actor_cast<ring_worker_actor>(r.replacement), start_atom::value,
              r.nodes.at(r.node).worker_routes, x, steps, averages, m + 1, members);
    std::string how = "round " + std::to_string(m) + " begun again as " + std::to_string(m + 1);
    if (joins)
      how += ", the ring now over " + std::to_string(members.size()) + " nodes";
    if (completed > 0)
      how = std::to_string(completed) + " rank(s) finished round " + std::to_string(m - 1) +
            " with node " + std::to_string(*donor) + "'s sum; " + how;
    started(source + ", joining the ring at round " + std::to_string(m + 1) + " (" + how + ")");
  };
  // A dead rank (absent too) does not answer: nothing to freeze there.
  ask::run(sup, ctx, other_workers(r), decide, restart_atom::value, r.node);
}

}  // namespace atrain
