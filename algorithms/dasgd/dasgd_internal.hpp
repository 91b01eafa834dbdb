#pragma once
/// DASGD's private header: the creation record, the worker's state and the
/// functions dasgd.cpp, dasgd_restart.cpp and dasgd_checkpoint.cpp share.
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/dasgd/dasgd.hpp"
#include "algorithms/gossip/gossip.hpp"

namespace atrain::dasgd_detail {

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
using dasgd_ptr = dasgd_worker_actor::stateful_pointer<dasgd_state>;

/// The first gradient number packet `p` covers.
[[nodiscard]] inline std::uint64_t first_of(const packet& p) {
  return p.seq - static_cast<std::uint64_t>(p.scalars[0]) + 1;
}

// ---- the worker's side of a restart (dasgd_restart.cpp)

void mark_lost(dasgd_state& st, std::uint32_t origin, std::uint64_t first, std::uint64_t last);
std::uint64_t fence_stream(dasgd_ptr self, run_context& ctx, std::uint32_t id, std::uint32_t k);
void relay_to_replacements(dasgd_ptr self, run_context& ctx, std::uint32_t id, const packet& p);
void relay_until(dasgd_ptr self, run_context& ctx, std::uint32_t id, std::uint32_t k,
                 std::vector<std::uint64_t> until);
std::tuple<float_blob, std::vector<std::vector<std::uint64_t>>,
           std::vector<std::vector<std::uint64_t>>, std::vector<packet>, std::uint64_t>
donate(dasgd_ptr self, run_context& ctx, std::uint32_t id, std::uint32_t k, std::uint64_t sent,
       std::uint64_t made);
void adopt(dasgd_ptr self, const float_blob& x,
           const std::vector<std::vector<std::uint64_t>>& record,
           const std::vector<std::vector<std::uint64_t>>& lost, const std::vector<packet>& inbox,
           std::uint64_t made, const std::vector<std::uint64_t>& fence);

// ---- checkpoints (dasgd_checkpoint.cpp)

[[nodiscard]] std::string save_dasgd(const dasgd_state& st, std::uint32_t id);
void restore_dasgd(dasgd_state& st, std::uint32_t id, const proto::NodeState& s);

/// The run's creation record in this process (null across processes; dasgd.cpp).
[[nodiscard]] std::shared_ptr<creation_record> shared_record(const context_ptr& ctx);

}  // namespace atrain::dasgd_detail
