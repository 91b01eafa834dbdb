#!/usr/bin/env python3
"""Mutual TLS between hosts and driver (issue 7): with certificates of one
throwaway CA (make_certs.sh) a run spans a TLS host; a driver holding a
certificate of another CA, or none at all (plain caf_io), cannot connect;
the host keeps running; the host listens on its --listen address only (no
plain automatic-connection port). usage: tls_test.py ATRAIN"""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from hosts import Host, check, finish, listening_addresses  # noqa: E402

atrain = sys.argv[1]
d = tempfile.mkdtemp(prefix="atrain_tls_")
r = subprocess.run(["bash", os.path.join(here, "make_certs.sh"), d], capture_output=True,
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
    check(r.returncode == 1 and "cannot reach host" in r.stderr,
          "a driver with a certificate of another CA is refused: " + r.stderr.strip()[:120])
    secret = os.path.join(d, "secret")
    with open(secret, "w") as f:
        f.write("0123456789abcdef0123\n")
    r = run(["--secret-file", secret], "plain")
    check(r.returncode == 1 and "cannot reach host" in r.stderr,
          "a driver without TLS is refused: " + r.stderr.strip()[:120])
    check(h.alive(), "the TLS host keeps running")
    r = run(["--tls-cert", os.path.join(d, "client.pem"), "--tls-key",
             os.path.join(d, "host.key"), "--tls-ca", os.path.join(d, "ca.pem")], "mismatch")
    # A deployment mistake: exit 2, like every bad argument, before any host is contacted.
    check(r.returncode == 2 and "host.key" in r.stderr and "mismatch" in r.stderr,
          "a key that does not match its certificate is named before connecting: " +
          r.stderr.strip()[:120])
finally:
    h.stop()
finish("tls_test")
