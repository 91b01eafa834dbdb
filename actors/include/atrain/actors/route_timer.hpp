#pragma once
/// A cross-process route's round-trip estimate, for R-FAST's folding: a
/// node folds while its packet is due back, and stops waiting once the
/// packet is late (a frozen or cut-off peer answers only at the reply
/// timeout). Plain arithmetic on the actor clock's nanoseconds: no CAF.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace atrain {

/// What a sender's routes say about sending more now (outbox::gate); the
/// larger value wins when two senders' gates combine.
enum class route_gate : std::uint8_t { free = 0, busy = 1, late = 2 };

/// RFC 6298's smoothed round trip (srtt) and its variation (rttvar) over the
/// answers of one route, and the send times of its unanswered packets.
class route_timer {
public:
  /// Before the first answer (a fresh connection may take this long).
  static constexpr double initial_rto_seconds = 1.0;

  void sent(std::int64_t at_ns) { unanswered_.push_back(at_ns); }

  /// The packet sent at `sent_ns` was answered at `now_ns`; a failure
  /// (`ok` false: the reply timeout, a dead receiver) takes no sample.
  void answered(std::int64_t sent_ns, std::int64_t now_ns, bool ok) {
    auto it = std::find(unanswered_.begin(), unanswered_.end(), sent_ns);
    if (it != unanswered_.end())
      unanswered_.erase(it);
    if (!ok)
      return;
    const double rtt = static_cast<double>(now_ns - sent_ns) * 1e-9;
    if (srtt_ < 0) {
      srtt_ = rtt;
      rttvar_ = rtt / 2;
      return;
    }
    rttvar_ = 0.75 * rttvar_ + 0.25 * std::abs(srtt_ - rtt);
    srtt_ = 0.875 * srtt_ + 0.125 * rtt;
  }

  /// Seconds after which an unanswered packet is late: srtt + 4 rttvar.
  [[nodiscard]] double rto_seconds() const {
    return srtt_ < 0 ? initial_rto_seconds : srtt_ + 4 * rttvar_;
  }

  /// True while some packet is unanswered and the oldest is not yet late.
  [[nodiscard]] bool awaiting(std::int64_t now_ns) const {
    if (unanswered_.empty())
      return false;
    const auto oldest = *std::min_element(unanswered_.begin(), unanswered_.end());
    return static_cast<double>(now_ns - oldest) * 1e-9 < rto_seconds();
  }

  [[nodiscard]] std::size_t unanswered() const noexcept { return unanswered_.size(); }
  /// The smoothed round trip; 0 before the first answer.
  [[nodiscard]] double srtt_seconds() const noexcept { return srtt_ < 0 ? 0.0 : srtt_; }

private:
  std::vector<std::int64_t> unanswered_;  // at most the outbox's window
  double srtt_ = -1;                      // < 0: no answer yet
  double rttvar_ = 0;
};

}  // namespace atrain
