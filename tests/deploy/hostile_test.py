#!/usr/bin/env python3
"""Untrusted input to an `atrain node` host (issues 7 and 16). Before BASP
a peer must answer the guard's challenge with the shared secret: raw TCP
garbage, a wrong secret and a replayed response are refused there; a
connection that never answers (slowloris) is closed at the authentication
timeout; connections beyond the bound on unauthenticated ones are closed at
once; an authenticated connection that goes silent is closed at the idle
timeout; a fake host that cannot prove the secret is refused by the driver. After authenticating, an unknown BASP operation and BASP headers
announcing ~4 GiB and the limit + 1 are refused by the guard before CAF
allocates anything (memory stays flat). A plain CAF client that knows only
the port, and atrain's own connect with a wrong secret, cannot connect at
all (so cannot kill the spawner or reach any actor), also while a job runs
on the host: that job reaches its target as an unattacked one does. A peer
holding the secret gets bad spawn requests refused, and messages of types
atrain does not send, or to actors that are not its runs' (an exit to the
spawner, exits to every actor id of the host while another driver's job runs
there) refused by the guard's message filter before CAF (hostile_client
spawn; intrude()). After each the host is alive and still serves a good
run. Every refusal is logged once with peer, reason and a running count;
the count is checked against this file's own tally, and the counters at
exit. The host listens on its --listen address only (CAF itself listens
nowhere). Also: a host refuses to start without a secret (no TLS) and
refuses a non-loopback bind without TLS.

usage: hostile_test.py ATRAIN HOSTILE_CLIENT"""
import os
import random
import re
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hosts import (Cluster, auth_connect, check, finish, listening_addresses,  # noqa: E402
                   recv_exactly, report, secret_of)

atrain, client = sys.argv[1], sys.argv[2]


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


LIMIT = 256 << 20  # atrain node's default --max-message-mb
def closed_by_host(s, wait=10):
    """Reads until the host closes the connection (True) or `wait` s pass."""
    s.settimeout(wait)
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


def basp_ready(address, secret):
    """An authenticated raw connection, the guard's proof and CAF's server
    handshake (header and payload) read: the next bytes are the client's."""
    s, _, proof, want = auth_connect(address, secret)
    hdr = recv_exactly(s, 32)
    payload = struct.unpack(">I", hdr[4:8])[0]
    recv_exactly(s, payload)
    return s, proof == want and hdr[0] == 0


def caf_atom(text):
    """CAF 0.17's atom_value of `text` (6 bits a character after 0xF)."""
    table = " 0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
    value = 0xF
    for ch in text:
        value = ((value << 6) | table.index(ch)) & 0xFFFFFFFFFFFFFFFF
    return value


def basp(op, payload, dest=0, data=0):
    """One BASP frame: the 32-byte header (big endian), then the payload."""
    return struct.pack(">BBBBIQQQ", op, 0, 0, 0, len(payload), data, 0, dest) + payload


def caf_message(types):
    """The start of a direct message's payload as CAF writes it: no
    forwarding stack, type number 0, the type names (then junk for a body:
    the guard judges the names and never lets it through)."""
    name = types.encode()
    assert len(name) < 128
    return b"\0" + struct.pack(">HB", 0, len(name)) + name + b"\0" * 48


def intrude(address, secret, dest):
    """Authenticated as a driver is, under a node id of its own: an exit
    message to actor `dest`, then a message of a type atrain never sends (so
    the host closes every connection, at the first message or the second)."""
    s, ok = basp_ready(address, secret)
    node = struct.pack(">QI", caf_atom("default"), 4242) + os.urandom(20)
    async_id = 0x1000000000000000
    s.sendall(basp(1, node) + basp(2, caf_message("@<>+@exit"), dest, async_id) +
              basp(2, caf_message("@<>+bogus_type"), 1, async_id))
    closed = closed_by_host(s)
    s.close()
    return ok and closed


AUTH_MS, MAX_UNAUTH, IDLE = 1000, 16, 2
c = Cluster(atrain, 1, flags=["--auth-timeout-ms", str(AUTH_MS), "--max-unauthenticated",
                              str(MAX_UNAUTH), "--idle-timeout", str(IDLE)])
try:
    h = c.hosts[0]
    host, port = h.address.split(":")
    port = int(port)
    secret = secret_of(c.secret)
    rnd = random.Random(7)
    before = rss_kb(h.proc.pid)
    listening = listening_addresses(h.proc.pid)
    check(listening == [h.address], "the host listens on its --listen address only, CAF "
          "nowhere (%s)" % ", ".join(listening))
    expected = 0
    # 1. garbage bytes in place of the response (64..4096 bytes): refused
    for _ in range(20):
        s = socket.create_connection((host, port), timeout=5)
        data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(64, 4096)))
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the guard closed it already
        closed_by_host(s)
        s.close()
        expected += 1
    # 2. a wrong secret, 3. a replayed response (a good one, from another
    # connection: made for that connection's challenge)
    s, _, proof, _ = auth_connect(h.address, b"a guessed secret, 16+ chars")
    check(proof == b"" and closed_by_host(s), "a wrong secret: no proof, the host closed the "
          "connection")
    s.close()
    good, response, proof, want = auth_connect(h.address, secret)
    check(proof == want, "the right secret: the host's proof matches (mutual authentication)")
    s = socket.create_connection((host, port), timeout=5)
    recv_exactly(s, 40)
    s.sendall(response)
    check(recv_exactly(s, 32) == b"" and closed_by_host(s),
          "a replayed response: no proof, the host closed the connection")
    s.close()
    good.close()
    expected += 2
    # 4. after authenticating: a well-formed BASP header (32 bytes, big endian)
    # with an unknown operation and a small payload
    s, ok = basp_ready(h.address, secret)
    s.sendall(struct.pack(">BBBBIQQQ", 0x42, 0, 0, 0, 16, 0, 0, 0) + b"\0" * 16)
    check(ok and closed_by_host(s), "authenticated, a header with an unknown BASP operation: "
          "the host closed the connection")
    s.close()
    expected += 1
    # 5. headers announcing ~4 GiB and LIMIT + 1 (after the host's server
    # handshake), each on a connection the client keeps open: CAF 0.17.6 would
    # allocate the payload before reading it.
    for what, length in (("~4 GiB", 0xFFFFFFFF), ("the limit + 1", LIMIT + 1)):
        s, ok = basp_ready(h.address, secret)
        s.sendall(struct.pack(">BBBBIQQQ", 1, 0, 0, 0, length, 0, 0, 0))  # client handshake
        check(ok and closed_by_host(s), "authenticated, a BASP header announcing %s (%d bytes): "
              "the host closed the connection" % (what, length))
        s.close()
        expected += 1
    check(rss_kb(h.proc.pid) < before + 64_000,
          "after the oversized headers the host's memory stayed put (%d kB -> %d kB)" % (
              before, rss_kb(h.proc.pid)))
    # 6. slowloris: connections that say nothing, or half a response
    t0 = time.monotonic()
    quiet = [socket.create_connection((host, port), timeout=5) for _ in range(5)]
    quiet[0].sendall(b"\1" * 40)
    closed = all(closed_by_host(q, wait=AUTH_MS / 1000 + 3) for q in quiet)
    took = time.monotonic() - t0
    check(closed and took < AUTH_MS / 1000 + 1.0,
          "5 connections that do not authenticate are closed after %.2f s (timeout %.1f s)" % (
              took, AUTH_MS / 1000))
    for q in quiet:
        q.close()
    expected += 5
    # 7. a flood: MAX_UNAUTH + 20 connections held open at once; those beyond
    # the bound are closed at once, the rest at the timeout
    t0 = time.monotonic()
    flood = [socket.create_connection((host, port), timeout=5) for _ in range(MAX_UNAUTH + 20)]
    early = sum(closed_by_host(f, wait=0.3) for f in flood[MAX_UNAUTH:])
    check(early == 20, "a flood of %d unauthenticated connections: the %d beyond the bound (%d) "
          "closed at once (%.2f s)" % (len(flood), early, MAX_UNAUTH, time.monotonic() - t0))
    check(all(closed_by_host(f, wait=AUTH_MS / 1000 + 3) for f in flood[:MAX_UNAUTH]),
          "the %d within the bound closed at the authentication timeout" % MAX_UNAUTH)
    for f in flood:
        f.close()
    expected += len(flood)
    # 7b. authenticated, then silent: closed at the idle timeout (CAF peers
    # send heartbeats every 0.5 s: the runs below live with the same host)
    s, ok = basp_ready(h.address, secret)
    t0 = time.monotonic()
    closed = closed_by_host(s, wait=IDLE + 3)
    took = time.monotonic() - t0
    check(ok and closed and IDLE - 0.1 < took < IDLE + 1.0,
          "authenticated, then silent: closed after %.2f s (idle timeout %d s)" % (took, IDLE))
    s.close()
    expected += 1
    time.sleep(0.2)
    log = h.text()
    check(guard_count(log) == expected and "authenticated, then nothing for 2 s" in log and log.count("authentication failed") == 22 and
          log.count("no authentication within 1 s") == 5 + MAX_UNAUTH and
          log.count("too many connections waiting to authenticate (limit 16)") == 20 and
          "announces a payload of 4294967295 bytes (limit 268435456)" in log and
          "announces a payload of 268435457 bytes" in log and "unknown BASP operation 66" in log,
          "the guard logged and counted %d refusals (expected %d: 20 garbage, wrong secret, "
          "replay, 3 BASP headers, 5 slowloris, 20 of the flood at once, %d at the timeout, 1 "
          "idle)" % (
              guard_count(log), expected, MAX_UNAUTH))
    check(re.search(r"closed the connection from 127\.0\.0\.1:\d+: authentication failed", log)
          is not None, "each refusal names the peer's address and the reason")
    check(h.alive() and rss_kb(h.proc.pid) < before + 100_000,
          "the host is alive, its memory stayed put (%d kB -> %d kB)" % (
              before, rss_kb(h.proc.pid)))
    # 8. a CAF client that knows only the port, and atrain's connect with a
    # wrong secret: neither connects, so neither can kill the spawner
    wrong = os.path.join(c.dir, "wrong_secret")
    with open(wrong, "w") as f:
        f.write("not-the-hosts-secret-0123\n")
    r = subprocess.run([client, "attack", h.address, wrong], capture_output=True, text=True,
                       timeout=60)
    print(r.stdout, end="")
    check(r.returncode == 0 and "attack refused" in r.stdout,
          "a plain CAF client and a wrong secret cannot connect" +
          ("" if r.returncode == 0 else ": " + r.stdout[-300:] + r.stderr[-300:]))
    # 8b. mutual: a fake host that sends a challenge but cannot prove it holds
    # the secret; the driver refuses to go on (nothing it sends is BASP yet)
    fake = socket.socket()
    fake.bind(("127.0.0.1", 0))
    fake.listen(1)

    def fake_host():
        conn, _ = fake.accept()
        conn.sendall(b"atrain/1" + os.urandom(32))
        recv_exactly(conn, 64)
        conn.sendall(os.urandom(32))
        conn.settimeout(10)
        got = conn.recv(1)  # the driver closes instead of speaking BASP
        fake_saw.append(got)
        conn.close()

    fake_saw = []
    t = threading.Thread(target=fake_host, daemon=True)
    t.start()
    r = subprocess.run([atrain, "run", "config/algorithms/allreduce.textproto", "--no-progress",
                        "--out", os.path.join(c.dir, "fake"), "--hosts",
                        "127.0.0.1:%d" % fake.getsockname()[1], "--secret-file", c.secret,
                        "--set", "clock=REAL"], capture_output=True, text=True, timeout=60)
    t.join(timeout=15)
    fake.close()
    check(r.returncode == 1 and "proof does not match" in r.stderr and fake_saw == [b""],
          "a fake host without the secret: the driver refuses it before any BASP (%s)" %
          next((l for l in r.stderr.splitlines() if "cannot reach" in l), r.stderr[-200:]))
    # 9. a peer holding the secret (authenticated as a driver is)
    r = subprocess.run([client, "spawn", h.address, c.secret, "config/quickstart.textproto"],
                       capture_output=True, text=True, timeout=120)
    print(r.stdout, end="")
    check(r.returncode == 0 and "hostile client OK" in r.stdout,
          "an authenticated peer's bad spawn requests are refused at every step" +
          ("" if r.returncode == 0 else ": " + r.stderr[-300:]))
    log = h.text()
    check("refused a spawn request" in log and "wrong shared secret" in log and
          "(@<>+@str) to the spawner, which takes spawn requests only" in log and
          "(@<>+@atom+@u64) to the spawner, which takes spawn requests only" in log and
          "(@<>+@exit) to the spawner" in log,
          "the host logged the refused requests, and the guard the filtered messages")
    # 10. a job under attack: the attacks above while a run uses the host;
    # the run reaches its target like the unattacked one, the spawner lives
    sets = ["clock=REAL", "cost.real_min_seconds=0.002", "stop.time_seconds=30"]
    calm = c.run("config/algorithms/allreduce.textproto", sets, os.path.join(c.dir, "calm"))
    refused_before = guard_count(h.text())
    d = c.start("config/algorithms/allreduce.textproto", sets, os.path.join(c.dir, "attacked"))
    check(d.wait_started(), "the attacked run started")
    attacks = subprocess.run([client, "attack", h.address, wrong], capture_output=True,
                             text=True, timeout=60)
    s, _, _, _ = auth_connect(h.address, b"a guessed secret, 16+ chars")
    s.close()
    for _ in range(50):
        socket.create_connection((host, port), timeout=5).close()
    # an authenticated intruder (it holds the secret) sends an exit message
    # to every actor id of the host: the guard refuses each before CAF
    intruded_before = len(re.findall(r"@exit\) to actor \d+ of another peer's run", h.text()))
    closed = sum(intrude(h.address, secret, dest) for dest in range(1, 161))
    rep = d.wait(timeout=90)
    calm_rep = report(os.path.join(c.dir, "calm"))
    check(attacks.returncode == 0 and d.returncode == 0 and
          rep.get("stop_reason") == calm_rep.get("stop_reason") == "target accuracy reached",
          "attacked during the run (plain CAF, wrong secret x2, 50 connect+close, 160 exit "
          "messages from an authenticated intruder): the run "
          "ends as the unattacked one (%s; unattacked: %s; final accuracy %.4f vs %.4f)" % (
              rep.get("stop_reason"), calm_rep.get("stop_reason"),
              rep.get("final", {}).get("test_accuracy", 0),
              calm_rep.get("final", {}).get("test_accuracy", 0)))
    log = h.text()
    other_runs = len(re.findall(r"@exit\) to actor \d+ of another peer's run", log))
    check(closed == 160 and other_runs - intruded_before >= 8 and
          "@exit) to the spawner" in log and "which belongs to no run of this peer" in log and
          "'bogus_type', which atrain does not send" in log,
          "an authenticated intruder's exit messages to actor ids 1-160: all refused, %d of them "
          "to the running job's actors, one to the spawner, the rest to ids of no run; then a type atrain never sends" %
          (other_runs - intruded_before))
    check(guard_count(log) >= refused_before + 3 and "killed" not in log,
          "the host logged the attempts (%d more refusals, and the connect+close ones)" % (
              guard_count(log) - refused_before))
    # 11. and it still serves a good run
    out = os.path.join(c.dir, "after")
    r = c.run("config/algorithms/allreduce.textproto", sets, out)
    check(h.alive() and r.returncode == 0, "the host still serves a good run afterwards")
finally:
    c.stop()
m = re.search(r"BASP guard: accepted (\d+) connections, authenticated (\d+), refused (\d+)",
              c.hosts[0].text())
check(m is not None and int(m.group(3)) == guard_count(c.hosts[0].text()),
      "the host's line at exit dumps the guard's counters: " + (m.group(0) if m else "none"))

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
