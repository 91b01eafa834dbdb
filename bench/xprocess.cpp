/// Cross-process model exchange (issue 7): MB/s of 4 MB parameter messages
/// between two processes on loopback, atrain's wire format over CAF's
/// middleman against a plain TCP socket copying the same bytes, measured in
/// the same run between the same two processes.
///
/// One binary, two roles. The sender (default) spawns a copy of itself as the
/// receiver, which publishes a CAF actor and listens on a TCP socket, both on
/// 127.0.0.1. The sender pushes `messages` payloads of `floats` floats with
/// `k` in flight (one ack per payload, k = 1, 2, 4):
///   - CAF: an atrain::packet (float_blob, serialized as one raw block) sent
///     to the remote actor; the ack is a CAF message back;
///   - TCP: a 16-byte header (seq, length) then the same float bytes on a
///     blocking socket; the ack is 24 bytes back.
/// The receiver checksums every payload it gets against the pattern the seq
/// selects and reports the checksum in the ack, which the sender checks too:
/// nothing is counted that did not arrive intact.
///
/// With --guard a second receiver puts the BASP guard of `atrain node`
/// (actors/basp_guard.hpp) in front of its CAF port, and the sender pushes
/// the same packets through it too: the cost of the guard's extra hop.
/// With --tls DIR (certificates of apps/make_certs.sh) both CAF connections
/// are mutual TLS: the first receiver publishes through caf_openssl
/// directly, the second (with --guard) behind the guard terminating TLS, as
/// `atrain node` does; the sender speaks caf_openssl to both.
///
/// MB/s = messages x payload bytes / wall seconds (1 MB = 1e6 bytes).
///
///   bench_xprocess [--floats N] [--messages M] [--reps R] [--windows 1,2,4] [--guard]
///                  [--tls DIR]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "atrain/actors/basp_filter.hpp"
#include "atrain/actors/basp_guard.hpp"
#include "atrain/messages/wire.hpp"
#include "procs.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

/// Distinct payloads, so a stale or mixed-up buffer fails its checksum.
constexpr std::uint64_t n_patterns = 3;

struct options {
  std::size_t floats = std::size_t{1} << 20;
  std::uint64_t messages = 32;
  int reps = 5;
  std::vector<std::uint64_t> windows{1, 2, 4};
  bool guard = false;
  std::string tls;  // certificate directory; empty: no TLS
};

/// Payload `p`: small integers, exact in float, shifted per pattern.
std::vector<float> pattern(std::uint64_t p, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i * 31 + p * 7) % 8191);
  return v;
}

/// Position-weighted sum of the float bit patterns (a swap or a shift of
/// words changes it; vectorizes, so it costs about one read of the buffer).
[[nodiscard]] std::uint64_t checksum(const float* x, std::size_t n) {
  std::uint64_t s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t w;
    std::memcpy(&w, x + i, sizeof w);
    s += static_cast<std::uint64_t>(w) * ((i << 1) | 1);
  }
  return s;
}

/// The payloads and their checksums, built identically by both processes.
struct payloads {
  std::vector<atrain::float_blob> blobs;
  std::vector<std::uint64_t> sums;

  explicit payloads(std::size_t floats) {
    for (std::uint64_t p = 0; p < n_patterns; ++p) {
      blobs.emplace_back(pattern(p, floats));
      sums.push_back(checksum(blobs.back().ptr(), floats));
    }
  }
  [[nodiscard]] bool intact(std::uint64_t seq, std::size_t n, std::uint64_t sum) const {
    return n == blobs[0].size() && sum == sums[seq % n_patterns];
  }
};

/// `who` ("host" or "client") names the certificate in `tls` it presents.
void configure(caf::actor_system_config& cfg, const std::string& tls, const char* who) {
  atrain::register_message_types(cfg);
  cfg.load<caf::io::middleman>();
  if (!tls.empty()) {
    cfg.load<caf::openssl::manager>();
    cfg.openssl_certificate = tls + "/" + who + ".pem";
    cfg.openssl_key = tls + "/" + who + ".key";
    cfg.openssl_cafile = tls + "/ca.pem";
  }
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
}

// ---------------------------------------------------------------- sockets

/// Moves all `n` bytes through `io` (send or recv on one socket); false on an
/// error or the end of the stream.
template <class Ptr, class Io>
[[nodiscard]] bool transfer_all(Ptr p, std::size_t n, Io io) {
  while (n > 0) {
    const auto k = io(p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

[[nodiscard]] bool write_all(int fd, const void* data, std::size_t n) {
  return transfer_all(static_cast<const char*>(data), n, [fd](const char* p, std::size_t m) {
    return ::send(fd, p, m, MSG_NOSIGNAL);
  });
}

[[nodiscard]] bool read_all(int fd, void* data, std::size_t n) {
  return transfer_all(static_cast<char*>(data), n,
                      [fd](char* p, std::size_t m) { return ::recv(fd, p, m, 0); });
}

void no_delay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

struct tcp_header {
  std::uint64_t seq;
  std::uint64_t bytes;
};

struct tcp_ack {
  std::uint64_t seq;
  std::uint64_t sum;
  std::uint64_t ok;
};

// ---------------------------------------------------------------- receiver

caf::behavior caf_receiver(caf::event_based_actor* self, std::shared_ptr<const payloads> ref) {
  return {
    [=](atrain::deliver_atom, const atrain::packet& p) {
      const auto sum = checksum(p.f.ptr(), p.f.size());
      const bool ok = ref->intact(p.seq, p.f.size(), sum);
      self->send(caf::actor_cast<caf::actor>(self->current_sender()), atrain::ack_atom::value,
                 p.seq, sum, ok);
    },
  };
}

/// Serves TCP connections one after another until the listening socket closes.
void tcp_receiver(int listener, const payloads& ref) {
  std::vector<float> buf;
  for (;;) {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0)
      return;
    no_delay(fd);
    tcp_header h{};
    while (read_all(fd, &h, sizeof h)) {
      if (h.bytes % sizeof(float) != 0 || h.bytes > atrain::max_blob_elements * sizeof(float))
        break;
      buf.resize(h.bytes / sizeof(float));
      if (!read_all(fd, buf.data(), h.bytes))
        break;
      const auto sum = checksum(buf.data(), buf.size());
      const tcp_ack a{h.seq, sum, ref.intact(h.seq, buf.size(), sum) ? 1u : 0u};
      if (!write_all(fd, &a, sizeof a))
        break;
    }
    ::close(fd);
  }
}

/// What the sender authenticates with to a guarded receiver (both are this
/// program).
const std::string bench_secret = "bench_xprocess shared secret";

/// The receiver role: prints "ports CAF TCP" on stdout, serves until its
/// standard input closes (the sender closes it, or dies). With `guard` the
/// CAF port it prints is a BASP guard's in front of the published one.
int run_receiver(std::size_t floats, bool guard, const std::string& tls) {
  auto ref = std::make_shared<const payloads>(floats);
  caf::actor_system_config cfg;
  configure(cfg, tls, "host");
  caf::actor_system sys{cfg};
  auto rx = sys.spawn(caf_receiver, ref);
  auto caf_port = !tls.empty() && !guard ? caf::openssl::publish(rx, 0, "127.0.0.1", true)
                                         : sys.middleman().publish(rx, 0, "127.0.0.1", true);
  if (!caf_port) {
    std::fprintf(stderr, "receiver: publish: %s\n", sys.render(caf_port.error()).c_str());
    return 1;
  }
  atrain::basp_guard front;
  caf::actor doorkeeper;
  if (guard) {
    atrain::basp_guard_options g;
    if (tls.empty()) {
      g.secret = bench_secret;
    } else {
      auto ctx =
        atrain::make_guard_tls_context(tls + "/host.pem", tls + "/host.key", tls + "/ca.pem");
      if (!ctx) {
        std::fprintf(stderr, "receiver: TLS: %s\n", sys.render(ctx.error()).c_str());
        return 1;
      }
      g.tls = *ctx;
    }
    // As a host's spawner does: the guard's target hands out the receiver
    // and records it as the asking node's, so the filter lets packets to it
    // through (basp_filter.hpp).
    auto owners = std::make_shared<atrain::run_owners>();
    doorkeeper = sys.spawn(
      [owners, rx](caf::event_based_actor* self, int) -> caf::behavior {
        return {[=](atrain::stats_atom) {
          owners->add(self->current_sender()->node(), {rx.id()});
          return rx;
        }};
      },
      0);  // one unused argument (see tests/actors/basp_guard_test.cpp)
    g.target = doorkeeper;
    g.owners = owners;
    auto spawned = atrain::spawn_basp_guard(sys, g);
    if (!spawned) {
      std::fprintf(stderr, "receiver: guard: %s\n", sys.render(spawned.error()).c_str());
      return 1;
    }
    front = *spawned;
    caf_port = front.port;
  }
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = loopback(0);
  socklen_t len = sizeof addr;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 4) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stderr, "receiver: tcp listen: %s\n", std::strerror(errno));
    return 1;
  }
  std::thread tcp{[&] { tcp_receiver(listener, *ref); }};
  std::printf("ports %u %u\n", static_cast<unsigned>(*caf_port),
              static_cast<unsigned>(ntohs(addr.sin_port)));
  std::fflush(stdout);
  char c;
  while (::read(STDIN_FILENO, &c, 1) > 0) {
  }
  ::shutdown(listener, SHUT_RDWR);  // wakes the accept
  ::close(listener);
  tcp.join();
  caf::anon_send_exit(rx, caf::exit_reason::user_shutdown);
  if (front.actor) {
    caf::anon_send_exit(front.actor, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(doorkeeper, caf::exit_reason::user_shutdown);
  }
  return 0;
}

// ---------------------------------------------------------------- sender

/// Seconds to push `m` payloads with `k` in flight over CAF; < 0 on timeout.
double caf_push(caf::scoped_actor& self, const caf::actor& dst, const payloads& ref,
                std::uint64_t& seq, std::uint64_t m, std::uint64_t k, bool& ok) {
  std::uint64_t sent = 0;
  std::uint64_t acked = 0;
  auto push = [&] {
    atrain::packet p;
    p.seq = seq++;
    p.f = ref.blobs[p.seq % n_patterns];
    self->send(dst, atrain::deliver_atom::value, std::move(p));
    ++sent;
  };
  const auto t0 = clock_type::now();
  while (sent < std::min(k, m))
    push();
  while (acked < m) {
    bool timed_out = false;
    self->receive(
      [&](atrain::ack_atom, std::uint64_t s, std::uint64_t sum, bool good) {
        ok = ok && good && ref.intact(s, ref.blobs[0].size(), sum);
        ++acked;
        if (sent < m)
          push();
      },
      caf::after(std::chrono::seconds(30)) >> [&] { timed_out = true; });
    if (timed_out) {
      ok = false;
      return -1;
    }
  }
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Seconds to push `m` payloads with `k` in flight over the socket; < 0 on error.
double tcp_push(int fd, const payloads& ref, std::uint64_t& seq, std::uint64_t m, std::uint64_t k,
                bool& ok) {
  const std::uint64_t bytes = ref.blobs[0].bytes();
  std::uint64_t sent = 0;
  std::uint64_t acked = 0;
  auto push = [&] {
    const tcp_header h{seq++, bytes};
    ++sent;
    return write_all(fd, &h, sizeof h) && write_all(fd, ref.blobs[h.seq % n_patterns].ptr(), bytes);
  };
  const auto t0 = clock_type::now();
  while (sent < std::min(k, m))
    if (!push())
      return -1;
  while (acked < m) {
    tcp_ack a{};
    if (!read_all(fd, &a, sizeof a))
      return -1;
    ok = ok && a.ok == 1 && ref.intact(a.seq, ref.blobs[0].size(), a.sum);
    ++acked;
    if (sent < m && !push())
      return -1;
  }
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

using atrain::bench::child_process;

[[nodiscard]] bool start_receiver(const options& opt, bool guard, child_process& child) {
  std::vector<std::string> args{"--receiver", "--floats", std::to_string(opt.floats)};
  if (guard)
    args.push_back("--guard");
  if (!opt.tls.empty()) {
    args.push_back("--tls");
    args.push_back(opt.tls);
  }
  return atrain::bench::start_child(atrain::bench::self_path(), args, child);
}

/// A receiver process and the CAF actor it published.
struct receiver_link {
  child_process child;
  unsigned tcp_port = 0;
  caf::actor dst;
};

[[nodiscard]] bool connect_receiver(caf::actor_system& sys, const options& opt, bool guard,
                                    receiver_link& r) {
  if (!start_receiver(opt, guard, r.child))
    return false;
  unsigned caf_port = 0;
  if (std::fscanf(r.child.from_child, "ports %u %u", &caf_port, &r.tcp_port) != 2) {
    std::fprintf(stderr, "bench_xprocess: the receiver did not report its ports\n");
    return false;
  }
  const auto port = static_cast<std::uint16_t>(caf_port);
  auto dst = !opt.tls.empty() ? caf::openssl::remote_actor(sys, "127.0.0.1", port)
             : guard          ? atrain::connect_authenticated(sys, "127.0.0.1", port, bench_secret,
                                                              std::chrono::seconds{10})
                              : sys.middleman().remote_actor("127.0.0.1", port);
  if (!dst) {
    std::fprintf(stderr, "bench_xprocess: remote_actor%s: %s\n", guard ? " (guard)" : "",
                 sys.render(dst.error()).c_str());
    return false;
  }
  r.dst = *dst;
  if (guard) {  // the guard's target hands out the receiver (run_receiver)
    caf::scoped_actor self{sys};
    bool ok = false;
    self->request(*dst, std::chrono::seconds{10}, atrain::stats_atom::value)
      .receive([&](caf::actor& rx) { r.dst = std::move(rx), ok = true; },
               [&](caf::error& e) {
                 std::fprintf(stderr, "bench_xprocess: no receiver: %s\n", sys.render(e).c_str());
               });
    return ok;
  }
  return true;
}

[[nodiscard]] bool stop_receiver(receiver_link& r) {
  return atrain::bench::finish_child(r.child);
}

/// One row per window: medians and bests of `a` and `b`, and their ratios.
void print_table(const char* a_name, const char* b_name, const char* ratio_name,
                 const std::vector<std::uint64_t>& windows,
                 const std::vector<std::vector<double>>& a,
                 const std::vector<std::vector<double>>& b) {
  std::printf("%-7s %21s %21s %17s\n", "window", a_name, b_name, ratio_name);
  std::printf("%-7s %10s %10s %10s %10s %8s %8s\n", "", "median", "best", "median", "best",
              "median", "best");
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const auto x = atrain::bench::summarize(a[w]);
    const auto y = atrain::bench::summarize(b[w]);
    std::printf("k = %-3llu %10.0f %10.0f %10.0f %10.0f %8.2f %8.2f\n",
                static_cast<unsigned long long>(windows[w]), x.median, x.best, y.median, y.best,
                y.median > 0 ? x.median / y.median : 0, y.best > 0 ? x.best / y.best : 0);
  }
}

int run_sender(const options& opt) {
  const payloads ref{opt.floats};
  caf::actor_system_config cfg;
  configure(cfg, opt.tls, "client");
  caf::actor_system sys{cfg};
  // The guarded receiver is a process of its own: a second connection to
  // the same node would be folded into the first by CAF.
  receiver_link plain;
  receiver_link guarded;
  if (!connect_receiver(sys, opt, false, plain) ||
      (opt.guard && !connect_receiver(sys, opt, true, guarded)))
    return 1;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const auto addr = loopback(static_cast<std::uint16_t>(plain.tcp_port));
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    std::fprintf(stderr, "bench_xprocess: connect: %s\n", std::strerror(errno));
    return 1;
  }
  no_delay(fd);

  const double mb = static_cast<double>(opt.messages * ref.blobs[0].bytes()) / 1e6;
  bool ok = true;
  std::uint64_t seq = 0;
  std::vector<std::vector<double>> caf_rates(opt.windows.size());
  std::vector<std::vector<double>> guard_rates(opt.windows.size());
  std::vector<std::vector<double>> tcp_rates(opt.windows.size());
  {
    caf::scoped_actor self{sys};
    // Warm-up: connection set-up, first allocations, page faults.
    const bool warm = caf_push(self, plain.dst, ref, seq, 2, 1, ok) > 0 &&
                      (!opt.guard || caf_push(self, guarded.dst, ref, seq, 2, 1, ok) > 0) &&
                      tcp_push(fd, ref, seq, 2, 1, ok) > 0;
    for (int rep = 0; warm && rep < opt.reps; ++rep)
      for (std::size_t w = 0; w < opt.windows.size(); ++w) {
        const auto k = opt.windows[w];
        const double c = caf_push(self, plain.dst, ref, seq, opt.messages, k, ok);
        const double g = opt.guard ? caf_push(self, guarded.dst, ref, seq, opt.messages, k, ok) : 1;
        const double t = tcp_push(fd, ref, seq, opt.messages, k, ok);
        if (c <= 0 || g <= 0 || t <= 0) {
          ok = false;
          break;
        }
        caf_rates[w].push_back(mb / c);
        guard_rates[w].push_back(mb / g);
        tcp_rates[w].push_back(mb / t);
      }
    ok = ok && warm;
  }
  ::close(fd);
  bool child_ok = stop_receiver(plain);
  if (opt.guard)
    child_ok = stop_receiver(guarded) && child_ok;

  std::printf("## cross-process push: %llu x %zu floats (%.2f MB) per run, %d repetitions, "
              "%d processes on 127.0.0.1, %u hardware threads\n",
              static_cast<unsigned long long>(opt.messages), opt.floats,
              static_cast<double>(ref.blobs[0].bytes()) / 1e6, opt.reps, opt.guard ? 3 : 2,
              std::thread::hardware_concurrency());
  const bool tls = !opt.tls.empty();
  print_table(tls ? "CAF TLS MB/s" : "CAF packet MB/s", "TCP socket MB/s",
              tls ? "TLS / TCP" : "CAF / TCP", opt.windows, caf_rates, tcp_rates);
  if (opt.guard)
    print_table(tls ? "TLS via guard MB/s" : "CAF via guard MB/s",
                tls ? "caf_openssl MB/s" : "CAF direct MB/s", "guard / direct", opt.windows,
                guard_rates, caf_rates);
  std::printf("checksums: %s; receiver exit: %s\n", ok ? "all intact" : "FAILED",
              child_ok ? "ok" : "FAILED");
  return ok && child_ok ? 0 : 1;
}

[[nodiscard]] bool parse_windows(const std::string& s, std::vector<std::uint64_t>& out) {
  out.clear();
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const auto comma = std::min(s.find(',', pos), s.size());
    const auto k = std::strtoull(s.substr(pos, comma - pos).c_str(), nullptr, 10);
    if (k == 0)
      return false;
    out.push_back(k);
    pos = comma + 1;
  }
  return !out.empty();
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  bool receiver = false;
  bool guard = false;
  bool bad = false;
  for (int i = 1; i < argc && !bad; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    auto next = [&] { return has_value ? std::strtoull(argv[++i], nullptr, 10) : 0ull; };
    if (a == "--receiver")
      receiver = true;
    else if (a == "--guard")
      guard = true;
    else if (a == "--tls")
      bad = !has_value || (opt.tls = argv[++i]).empty();
    else if (a == "--floats")
      opt.floats = next();
    else if (a == "--messages")
      opt.messages = next();
    else if (a == "--reps")
      opt.reps = static_cast<int>(next());
    else if (a == "--windows")
      bad = !has_value || !parse_windows(argv[++i], opt.windows);
    else
      bad = true;
  }
  if (bad || opt.floats == 0 || opt.floats > atrain::max_blob_elements || opt.messages == 0 ||
      opt.reps < 1) {
    std::fprintf(stderr, "usage: bench_xprocess [--floats N (1..2^30)] [--messages M >= 1] "
                         "[--reps R >= 1] [--windows K1,K2,...] [--guard] "
                         "[--tls CERT_DIR]\n");
    return 2;
  }
  opt.guard = guard;
  return receiver ? run_receiver(opt.floats, guard, opt.tls) : run_sender(opt);
}
