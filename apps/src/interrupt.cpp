#include "interrupt.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace atrain::cli {

namespace {

int pipe_fds[2] = {-1, -1};
volatile std::sig_atomic_t signals_seen = 0;
std::atomic<int> first_signal{0};
struct sigaction old_int, old_term;

void on_signal(int sig) {
  if (++signals_seen > 1)
    _exit(128 + sig);  // a second signal: at once
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = write(pipe_fds[1], &b, 1);
}

}  // namespace

interrupt_guard::interrupt_guard(std::shared_ptr<run_control> control)
  : control_(std::move(control)) {
  signals_seen = 0;
  first_signal = 0;
  if (pipe(pipe_fds) != 0)
    return;  // no guard: the default handlers stay
  fcntl(pipe_fds[1], F_SETFD, FD_CLOEXEC);
  fcntl(pipe_fds[0], F_SETFD, FD_CLOEXEC);
  watcher_ = std::thread{[control = control_, fd = pipe_fds[0]] {
    unsigned char b = 0;
    while (read(fd, &b, 1) == 1) {
      if (b == 0)
        return;  // the guard ends
      first_signal = b;
      std::fprintf(stderr,
                   "\natrain: %s: stopping the run (the report is still written; "
                   "again to exit at once)\n",
                   b == SIGINT ? "SIGINT" : "SIGTERM");
      control->stop("interrupted");
    }
  }};
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
}

interrupt_guard::~interrupt_guard() {
  finish();
}

void interrupt_guard::finish() {
  if (!watcher_.joinable())
    return;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  const unsigned char end = 0;
  [[maybe_unused]] auto n = write(pipe_fds[1], &end, 1);
  watcher_.join();
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  pipe_fds[0] = pipe_fds[1] = -1;
}

int interrupt_guard::signal() const noexcept {
  return first_signal;
}

int interrupt_guard::exit_status(int otherwise) const noexcept {
  return first_signal ? 128 + first_signal : otherwise;
}

sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

}  // namespace atrain::cli
