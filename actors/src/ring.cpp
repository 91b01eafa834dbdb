/// Ring all-reduce: the per-rank state machine (reduce-scatter, then
/// all-gather), its packet endpoint and the ring's wiring (see ring.hpp).
#include "atrain/actors/ring.hpp"

#include <algorithm>
#include <cmath>

#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

std::pair<std::size_t, std::size_t> ring_chunk(std::size_t d, std::uint32_t n, std::uint32_t c) {
  const std::size_t base = d / n;
  const std::size_t rem = d % n;
  const std::size_t begin = c * base + std::min<std::size_t>(c, rem);
  return {begin, begin + base + (c < rem ? 1 : 0)};
}

// ---------------------------------------------------------------- state machine

ring_allreduce::ring_allreduce(std::uint32_t rank, std::uint32_t n, std::size_t dim)
  : rank_(rank), n_(n), dim_(dim), buf_(dim, 0.0F), counts_(n, 0.0) {}

bool ring_allreduce::called() const {
  auto it = stash_.lower_bound({round_, 0});
  return !active_ && it != stash_.end() && it->first.first == round_;
}

std::uint32_t ring_allreduce::sent_chunk(std::uint32_t rank, std::uint32_t step) const {
  if (step < n_ - 1)
    return (rank + n_ - step) % n_;             // reduce-scatter: (r - s) mod n
  const std::uint32_t s = step - (n_ - 1);
  return (rank + 1 + n_ - s) % n_;              // all-gather: (r + 1 - s) mod n
}

ring_allreduce::send ring_allreduce::make_send(std::uint32_t step) const {
  const auto c = sent_chunk(rank_, step);
  const auto [b, e] = ring_chunk(dim_, n_, c);
  return {round_, step,
          float_blob{std::vector<float>(buf_.begin() + static_cast<std::ptrdiff_t>(b),
                                        buf_.begin() + static_cast<std::ptrdiff_t>(e))},
          counts_[c]};
}

std::vector<ring_allreduce::send> ring_allreduce::begin(const float* v, double count) {
  std::copy(v, v + dim_, buf_.begin());
  std::fill(counts_.begin(), counts_.end(), count);
  active_ = true;
  finished_ = false;
  next_ = 0;
  std::vector<send> out;
  if (steps_per_round() == 0) {  // one rank: the sum is its own vector
    active_ = false;
    finished_ = true;
    ++round_;
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
    const auto [b, e] = ring_chunk(dim_, n_, c);
    const float* in = it->second.first.ptr();
    if (next_ < n_ - 1) {                            // reduce-scatter: add
      vec::axpy(1.0F, in, buf_.data() + b, e - b);
      counts_[c] += it->second.second;
    } else {                                         // all-gather: copy
      std::copy(in, in + (e - b), buf_.begin() + static_cast<std::ptrdiff_t>(b));
      counts_[c] = it->second.second;
    }
    stash_.erase(it);
    if (++next_ == steps_per_round()) {
      active_ = false;
      finished_ = true;
      ++round_;
      return;
    }
    out.push_back(make_send(next_));
  }
}

ring_allreduce::verdict ring_allreduce::offer(std::uint64_t round, std::uint32_t step,
                                              const float_blob& chunk, std::vector<send>& out,
                                              std::optional<double> count) {
  if (step >= steps_per_round() || round > round_ + 1)
    return verdict::invalid;
  if (count && !(*count >= 0 && std::isfinite(*count) && std::floor(*count) == *count))
    return verdict::invalid;
  const std::uint32_t predecessor = (rank_ + n_ - 1) % n_;
  const auto [b, e] = ring_chunk(dim_, n_, sent_chunk(predecessor, step));
  if (chunk.size() != e - b || !vec::all_finite(chunk.ptr(), chunk.size()))
    return verdict::invalid;
  if (round < round_ || (round == round_ && active_ && step < next_) ||
      stash_.count({round, step}) > 0)
    return verdict::duplicate;
  // Without counts every rank put in one vector: the chunk sent at
  // reduce-scatter step s has passed s+1 ranks, every all-gather chunk n.
  const double implied = step < n_ - 1 ? step + 1.0 : static_cast<double>(n_);
  stash_.emplace(std::make_pair(round, step), std::make_pair(chunk, count.value_or(implied)));
  run(out);
  return verdict::accepted;
}

// ---------------------------------------------------------------- endpoint

void ring_endpoint::emit(caf::event_based_actor* self, run_context& ctx,
                         std::vector<ring_allreduce::send>& sends) {
  for (auto& s : sends) {
    packet p;
    p.from = rank_;
    p.kind = 1 + s.step;
    p.seq = s.round;
    p.f = std::move(s.chunk);
    if (counted_)
      p.scalars.push_back(s.count);
    out_.broadcast(self, ctx, std::move(p));
  }
}

bool ring_endpoint::begin(caf::event_based_actor* self, run_context& ctx, const float* v,
                          double count) {
  const auto before = ring_.round();
  auto sends = ring_.begin(v, count);
  emit(self, ctx, sends);
  return ring_.round() != before;
}

bool ring_endpoint::deliver(caf::event_based_actor* self, run_context& ctx, const packet& p) {
  ctx.events.record(ctx.ns(self), rank_, event_kind::receive, p.from, p.seq);
  const auto n = static_cast<std::uint32_t>(ctx.plan->nodes());
  const auto before = ring_.round();
  std::vector<ring_allreduce::send> sends;
  const bool known = p.from == (rank_ + n - 1) % n && p.kind >= 1 && p.d.empty() &&
                     p.scalars.size() == (counted_ ? 1U : 0U);
  const auto count = counted_ && known ? std::optional<double>{p.scalars.front()} : std::nullopt;
  if (!known ||
      ring_.offer(p.seq, p.kind - 1, p.f, sends, count) == ring_allreduce::verdict::invalid) {
    ++rejected_;
    ctx.events.record(ctx.ns(self), rank_, event_kind::reject, p.from, p.seq);
    return false;
  }
  emit(self, ctx, sends);
  return ring_.round() != before;
}

// ---------------------------------------------------------------- wiring

void wire_ring(caf::event_based_actor* sup, const context_ptr& ctx,
               std::vector<node_actors>& nodes, std::vector<caf::actor>& links) {
  const auto n = static_cast<std::uint32_t>(nodes.size());
  const auto workers = workers_of(nodes);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 0; n > 1 && i < n; ++i)
    edges.emplace_back(i, (i + 1) % n);
  network net{sup, ctx, edges, workers, links};
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<caf::actor> out;
    if (n > 1)
      out.push_back(net.route(i, (i + 1) % n));
    sup->send(workers[i], start_atom::value, std::move(out));
  }
}

} // namespace atrain
