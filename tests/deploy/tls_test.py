#!/usr/bin/env python3
"""Mutual TLS between hosts and driver (issue 7): with certificates of one
throwaway CA (apps/make_certs.sh) a run spans a TLS host; a driver holding a
certificate of another CA, or none at all (plain caf_io), cannot connect;
the host keeps running; the host listens on its --listen address only (no
plain automatic-connection port); the host's BASP guard terminates TLS itself (issue 16: the guard's timeouts
and limits hold for TLS hosts too; CAF listens on no port) and logs every
refused handshake and every connection closed before its handshake with the
peer's address and the reason, and counts them in its line at exit.
usage: tls_test.py ATRAIN"""
import os
import re
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from hosts import Driver, Host, check, finish, listening_addresses  # noqa: E402

atrain = sys.argv[1]
d = tempfile.mkdtemp(prefix="atrain_tls_")
certs = os.path.join(here, "..", "..", "apps", "make_certs.sh")
r = subprocess.run(["bash", certs, d], capture_output=True,
                   text=True, timeout=60)
if r.returncode != 0:
    sys.exit("make_certs.sh failed: " + r.stderr)


def tls(name, ca="ca"):
    return ["--tls-cert", os.path.join(d, name + ".pem"), "--tls-key",
            os.path.join(d, name + ".key"), "--tls-ca", os.path.join(d, ca + ".pem")]


REAL = ["--set", "clock=REAL", "--set", "cost.real_min_seconds=0.002", "--set",
        "stop.time_seconds=30"]
h = Host(atrain, d, "tls_host", tls("host"))
try:
    # CAF's automatic-connection port (plain BASP on every interface) is closed.
    listening = listening_addresses(h.proc.pid)
    check(listening == [h.address], "the TLS host listens on its --listen address only (%s)" %
          ", ".join(listening))
    def run(extra, out):
        return subprocess.run([atrain, "run", "config/algorithms/allreduce.textproto",
                               "--no-progress", "--out", os.path.join(d, out), "--hosts",
                               h.address + "," + h.address] + REAL + extra,
                              capture_output=True, text=True, timeout=120)

    r = run(tls("client"), "good")
    check(r.returncode == 0 and "target accuracy reached" in r.stdout,
          "a driver with a certificate of the CA runs across the TLS host" +
          ("" if r.returncode == 0 else ": " + r.stdout[-300:] + r.stderr[-300:]))
    r = run(tls("rogue", "rogue-ca"), "rogue")
    check(r.returncode == 1 and "cannot reach host" in r.stderr and
          "TLS handshake: certificate verify failed" in r.stderr,
          "a driver with a certificate of another CA is refused, saying why: " +
          r.stderr.strip()[:220])
    secret = os.path.join(d, "secret")
    with open(secret, "w") as f:
        f.write("0123456789abcdef0123\n")
    r = run(["--secret-file", secret], "plain")
    check(r.returncode == 1 and "cannot reach host" in r.stderr,
          "a driver without TLS is refused: " + r.stderr.strip()[:120])
    # a client certificate of another CA, the host's CA trusted: the host's check refuses it
    r = run(tls("rogue", "ca"), "rogue_cert")
    check(r.returncode == 1, "a driver with a certificate of another CA (trusting the host's) "
          "is refused")
    # The same refusals while a job runs on the host (issue 16: each of them
    # used to end the running job within 30 ms): bare connect + close,
    # plaintext bytes, a driver without a certificate (plain BASP), one of a
    # rogue CA. The job goes on to its target.
    job = Driver([atrain, "run", "config/algorithms/allreduce.textproto", "--no-progress", "--out",
                  os.path.join(d, "attacked"), "--hosts", h.address + "," + h.address] + REAL +
                 tls("client"), os.path.join(d, "attacked"))
    check(job.wait_started(), "a job started across the TLS host")
    hp = (h.address.rsplit(":", 1)[0], int(h.address.rsplit(":", 1)[1]))
    for _ in range(5):
        socket.create_connection(hp).close()
    junk = socket.create_connection(hp)
    junk.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(range(256)) * 4)
    junk.close()
    # An authenticated peer (the CA's client certificate) announcing a 2 GiB
    # BASP payload: the guard's framing check holds inside TLS too.
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_cert_chain(os.path.join(d, "client.pem"), os.path.join(d, "client.key"))
    ctx.load_verify_locations(os.path.join(d, "ca.pem"))
    with ctx.wrap_socket(socket.create_connection(hp)) as big:
        big.sendall(struct.pack("!BxxBI", 1, 0, 1 << 31) + bytes(24))
        try:  # CAF's server handshake, then the guard's close
            while big.recv(1 << 16):
                pass
        except (ssl.SSLError, OSError):
            pass
    refused_during = [run(["--secret-file", secret], "plain_during"),
                      run(tls("rogue", "rogue-ca"), "rogue_during")]
    rep = job.wait(timeout=90)
    check(job.returncode == 0 and rep.get("stop_reason") == "target accuracy reached" and
          all(x.returncode == 1 for x in refused_during),
          "5 bare connect+close, plaintext, a driver without a certificate and one of a rogue CA "
          "during the job: all refused, the job reached its target (%s, rc %s)" % (
              rep.get("stop_reason"), job.returncode))
    # a bare TCP connect + close (a port scan)
    bare = socket.create_connection(tuple(h.address.rsplit(":", 1)[:1]) +
                                    (int(h.address.rsplit(":", 1)[1]),))
    bare_addr = "%s:%d" % bare.getsockname()
    bare.close()
    time.sleep(0.5)
    check(h.alive(), "the TLS host keeps running")
    log = h.text()
    refusals = re.findall(r"BASP guard: closed the connection from (\S+): (.*) \((\d+) refused "
                          r"so far\)", log)
    gave_up = re.findall(r"BASP guard: (\S+) closed its connection before authenticating "
                         r"\((\d+) so far\)", log)
    check(any(re.match(r"127\.0\.0\.1:\d+$", a) and "certificate verify failed" in why and
              "unable to get local issuer certificate" in why for a, why, _ in refusals),
          "the host logged the client certificate it refused (address, reason): " +
          "; ".join(a + " " + why for a, why, _ in refusals if "verify" in why)[:160])
    check(any("alert unknown ca" in why.lower() for a, why, _ in refusals),
          "the host logged the driver that refused the host's certificate (alert unknown CA)")
    check(any("TLS handshake failed" in why and "http request" in why for a, why, _ in refusals),
          "the host logged the plaintext bytes it refused")
    check(any("announces" in why or "BASP" in why for a, why, _ in refusals),
          "the host refused the 2 GiB BASP header sent inside TLS: " +
          "; ".join(why for _, why, _ in refusals if "BASP" in why or "announces" in why)[:160])
    check(any(why.startswith("no authentication within") for a, why, _ in refusals),
          "the host closed the driver without a certificate after its handshake timeout")
    check(any(a == bare_addr for a, _ in gave_up),
          "the host logged the bare TCP connect+close from %s" % bare_addr)
    check([int(n) for _, _, n in refusals] == list(range(1, len(refusals) + 1)) and
          [int(n) for _, n in gave_up] == list(range(1, len(gave_up) + 1)) and
          len(refusals) + len(gave_up) >= 11,
          "every refusal counted (%d refused: rogue CA, plain, rogue cert, during the job "
          "plaintext, plain, rogue CA; %d closed before authenticating: 5 bare during the job, "
          "1 after)" % (len(refusals), len(gave_up)))
    r = run(["--tls-cert", os.path.join(d, "client.pem"), "--tls-key",
             os.path.join(d, "host.key"), "--tls-ca", os.path.join(d, "ca.pem")], "mismatch")
    # A deployment mistake: exit 2, like every bad argument, before any host is contacted.
    check(r.returncode == 2 and "host.key" in r.stderr and "mismatch" in r.stderr,
          "a key that does not match its certificate is named before connecting: " +
          r.stderr.strip()[:120])
finally:
    h.stop()
m = re.search(r"stopping; served (\d+) runs.*BASP guard: .* refused (\d+) \(.*TLS handshake "
              r"(\d+).*closed by the peer before authenticating (\d+)", h.text())
check(m is not None and m.group(1) == "4" and int(m.group(2)) == len(refusals) and
      int(m.group(3)) >= 4 and int(m.group(4)) == len(gave_up),
      "the host's line at exit counts the refusals and the failed TLS handshakes: " +
      (m.group(0) if m else h.text()[-200:]))
finish("tls_test")
