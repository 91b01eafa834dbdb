#pragma once
/// SIGINT/SIGTERM for `atrain run` and `atrain compare`: the first signal
/// stops the run through its run_control (the report is still written), a
/// second one exits at once. A signal handler only writes to a self-pipe; a
/// thread of this guard turns that into run_control::stop().
#include <atomic>
#include <csignal>
#include <memory>
#include <thread>

#include "atrain/engine.hpp"

namespace atrain::cli {

/// Blocks SIGINT and SIGTERM in the calling thread (and the threads it starts
/// later) and returns that set, for sigwait/sigtimedwait (`node`, `launch`).
[[nodiscard]] sigset_t block_stop_signals();

class interrupt_guard {
public:
  /// Installs the handlers (the previous ones come back in the destructor).
  explicit interrupt_guard(std::shared_ptr<run_control> control);
  ~interrupt_guard();
  interrupt_guard(const interrupt_guard&) = delete;
  interrupt_guard& operator=(const interrupt_guard&) = delete;

  /// Restores the handlers and ends the thread (idempotent); signal() is
  /// final afterwards.
  void finish();
  /// The signal that stopped the run (0: none).
  [[nodiscard]] int signal() const noexcept;
  /// 128 + signal() (130 SIGINT, 143 SIGTERM), or `otherwise`.
  [[nodiscard]] int exit_status(int otherwise) const noexcept;

private:
  std::shared_ptr<run_control> control_;
  std::thread watcher_;
};

}  // namespace atrain::cli
