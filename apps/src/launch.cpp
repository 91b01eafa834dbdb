/// `atrain launch` (see launch.hpp). The nodes are this binary
/// (/proc/self/exe) in their own process group, so that a terminal's ^C
/// reaches the launcher only and the launcher stops them in order; each
/// also gets SIGTERM should the launcher die without cleaning up
/// (PR_SET_PDEATHSIG). SIGINT/SIGTERM go through one interrupt_guard for the
/// launcher's whole life: while the nodes start it ends the launch, during
/// the run it stops the run (the report is written), then the nodes stop.
#include "launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <thread>

#include "atrain/engine.hpp"
#include "commands.hpp"
#include "interrupt.hpp"

namespace atrain::cli {

namespace {

using clock_type = std::chrono::steady_clock;
constexpr auto start_bound = std::chrono::seconds{30};  // until a node prints its port
constexpr auto stop_bound = std::chrono::seconds{5};    // from SIGTERM to SIGKILL

struct child {
  pid_t pid = -1;
  int out = -1;  // its stdout
  std::string address;
  bool reaped = false;
};

[[nodiscard]] std::string status_text(int status) {
  if (WIFEXITED(status))
    return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

class launcher {
public:
  ~launcher() { stop(); }

  /// A 0600 file of 32 random bytes (hex) in $TMPDIR; false with `why`.
  [[nodiscard]] bool make_secret(std::string& why) {
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string{tmp && *tmp ? tmp : "/tmp"} + "/atrain-launch-XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0)
      return (why = path + ": cannot create the secret file"), false;
    secret_ = path;
    unsigned char raw[32];
    std::ifstream random{"/dev/urandom", std::ios::binary};
    random.read(reinterpret_cast<char*>(raw), sizeof raw);
    std::string hex;
    for (unsigned char c : raw) {
      hex += "0123456789abcdef"[c >> 4];
      hex += "0123456789abcdef"[c & 15];
    }
    hex += '\n';
    const bool ok = random && fchmod(fd, 0600) == 0 &&
                    write(fd, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size());
    close(fd);
    if (!ok)
      why = path + ": cannot write the secret";
    return ok;
  }

  [[nodiscard]] const std::string& secret() const noexcept { return secret_; }

  /// Forks and execs `argv` with its stdout on a pipe; false with `why`.
  [[nodiscard]] bool spawn(const std::vector<std::string>& argv, std::string& why) {
    std::vector<char*> args;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
      return (why = "cannot make a pipe"), false;
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      return (why = "cannot fork"), false;
    }
    if (pid == 0) {  // the child: only async-signal-safe calls until exec
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent)
        _exit(1);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      dup2(fds[1], STDOUT_FILENO);
      execv("/proc/self/exe", args.data());
      _exit(127);
    }
    close(fds[1]);
    children_.push_back({pid, fds[0], {}, false});
    return true;
  }

  /// Reads every node's "listening on HOST:PORT" line within start_bound;
  /// false with `why` naming the first node that died or stayed silent, or
  /// once `interrupted()` says so (checked every poll_slice).
  template <class Interrupted>
  [[nodiscard]] bool read_ports(std::string& why, Interrupted interrupted) {
    constexpr int poll_slice_ms = 100;
    static const std::regex listening{R"(listening on (\S+:[0-9]+))"};
    const auto deadline = clock_type::now() + start_bound;
    for (std::size_t i = 0; i < children_.size(); ++i) {
      auto& c = children_[i];
      std::string line;
      while (line.find('\n') == std::string::npos) {
        const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        if (interrupted())
          return (why = "interrupted while the nodes started"), false;
        pollfd p{c.out, POLLIN, 0};
        if (left.count() <= 0) {
          why = name(i) + " printed no port within " + std::to_string(start_bound.count()) + " s";
          return false;
        }
        const int ready =
          poll(&p, 1, static_cast<int>(std::min<long>(left.count(), poll_slice_ms)));
        if (ready <= 0)
          continue;  // a slice passed (or EINTR): check the deadline and signals again
        char buf[256];
        const auto n = read(c.out, buf, sizeof buf);
        if (n <= 0) {
          int status = 0;
          waitpid(c.pid, &status, 0);
          c.reaped = true;
          why = name(i) + " ended (" + status_text(status) + ") before it printed its port";
          return false;
        }
        line.append(buf, static_cast<std::size_t>(n));
      }
      std::smatch m;
      if (!std::regex_search(line, m, listening)) {
        why = name(i) + " printed '" + line.substr(0, line.find('\n')) + "', not its port";
        return false;
      }
      c.address = m[1];
      std::cerr << "atrain launch: " << name(i) << " listening on " << c.address << std::endl;
    }
    return true;
  }

  [[nodiscard]] std::vector<std::string> addresses() const {
    std::vector<std::string> out;
    for (const auto& c : children_)
      out.push_back(c.address);
    return out;
  }

  /// SIGTERM to every node, SIGKILL to those alive after stop_bound, all
  /// reaped; the secret file removed. Idempotent.
  void stop() {
    for (std::size_t i = 0; i < children_.size(); ++i) {
      auto& c = children_[i];
      int status = 0;
      if (!c.reaped && waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.reaped = true;
        std::cerr << "atrain launch: " << name(i) << " had ended (" << status_text(status) << ")\n";
      }
      if (!c.reaped)
        kill(c.pid, SIGTERM);
    }
    const auto deadline = clock_type::now() + stop_bound;
    for (auto& c : children_) {
      while (!c.reaped && clock_type::now() < deadline) {
        if (waitpid(c.pid, nullptr, WNOHANG) == c.pid)
          c.reaped = true;
        else
          std::this_thread::sleep_for(std::chrono::milliseconds{20});
      }
      if (!c.reaped) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
        c.reaped = true;
      }
      if (c.out >= 0)
        close(c.out);
      c.out = -1;
    }
    if (!secret_.empty())
      unlink(secret_.c_str());
    secret_.clear();
  }

private:
  [[nodiscard]] std::string name(std::size_t i) const {
    return "node " + std::to_string(i) + " (pid " + std::to_string(children_[i].pid) + ")";
  }

  std::vector<child> children_;
  std::string secret_;
};

/// The `atrain node` command line of every child.
std::vector<std::string> node_argv(const launch_args& a, const std::string& secret) {
  std::vector<std::string> argv{"atrain",      "node",          "--listen",
                                "127.0.0.1:0", "--secret-file", secret};
  if (a.run.threads > 0)
    argv.insert(argv.end(), {"--threads", std::to_string(a.run.threads)});
  if (!a.run.caf.config_file.empty())
    argv.insert(argv.end(), {"--caf-config", a.run.caf.config_file});
  argv.insert(argv.end(), a.run.caf.args.begin(), a.run.caf.args.end());
  return argv;
}

}  // namespace

int launch(const launch_args& a) {
  try {  // refused before any process starts: a bad spec, a virtual clock
    if (load_spec(a.run.spec, a.run.overrides).spec.clock() != proto::REAL) {
      std::cerr << "atrain launch: " << a.run.spec
                << " runs on the virtual clock, in one process: launch needs clock: REAL "
                   "(--set clock=REAL)\n";
      return 2;
    }
  } catch (const spec_error& e) {
    std::cerr << "atrain launch: invalid spec:\n" << e.what() << "\n";
    return 2;
  }
  // Installed before any child exists; the children reset the handlers at
  // exec (and unblock every signal before it).
  auto control = std::make_shared<run_control>();
  interrupt_guard interrupt{control};
  launcher l;
  auto finish = [&](int status) {
    l.stop();
    interrupt.finish();
    return interrupt.exit_status(status);
  };
  std::string why;
  if (!l.make_secret(why)) {
    std::cerr << "atrain launch: " << why << "\n";
    return finish(1);
  }
  const auto argv = node_argv(a, l.secret());
  for (std::size_t i = 0; i < a.local; ++i)
    if (!l.spawn(argv, why)) {
      std::cerr << "atrain launch: node " << i << ": " << why << "\n";
      return finish(1);
    }
  if (!l.read_ports(why, [&] { return control->stop_requested(); })) {
    std::cerr << "atrain launch: " << why << "\n";
    return finish(1);
  }
  parsed p = a.run;
  p.hosts = l.addresses();
  p.secret_file = l.secret();
  return finish(run(p, control, interrupt));
}

}  // namespace atrain::cli
