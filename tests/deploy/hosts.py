"""Shared helpers of the multi-host tests: start `atrain node` hosts on
127.0.0.1 (port 0: each prints the port it got), run the driver, read reports."""
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Host:
    def __init__(self, atrain, workdir, name, extra):
        self.log = open(os.path.join(workdir, name + ".log"), "w+")
        self.proc = subprocess.Popen([atrain, "node", "--listen", "127.0.0.1:0"] + extra,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
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
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()


class Cluster:
    """Hosts sharing a secret file in a temporary directory (`more`: further
    `atrain node` flags)."""

    def __init__(self, atrain, hosts, extra=None, more=()):
        self.atrain = atrain
        self.dir = tempfile.mkdtemp(prefix="atrain_hosts_")
        self.secret = os.path.join(self.dir, "secret")
        with open(self.secret, "w") as f:
            f.write(secrets.token_hex(24) + "\n")
        os.chmod(self.secret, 0o600)
        args = (extra if extra is not None else ["--secret-file", self.secret]) + list(more)
        self.hosts = [Host(atrain, self.dir, "host%d" % i, args) for i in range(hosts)]

    def addresses(self):
        return ",".join(h.address for h in self.hosts)

    def run(self, spec, sets, out, extra=None, timeout=120):
        cmd = [self.atrain, "run", spec, "--no-progress", "--out", out, "--hosts",
               self.addresses()]
        cmd += extra if extra is not None else ["--secret-file", self.secret]
        for s in sets:
            cmd += ["--set", s]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)

    def stop(self):
        for h in self.hosts:
            h.stop()


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


failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def finish(name):
    if failures:
        sys.exit("%s: %d check(s) failed:\n  %s" % (name, len(failures), "\n  ".join(failures)))
    print(name + " OK")
