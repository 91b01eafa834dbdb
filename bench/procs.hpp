#pragma once
/// Helpers of the cross-process benchmarks (bench_xprocess, bench_gloo_procs):
/// start copies of this binary in other roles and collect their exit codes,
/// plus the summary statistics both report. Benchmark code only: blocking
/// calls are fine here.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace atrain::bench {

/// The path of the running executable (so a child runs the same build).
[[nodiscard]] inline std::string self_path() {
  std::vector<char> buf(4096);
  const auto n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0)
    return {};
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

/// Starts this binary with `args`; `stdin_fd` / `stdout_fd` (>= 0) become the
/// child's standard input / output. Returns the child's pid, or -1 with a
/// message on stderr.
[[nodiscard]] inline pid_t spawn_self(const std::vector<std::string>& args, int stdin_fd = -1,
                                      int stdout_fd = -1) {
  const auto exe = self_path();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO);
  if (stdout_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::fprintf(stderr, "posix_spawn %s: %s\n", exe.c_str(), std::strerror(rc));
    return -1;
  }
  return pid;
}

/// Waits for `pid`; true when it exited with status 0.
[[nodiscard]] inline bool wait_ok(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// Best (largest) and median of a sample of rates.
struct summary {
  double best = 0;
  double median = 0;
};

[[nodiscard]] inline summary summarize(std::vector<double> xs) {
  if (xs.empty())
    return {};
  std::sort(xs.begin(), xs.end());
  const auto n = xs.size();
  const double med = n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
  return {xs.back(), med};
}

} // namespace atrain::bench
