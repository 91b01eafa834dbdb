#pragma once
/// The event trace of a run: an order-sensitive hash over every event
/// (run-clock ns, logical node id, kind, two values). With the virtual clock
/// the same spec and seed give the same hash; that is the replay check.
#include <cstdint>
#include <mutex>
#include <string>

namespace atrain {

enum class event_kind : std::uint32_t {
  wake = 1,
  send = 2,
  receive = 3,
  drop = 4,
  duplicate = 5,
  evaluate = 6,
  stop = 7,
  reject = 8,
  replace = 9,
  retransmit = 10,
  ack = 11,
  coalesce = 12,
  crash = 13,
  restart = 14,
  reroot = 15,
  old_epoch = 16,
  checkpoint = 17,
  // Restarts (the numbers are the trace's: they never change).
  donate = 18,          // a node gave half its push-sum (x, w) to a replacement
  fenced = 19,          // a message sent before a replacement's join, dropped
  round_drop = 20,      // an aggregator drops a restarted worker from a round (a = node, b = round)
  stream_fence = 21,    // a node fences its gradient stream (a = restarted node, b = highest sent)
  gradients_lost = 22,  // a dead worker's gradients made, never sent (a = first number, b = last)
  // Joins (faults.join).
  absent = 23,  // a node absent from the start (a = its join)
  join = 24,    // it joined (a = its join, b = R-FAST's epoch taking it in)
};

class trace {
public:
  void record(std::int64_t t_ns, std::uint32_t node, event_kind kind, std::uint64_t a = 0,
              std::uint64_t b = 0);
  [[nodiscard]] std::uint64_t hash() const;
  [[nodiscard]] std::uint64_t events() const;
  [[nodiscard]] std::string hex() const;
  /// Continues a checkpointed run's trace: its running hash and count.
  void restore(std::uint64_t hash, std::uint64_t events) {
    std::lock_guard<std::mutex> guard{mtx_};
    hash_ = hash;
    events_ = events;
  }

private:
  mutable std::mutex mtx_;  /// uncontended with the virtual clock (one thread)
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
  std::uint64_t events_ = 0;
};

}  // namespace atrain
