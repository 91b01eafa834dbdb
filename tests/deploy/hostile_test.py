#!/usr/bin/env python3
"""Untrusted input to an `atrain node` host (issue 7): raw TCP garbage,
an unknown BASP operation, BASP headers announcing ~4 GiB and the limit + 1
(the BASP guard closes those connections before CAF allocates anything;
memory stays flat), a flood of connections, and a CAF client without
credentials (hostile_client: unknown message types, wrong secret, malformed
and invalid specs, bad node ids). After each the host is alive and still
serves a good run. The guard's refusals are logged and counted; the count is
checked against this file's own reading of the bytes it sent. Every socket
the host listens on is on loopback (CAF's BASP port and its
automatic-connection port are not public). Also: a host refuses to start
without a secret (no TLS) and refuses a non-loopback bind without TLS.

usage: hostile_test.py ATRAIN HOSTILE_CLIENT"""
import os
import random
import re
import socket
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hosts import Cluster, check, finish, listening_addresses  # noqa: E402

atrain, client = sys.argv[1], sys.argv[2]


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


LIMIT = 256 << 20  # atrain node's default --max-message-mb
KNOWN_OPS = 6      # BASP operations 0..6 (CAF 0.17.6)


def refused_by_guard(data):
    """Whether the BASP guard refuses this client-to-host byte stream: the
    first complete 32-byte header is not a client handshake (1), or some
    header names an unknown operation or announces more than LIMIT bytes
    (payloads are skipped)."""
    at = 0
    while at + 32 <= len(data):
        op, length = data[at], struct.unpack(">I", data[at + 4:at + 8])[0]
        if op > KNOWN_OPS or length > LIMIT or (at == 0 and op != 1):
            return True
        at += 32 + length
    return False


def closed_by_host(s):
    """Reads until the host closes the connection (True) or 10 s pass."""
    s.settimeout(10)
    try:
        while s.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def guard_count(log):
    """The guard's running count of refused connections, from its last log line."""
    counts = re.findall(r"\((\d+) refused so far\)", log)
    return int(counts[-1]) if counts else 0


c = Cluster(atrain, 1)
try:
    h = c.hosts[0]
    host, port = h.address.split(":")
    port = int(port)
    rnd = random.Random(7)
    before = rss_kb(h.proc.pid)
    listening = listening_addresses(h.proc.pid)
    check(len(listening) == 2 and all(a.startswith("127.0.0.1:") for a in listening)
          and h.address in listening,
          "the host listens on its --listen address and on CAF's BASP port, both on loopback "
          "(%s)" % ", ".join(listening))
    expected_refusals = 0
    # 1. garbage bytes
    for _ in range(20):
        s = socket.create_connection((host, port), timeout=5)
        data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 4096)))
        expected_refusals += refused_by_guard(data)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the guard closed it already
        s.close()
    # 2. a well-formed BASP header (32 bytes, big endian) with an unknown
    # operation and a small payload
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(struct.pack(">BBBBIQQQ", 0x42, 0, 0, 0, 16, 0, 0, 0) + b"\0" * 16)
    check(closed_by_host(s), "a header with an unknown BASP operation: the host closed the "
          "connection")
    s.close()
    expected_refusals += 1
    # 3. headers announcing ~4 GiB (before the handshake) and LIMIT + 1 (after
    # reading the host's server handshake), each on a connection the client
    # keeps open: CAF 0.17.6 would allocate the payload before reading it.
    for what, length, handshake_first in (("~4 GiB", 0xFFFFFFFF, False),
                                          ("the limit + 1", LIMIT + 1, True)):
        s = socket.create_connection((host, port), timeout=5)
        if handshake_first:
            hdr = b""
            while len(hdr) < 32:
                hdr += s.recv(32 - len(hdr))
            payload = struct.unpack(">I", hdr[4:8])[0]
            while payload > 0:
                payload -= len(s.recv(min(payload, 65536)))
        s.sendall(struct.pack(">BBBBIQQQ", 1, 0, 0, 0, length, 0, 0, 0))  # client handshake
        check(closed_by_host(s), "a BASP header announcing %s (%d bytes): the host closed the "
              "connection" % (what, length))
        s.close()
        expected_refusals += 1
    check(rss_kb(h.proc.pid) < before + 64_000,
          "after the oversized headers the host's memory stayed put (%d kB -> %d kB)" % (
              before, rss_kb(h.proc.pid)))
    log = h.text()
    check(guard_count(log) == expected_refusals and
          "announces a payload of 4294967295 bytes (limit 268435456)" in log and
          "announces a payload of 268435457 bytes" in log and "unknown BASP operation 66" in log,
          "the guard logged and counted %d refusals (expected %d: %d of the 20 garbage "
          "connections, the unknown operation, the two oversized headers)" % (
              guard_count(log), expected_refusals, expected_refusals - 3))
    check(re.search(r"closed the connection from 127\.0\.0\.1:\d+: BASP header 1 announces", log)
          is not None, "each refusal names the peer's address and the reason")
    # 4. many connections opened and closed, some left idle while we go on
    idle = [socket.create_connection((host, port), timeout=5) for _ in range(50)]
    for _ in range(200):
        socket.create_connection((host, port), timeout=5).close()
    check(h.alive(), "garbage, an unknown BASP operation and 250 connections: the host is alive")
    check(rss_kb(h.proc.pid) < before + 100_000,
          "its memory stayed put (%d kB -> %d kB)" % (before, rss_kb(h.proc.pid)))
    for s in idle:
        s.close()
    # 5. a CAF client without credentials (through the guard, as any peer)
    r = subprocess.run([client, h.address, c.secret, "config/quickstart.textproto"],
                       capture_output=True, text=True, timeout=120)
    print(r.stdout, end="")
    check(r.returncode == 0 and "hostile client OK" in r.stdout,
          "a CAF client without credentials is refused at every step" +
          ("" if r.returncode == 0 else ": " + r.stderr[-300:]))
    log = h.text()
    check("refused a spawn request" in log and "wrong shared secret" in log and
          "unexpected type" in log, "the host logged the refusals and the unknown messages")
    # 6. and it still serves a good run
    out = os.path.join(c.dir, "after")
    r = c.run("config/algorithms/allreduce.textproto",
              ["clock=REAL", "cost.real_min_seconds=0.002", "stop.time_seconds=30"], out)
    check(h.alive() and r.returncode == 0, "the host still serves a good run afterwards")
finally:
    c.stop()

# A host without a secret (and without TLS) does not start; nor does one
# asked to listen beyond loopback without TLS.
r = subprocess.run([atrain, "node", "--listen", "127.0.0.1:0"], capture_output=True, text=True,
                   timeout=20)
check(r.returncode == 2 and "needs --secret-file" in r.stderr,
      "no secret, no TLS: refused (" + r.stderr.strip()[:80] + ")")
tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "atrain_test_secret")
with open(tmp, "w") as f:
    f.write("0123456789abcdef0123\n")
r = subprocess.run([atrain, "node", "--listen", "0.0.0.0:0", "--secret-file", tmp],
                   capture_output=True, text=True, timeout=20)
check(r.returncode == 2 and "without TLS" in r.stderr,
      "0.0.0.0 without TLS: refused (" + r.stderr.strip()[:80] + ")")
os.remove(tmp)
finish("hostile_test")
