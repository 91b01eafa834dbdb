#pragma once
/// Helpers of the cross-process benchmarks (bench_xprocess, bench_gloo_procs,
/// bench_ring_procs): start copies of this binary in other roles (or a peer
/// bench), talk to them through pipes and collect their exit codes, plus the
/// summary statistics they report. Benchmark code only: blocking
/// calls are fine here.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
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

/// Starts `exe` with `args`; `stdin_fd` / `stdout_fd` (>= 0) become the
/// child's standard input / output. Returns the child's pid, or -1 with a
/// message on stderr.
[[nodiscard]] inline pid_t spawn_program(const std::string& exe,
                                         const std::vector<std::string>& args, int stdin_fd = -1,
                                         int stdout_fd = -1) {
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

/// Starts this binary with `args` (see spawn_program).
[[nodiscard]] inline pid_t spawn_self(const std::vector<std::string>& args, int stdin_fd = -1,
                                      int stdout_fd = -1) {
  return spawn_program(self_path(), args, stdin_fd, stdout_fd);
}

/// Waits for `pid`; true when it exited with status 0.
[[nodiscard]] inline bool wait_ok(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// A child whose standard input and output are pipes to this process.
struct child_process {
  pid_t pid = -1;
  int to_child = -1;                // its stdin: closing it tells the child to finish
  std::FILE* from_child = nullptr;  // its stdout
};

/// Starts `exe` with `args` as a child_process; false (with a message from
/// spawn_program) when it could not start.
[[nodiscard]] inline bool start_child(const std::string& exe, const std::vector<std::string>& args,
                                      child_process& child) {
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0)
    return false;
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return false;
  }
  child.pid = spawn_program(exe, args, in[0], out[1]);
  ::close(in[0]);
  ::close(out[1]);
  child.to_child = in[1];
  child.from_child = ::fdopen(out[0], "r");
  return child.pid > 0 && child.from_child != nullptr;
}

/// Closes the child's pipes (its stdin sees the end) and waits for it; true
/// when it exited with status 0.
[[nodiscard]] inline bool finish_child(child_process& child) {
  if (child.to_child >= 0)
    ::close(std::exchange(child.to_child, -1));
  if (child.from_child != nullptr)
    std::fclose(std::exchange(child.from_child, nullptr));
  return child.pid > 0 && wait_ok(child.pid);
}

/// Reads the command line as "--name value" pairs: `take(name, value)`
/// returns false for a name it does not know. False when an argument has no
/// value or `take` refused one.
template <class Take>
[[nodiscard]] bool parse_pairs(int argc, char** argv, Take take) {
  for (int i = 1; i < argc; i += 2)
    if (i + 1 >= argc || !take(std::string{argv[i]}, std::string{argv[i + 1]}))
      return false;
  return true;
}

/// CPU seconds this process (every thread) has used so far.
[[nodiscard]] inline double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// Best (largest), median and worst (smallest) of a sample of rates.
struct summary {
  double best = 0;
  double median = 0;
  double worst = 0;
};

[[nodiscard]] inline summary summarize(std::vector<double> xs) {
  if (xs.empty())
    return {};
  std::sort(xs.begin(), xs.end());
  const auto n = xs.size();
  const double med = n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
  return {xs.back(), med, xs.front()};
}

}  // namespace atrain::bench
