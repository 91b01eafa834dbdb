#pragma once
/// Reuse of blob buffers that nobody holds any more. A sender that publishes
/// a new immutable blob of the model's size at every step (R-FAST's running
/// sum, its direction, its model) would otherwise allocate — and page-fault
/// and zero — a fresh vector each time; a blob it published earlier is free
/// again once every receiver and message has dropped it.
#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "atrain/messages/wire.hpp"

namespace atrain {

template <class T>
class blob_pool {
public:
  using buffer = std::shared_ptr<std::vector<T>>;

  /// A writable vector of n elements whose contents are unspecified: a kept
  /// buffer no blob shares any more, or a new one.
  [[nodiscard]] buffer take(std::size_t n) {
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer does not model the fence below: it would report the
    // last holder's reads against our writes. Allocate instead.
#else
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->use_count() != 1 || (*it)->size() != n)
        continue;
      // The last other holder released it (an acq_rel decrement, perhaps on
      // another thread): order its reads before our writes.
      std::atomic_thread_fence(std::memory_order_acquire);
      auto out = std::const_pointer_cast<std::vector<T>>(std::move(*it));
      kept_.erase(it);
      return out;
    }
#endif
    return std::make_shared<std::vector<T>>(n);
  }

  /// Publishes `v` as an immutable blob; its buffer is kept for a later take().
  /// `known`: whether its values are all finite, if the publisher found out
  /// while writing them (receivers then skip the check).
  [[nodiscard]] blob<T> publish(buffer v, finiteness known = finiteness::unknown) {
    blob<T> b;
    b.data = std::move(v);
    b.known = std::make_shared<std::atomic<finiteness>>(known);
    kept_.push_back(b.data);
    if (kept_.size() > depth)
      kept_.erase(kept_.begin());  // the oldest: most likely still held somewhere
    return b;
  }

  /// Buffers kept (for tests).
  [[nodiscard]] std::size_t kept() const noexcept {
    return kept_.size();
  }

private:
  // The newest blob is always still held by its publisher, so depth 3 lets a
  // buffer come back after two more publications.
  static constexpr std::size_t depth = 3;
  std::vector<std::shared_ptr<const std::vector<T>>> kept_;
};

}  // namespace atrain
