"""Shared helpers of the multi-host tests: start `atrain node` hosts (on
127.0.0.1 by default; port 0: each prints the port it got), run the driver in
the foreground or in the background (to hurt a host meanwhile), read reports."""
import hashlib
import hmac
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


# Wall-clock bounds of the checks that hold the run's own work (not the
# protocol's fixed timeouts) are multiplied by ATRAIN_TIME_SCALE (default 1;
# apps/setup.sh sanitize sets 3: an ASan build runs 2-3x slower).
TIME_SCALE = float(os.environ.get("ATRAIN_TIME_SCALE", "1"))

# A sanitizer's report in a child's output (a sanitized build): UBSan writes
# to stderr even where ASan writes to its log_path, and a host's stderr is a
# log file nobody reads unless a check fails, so every host log and driver
# output these helpers keep is scanned, and a report fails the test.
SANITIZER_MARKS = ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer")


def sanitizer_report(text, label):
    """Fails the test if `text` (a child's output) holds a sanitizer report."""
    at = min((i for i in (text.find(m) for m in SANITIZER_MARKS) if i >= 0), default=-1)
    if at >= 0:
        check(False, "%s: a sanitizer report:\n%s" % (label, text[max(0, at - 200):at + 3000]))


# Runs to hurt a host in: every gradient paced to >= 20 ms (8 nodes: ~400
# gradients/s), so that a9a's target is not reached before the hurt, and the
# budget (stop.time_seconds), not the target, ends the run.
PACED = ["clock=REAL", "cost.real_min_seconds=0.02", "stop.stop_at_target=false"]


class Host:
    """`atrain node` listening on `listen`; `prefix` wraps the command (e.g.
    `ip netns exec NS`, which execs it: proc.pid is the host itself)."""

    def __init__(self, atrain, workdir, name, extra, listen="127.0.0.1:0", prefix=()):
        self.log = open(os.path.join(workdir, name + ".log"), "w+")
        self.proc = subprocess.Popen(list(prefix) + [atrain, "node", "--listen", listen] + extra,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (\S+:\d+)", line)
        if not m:
            self.proc.kill()
            self.log.seek(0)
            sys.exit("host did not start: " + line + self.log.read())
        self.address = m.group(1)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10 * TIME_SCALE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        sanitizer_report(self.text(), "host log " + self.log.name)

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()


class Cluster:
    """Hosts sharing a secret file in a temporary directory; `places`: one
    (listen, prefix) per host (default: `hosts` hosts on 127.0.0.1); `flags`
    go to every host after the credentials."""

    def __init__(self, atrain, hosts, extra=None, places=None, flags=()):
        self.atrain = atrain
        self.dir = tempfile.mkdtemp(prefix="atrain_hosts_")
        self.secret = os.path.join(self.dir, "secret")
        with open(self.secret, "w") as f:
            f.write(secrets.token_hex(24) + "\n")
        os.chmod(self.secret, 0o600)
        args = (extra if extra is not None else ["--secret-file", self.secret]) + list(flags)
        self.drivers = []
        places = places or [("127.0.0.1:0", ())] * hosts
        self.hosts = [Host(atrain, self.dir, "host%d" % i, args, listen, prefix)
                      for i, (listen, prefix) in enumerate(places)]

    def addresses(self):
        return ",".join(h.address for h in self.hosts)

    def command(self, spec, sets, out, extra=None):
        cmd = [self.atrain, "run", spec, "--no-progress", "--out", out, "--hosts",
               self.addresses()]
        cmd += extra if extra is not None else ["--secret-file", self.secret]
        for s in sets:
            cmd += ["--set", s]
        return cmd

    def run(self, spec, sets, out, extra=None, timeout=120):
        r = subprocess.run(self.command(spec, sets, out, extra), capture_output=True,
                           text=True, timeout=timeout * TIME_SCALE)
        sanitizer_report(r.stdout + r.stderr, "driver " + out)
        return r

    def start(self, spec, sets, out):
        """The driver in the background: hurt a host while it runs."""
        self.drivers.append(Driver(self.command(spec, sets, out), out))
        return self.drivers[-1]

    def run_hurt(self, spec, sets, out, at, hurt, heal, hold, timeout=90):
        """Runs `spec`; `hurt()` at `at` s of the run's clock, `heal()` `hold` s
        later (None: once the driver has exited, or was killed after
        `timeout` s); waits for the driver. Returns it and when hurt()
        returned (time.monotonic())."""
        d = self.start(spec, sets, out)
        if not d.wait_started():
            d.wait()
            sys.exit("%s: the run did not start: %s" % (out, d.stdout[-500:] + d.stderr[-500:]))
        d.sleep_until(at)
        hurt()
        hurt_at = time.monotonic()
        if hold is None:
            d.wait(timeout=timeout)
            heal()
            healed_at = time.monotonic()
        else:
            time.sleep(hold)
            heal()
            healed_at = time.monotonic()
            d.wait(timeout=timeout)
        print("     (last evaluation %.2f s after the hurt; the driver exited %.2f s after it, "
              "%.2f s %s the heal)" % ((d.last_record or 0) - hurt_at, d.ended - hurt_at,
                                       abs(d.ended - healed_at),
                                       "after" if d.ended > healed_at else "before"), flush=True)
        return d, hurt_at

    def stop(self):
        for d in self.drivers:
            if d.proc.poll() is None:
                d.proc.kill()
        for h in self.hosts:
            h.stop()


class Driver:
    """`atrain run` in the background. Its progress records (stderr, one per
    evaluation, `REAL t=1.234/8s ...`) are timestamped on arrival: they
    anchor the run's clock to time.monotonic()."""

    PROGRESS = re.compile(rb"(?:REAL|VIRT) t=([0-9.]+)/")

    def __init__(self, cmd, out):
        self.out = out
        self.t0 = float("inf")  # time.monotonic() when the run's clock read 0 (upper bound)
        self.last_record = None  # time.monotonic() of the last progress record (the run's end)
        self.ended = None  # time.monotonic() when the driver closed stderr: its exit
        self.proc = subprocess.Popen(["--progress" if a == "--no-progress" else a for a in cmd],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.reader = threading.Thread(target=self._read_progress, daemon=True)
        self.reader.start()

    def _read_progress(self):
        buf, scanned = b"", 0
        while True:
            chunk = os.read(self.proc.stderr.fileno(), 65536)
            now = time.monotonic()
            if not chunk:
                self.ended = now
                break
            buf += chunk
            for m in self.PROGRESS.finditer(buf, scanned):
                # printed at run time t, read at `now` >= t0 + t
                self.t0 = min(self.t0, now - float(m.group(1)))
                self.last_record = now
                scanned = m.end()
        self.stderr = buf.decode(errors="replace")

    def wait_started(self, timeout=30):
        """Until the first progress record (data loaded, nodes spawned, training)."""
        end = time.monotonic() + timeout * TIME_SCALE
        while self.t0 == float("inf") and self.proc.poll() is None and time.monotonic() < end:
            time.sleep(0.02)
        return self.t0 != float("inf")

    def sleep_until(self, run_seconds):
        time.sleep(max(0.0, self.wall(run_seconds) - time.monotonic()))

    def wait(self, timeout=60):
        """Waits for the end (killing the driver after `timeout` s); returns
        the report ({} without one)."""
        try:
            self.proc.wait(timeout=timeout * TIME_SCALE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            print("     (the driver was still running after %g s: killed)" % (timeout * TIME_SCALE),
                  flush=True)
        self.reader.join()
        self.stdout = self.proc.stdout.read().decode(errors="replace")
        sanitizer_report(self.stdout + self.stderr, "driver " + self.out)
        path = os.path.join(self.out, "report.json")
        self.report = report(self.out) if os.path.exists(path) else {}
        return self.report

    @property
    def returncode(self):
        return self.proc.returncode

    def wall(self, run_seconds):
        """time.monotonic() at `run_seconds` of the run's clock, an upper bound
        (inf when no progress record came)."""
        return self.t0 + run_seconds


def host_lost(rep):
    """The report's host_lost faults."""
    return [f for f in rep.get("faults", []) if f.get("kind") == "host_lost"]


def check_host_lost(driver, hurt, nodes, label, bound=15.0):
    """Checks that exactly `nodes` were reported lost (kind host_lost), less
    than `bound` s after `hurt` (time.monotonic()); returns (run time of the
    loss, seconds after `hurt`), or (None, inf)."""
    lost = host_lost(driver.report)
    seen = driver.wall(lost[0]["from_seconds"]) - hurt if lost else float("inf")
    check(sorted(int(f["what"].split()[-1]) for f in lost) == sorted(nodes) and 0 < seen < bound,
          "%s: nodes %s reported lost (host_lost) %.2f s after (< %g s): %s" % (
              label, ",".join(f["what"].split()[-1] for f in lost) or "none", seen, bound,
              lost[0]["effect"][:110] if lost else driver.report.get("error", "")[:200]))
    return (lost[0]["from_seconds"], seen) if lost else (None, float("inf"))


def check_went_on(rep, t_lost, label):
    """After the loss at run time `t_lost` the others trained on, to the target."""
    after = [m for m in rep.get("metrics", []) if t_lost is not None and m["time_seconds"] > t_lost]
    more = int(after[-1]["gradients"]) - int(after[0]["gradients"]) if after else 0
    best = max((m["test_accuracy"] for m in after), default=0)
    check(rep.get("stop_reason") == "time budget spent" and more > 0 and
          best >= rep.get("target_accuracy", 1),
          "%s: the others trained on after the loss to the budget's end (%s): %d more gradients, "
          "best accuracy %.4f (target %.3f)" % (label, rep.get("stop_reason"), more, best,
                                               rep.get("target_accuracy", 1)))


def check_serves_again(cluster, host, label):
    """`host` is alive and spawns its share of a new (short) run."""
    before = host.text().count("spawned nodes")
    out = os.path.join(cluster.dir, "again_%d" % before)
    r = cluster.run("config/algorithms/dasgd.textproto",
                    ["clock=REAL", "cost.real_min_seconds=0.002", "stop.time_seconds=30"], out)
    check(host.alive() and r.returncode == 0 and host.text().count("spawned nodes") == before + 1,
          "%s: the host is alive and serves a new run (rc %d, host log: %s)" % (
              label, r.returncode, (host.text().strip().splitlines() or [""])[-1][:100]))


def report(out):
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def listening_addresses(pid):
    """The local addresses of the TCP sockets process `pid` listens on."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    out = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        with open("/proc/%d/net/%s" % (pid, table)) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                    addr, port = cols[1].split(":")
                    raw = bytes.fromhex(addr)
                    if width == 8:
                        ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
                    else:
                        ip = socket.inet_ntop(socket.AF_INET6, b"".join(
                            raw[i:i + 4][::-1] for i in range(0, 16, 4)))
                    out.append("%s:%d" % (ip, int(port, 16)))
    return out


def recv_exactly(s, n):
    """n bytes from socket s (fewer when the peer closes first)."""
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def secret_of(path):
    """The shared secret as `atrain` reads it (trailing whitespace removed)."""
    with open(path, "rb") as f:
        return f.read().rstrip()


def auth_mac(secret, client, host_nonce, peer_nonce):
    """The guard's HMAC-SHA-256 (actors/basp_guard.hpp, namespace auth)."""
    label = b"atrain/1 client" if client else b"atrain/1 server"
    return hmac.new(secret, label + host_nonce + peer_nonce, hashlib.sha256).digest()


def auth_connect(address, secret, timeout=5):
    """A raw connection to a secret-mode host that answers its challenge with
    `secret` (bytes). Returns (socket, response sent, proof received: b"" when
    the host closed instead, proof expected)."""
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=timeout)
    hello = recv_exactly(s, 40)
    if hello[:8] != b"atrain/1":
        raise RuntimeError("not an atrain challenge: %r" % hello[:8])
    mine = os.urandom(32)
    response = mine + auth_mac(secret, True, hello[8:], mine)
    s.sendall(response)
    return s, response, recv_exactly(s, 32), auth_mac(secret, False, hello[8:], mine)


failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def finish(name):
    if failures:
        sys.exit("%s: %d check(s) failed:\n  %s" % (name, len(failures), "\n  ".join(failures)))
    print(name + " OK")
