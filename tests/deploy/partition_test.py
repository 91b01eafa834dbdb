#!/usr/bin/env python3
"""Network partitions between the driver and a host (issue 7), with network
namespaces of the test's own making: two namespaces, each joined to the root
namespace by a veth pair on its own /30; one `atrain node` per namespace, the
driver in the root namespace (the hosts reach each other only through it: CAF
routes their messages via the driver). A cut is `ip link set <root-side veth>
down` (packets towards the namespace are refused locally, nothing arrives from
it: both TCP connections stall without being closed) and `up` restores it.

  (a) a 1.5 s cut during DASGD (below CAF's 4 s heartbeat timeout): TCP
      retransmits, the run reaches its target, no host_lost fault;
  (b) a 10 s cut during DASGD: the host is reported lost (kind host_lost,
      seen < 15 s after the cut), the other host's nodes go on to the target;
      once the link is back the cut-off host is alive and serves a new run;
  (c) a 6 s cut during all-reduce: the run ends naming the lost host.

Needs root and iproute2; otherwise (or when a namespace or veth cannot be
made) it skips with exit code 77, saying why. Everything it makes (namespaces,
veths, routes, processes) is removed at the end, failed or not.

usage: partition_test.py ATRAIN"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hosts import (PACED, Cluster, check, check_host_lost, check_serves_again,  # noqa: E402
                   check_went_on, finish)

SKIP = 77
atrain = sys.argv[1]
PREFIX = "atrain_part_"


def skip(why):
    print("partition_test SKIPPED: " + why, flush=True)
    sys.exit(SKIP)


def ip(*args, ns=None, check_rc=True):
    cmd = (["ip", "netns", "exec", ns, "ip"] if ns else ["ip"]) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    if check_rc and r.returncode != 0:
        raise RuntimeError("`%s` failed: %s" % (" ".join(cmd), r.stderr.strip()))
    return r


class Link:
    """Namespace `k` of the test run `pid` and its veth pair: 10.77.x.y+1/30 on
    the root side, .y+2 in the namespace (x.y from the pid, so that concurrent
    runs do not collide). An `unreachable` route for the /30 (higher metric)
    keeps packets towards a cut namespace off the default route."""

    def __init__(self, k, pid):
        self.ns = "%s%d_%d" % (PREFIX, pid, k)
        self.root_if = "atr%dr%d" % (pid % 10**7, k)  # interface names: <= 15 characters
        self.ns_if = "atr%dn%d" % (pid % 10**7, k)
        block = ((pid % 8192) * 2 + k) * 4
        self.subnet = "10.77.%d.%d/30" % (block // 256, block % 256)
        self.root_ip = "10.77.%d.%d" % (block // 256, block % 256 + 1)
        self.ns_ip = "10.77.%d.%d" % (block // 256, block % 256 + 2)

    def create(self):
        ip("netns", "add", self.ns)
        ip("link", "add", self.root_if, "type", "veth", "peer", "name", self.ns_if)
        ip("link", "set", self.ns_if, "netns", self.ns)
        ip("addr", "add", self.root_ip + "/30", "dev", self.root_if)
        ip("link", "set", self.root_if, "up")
        ip("route", "add", "unreachable", self.subnet, "metric", "4242")
        ip("addr", "add", self.ns_ip + "/30", "dev", self.ns_if, ns=self.ns)
        ip("link", "set", self.ns_if, "up", ns=self.ns)
        ip("link", "set", "lo", "up", ns=self.ns)

    def cut(self):
        ip("link", "set", self.root_if, "down")

    def restore(self):
        ip("link", "set", self.root_if, "up")

    def remove(self):
        """Whatever of it exists (the names are this run's own)."""
        ip("route", "del", "unreachable", self.subnet, "metric", "4242", check_rc=False)
        ip("link", "del", self.root_if, check_rc=False)  # and its peer
        ip("netns", "del", self.ns, check_rc=False)


# ---- preconditions: say exactly why when the test cannot run here
if os.geteuid() != 0:
    skip("needs root to make network namespaces and veth pairs (euid %d)" % os.geteuid())
if shutil.which("ip") is None:
    skip("`ip` (iproute2) is not on PATH")
# What an earlier run left when it was killed (SIGKILL, e.g. by ctest's
# timeout, skips the clean-up): its namespaces name its pid.
for name in re.findall(r"^%s(\d+)_(\d+)" % PREFIX, ip("netns", "list", check_rc=False).stdout,
                       re.M):
    if not os.path.exists("/proc/" + name[0]):
        Link(int(name[1]), int(name[0])).remove()

links = [Link(k, os.getpid()) for k in range(2)]
clusters = []


def clean_up():
    for c in clusters:
        for h in c.hosts:
            if h.alive():
                h.proc.send_signal(signal.SIGCONT)
        c.stop()
    clusters.clear()
    for link in links:
        link.remove()


atexit.register(clean_up)
# SIGTERM/SIGINT (ctest --timeout, ^C) raise, so that finally and atexit run.
for s in (signal.SIGTERM, signal.SIGINT):
    signal.signal(s, lambda sig, frame: sys.exit("partition_test: interrupted (signal %d)" % sig))

for link in links:
    try:
        link.create()
    except (RuntimeError, OSError) as e:
        clean_up()
        skip("cannot make the network namespaces: %s" % e)


def cluster():
    """One host per namespace, on its veth address (not loopback: --allow-remote)."""
    c = Cluster(atrain, len(links), flags=["--allow-remote"],
                places=[(l.ns_ip + ":0", ("ip", "netns", "exec", l.ns)) for l in links])
    clusters.append(c)
    return c


print("namespaces %s; links %s" % (", ".join(l.ns for l in links),
                                   ", ".join("%s/%s %s" % (l.root_if, l.ns_if, l.subnet)
                                             for l in links)), flush=True)

CUT_AT = 1.0  # run time of the cut (s): the run is going, far from its target
VICTIM = 1    # host 1 (namespace 1): nodes 1,3,5,7 of 8
VICTIM_NODES = [1, 3, 5, 7]


def cut_run(c, algo, budget, seconds, label):
    """`algo` with the victim's link cut at CUT_AT s of the run for `seconds`."""
    return c.run_hurt("config/algorithms/%s.textproto" % algo,
                      PACED + ["stop.time_seconds=%g" % budget], os.path.join(c.dir, label),
                      CUT_AT, links[VICTIM].cut, links[VICTIM].restore, seconds)


def evaluation_gap(rep):
    """The longest time between two evaluations, and where it began."""
    t = [m["time_seconds"] for m in rep.get("metrics", [])]
    return max(((b - a, a) for a, b in zip(t, t[1:])), default=(0, 0))


try:
    c = cluster()
    print("hosts %s" % c.addresses(), flush=True)

    # (a) A cut shorter than the heartbeat timeout: TCP retransmits, nothing is lost.
    d, cut = cut_run(c, "dasgd", 6, 1.5, "short_cut")
    rep = d.report
    gap, gap_from = evaluation_gap(rep)
    check(d.returncode == 0 and not rep.get("faults") and
          rep.get("stop_reason") == "time budget spent",
          "short cut (1.5 s): the DASGD run completes (%s), no fault reported (%s)" % (
              rep.get("stop_reason"), [f.get("kind") for f in rep.get("faults", [])]))
    cut_t = cut - d.t0  # the cut's run time (its best estimate: t0 from all records)
    check(gap >= 1.0 and cut_t - 0.5 <= gap_from <= cut_t + 1.5,
          "short cut: it was felt: no evaluation for %.2f s from t=%.2f s, during the cut "
          "(t=%.2f-%.2f s; the evaluator waits for the cut-off nodes)" % (
              gap, gap_from, cut_t, cut_t + 1.5))
    after = [m for m in rep.get("metrics", []) if m["time_seconds"] > gap_from + gap]
    best = max((m["test_accuracy"] for m in after), default=0)
    check("time_to_target" in rep and best >= rep.get("target_accuracy", 1),
          "short cut: all 8 nodes evaluated again after it, best accuracy %.4f >= target %.3f "
          "(first reached at t=%s s)" % (best, rep.get("target_accuracy", 1),
                                         rep.get("time_to_target")))

    # (b) A cut longer than the heartbeat timeout: the host is lost, the rest goes on.
    d, cut = cut_run(c, "dasgd", 8, 10.0, "long_cut")
    t_lost, _ = check_host_lost(d, cut, VICTIM_NODES, "long cut (10 s), DASGD")
    check_went_on(d.report, t_lost, "long cut, DASGD")
    check_serves_again(c, c.hosts[VICTIM], "long cut, link restored")

    # (c) The same with all-reduce, which cannot go on without the host's nodes.
    d, cut = cut_run(c, "allreduce", 8, 6.0, "long_cut_allreduce")
    err = d.report.get("error", "")
    m = re.search(r"host (\S+) lost at ([0-9.]+) s", err)
    seen = d.wall(float(m.group(2))) - cut if m else float("inf")
    check(d.returncode == 1 and m and m.group(1) == c.hosts[VICTIM].address and
          "cannot go on" in err and 0 < seen < 15,
          "long cut (6 s), all-reduce: the run ends %.2f s after the cut naming the host: %s" % (
              seen, err[:160]))
    check(all(h.alive() for h in c.hosts), "both hosts are still running")
finally:
    clean_up()
finish("partition_test")
