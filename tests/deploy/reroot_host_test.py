#!/usr/bin/env python3
"""R-FAST re-rooting across processes: a binary tree pair over 8 nodes on 3
hosts (node i on host i mod 3); host 0, which holds the root (node 0) and
nodes 3 and 6, is killed with SIGKILL mid-run. The driver's supervisor sees
the host lost, finds no common root among the survivors {1, 2, 4, 5, 7} and
re-roots at node 1 (the lost root's first surviving child): a tree pair over
the 5 survivors, tracking epoch 1 (docs/RELIABILITY.md "Re-rooting"). The run
must go on training under the new root to its time budget.

usage: reroot_host_test.py ATRAIN"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hosts import Cluster, check, finish, report  # noqa: E402

atrain = sys.argv[1]
c = Cluster(atrain, 3)
try:
    out = os.path.join(c.dir, "root_host_lost")
    cmd = [atrain, "run", "config/faults/root_lost.textproto", "--no-progress", "--out", out,
           "--hosts", c.addresses(), "--secret-file", c.secret]
    # No injected crash: the host's death is the fault. a9a's gradients take
    # ~20 us: cost.real_min_seconds stands in for a heavier model.
    for s in ["faults={}", "clock=REAL", "cost.real_min_seconds=0.002", "stop.time_seconds=8",
              "stop.stop_at_target=false"]:
        cmd += ["--set", s]
    driver = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Kill once every host has spawned its nodes (data loading takes longer on
    # a loaded machine; a host killed before answering would leave the driver
    # waiting for its spawn reply instead of testing the re-rooting).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all("spawned nodes" in h.text() for h in c.hosts):
        time.sleep(0.1)
    time.sleep(1.5)  # training under the first root
    c.hosts[0].proc.send_signal(signal.SIGKILL)
    try:
        stdout, stderr = driver.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        driver.kill()
        stdout, stderr = driver.communicate()
    rep = report(out) if os.path.exists(os.path.join(out, "report.json")) else {}
    lost = sorted((f for f in rep.get("faults", []) if f.get("kind") == "host_lost"),
                  key=lambda f: f["what"])
    check(driver.returncode == 0 and [f["what"] for f in lost] == ["node 0", "node 3", "node 6"],
          "host 0 killed: nodes 0, 3 and 6 reported lost (%s)%s" % (
              [f["what"] for f in lost], "" if driver.returncode == 0 else
              ": " + stdout[-400:] + stderr[-400:]))
    effect = lost[0]["effect"] if lost else ""
    check("re-rooted at node 1 (tracking epoch 1): tree pair of arity 2 over the 5 survivors"
          in effect, "the supervisor re-rooted: " + effect[effect.find("; ") + 2:][:260])
    check(rep.get("evaluated_model") ==
          "common root (node 1), since the re-rooting of tracking epoch 1",
          "evaluated model: %s" % rep.get("evaluated_model"))
    t_lost = lost[0]["from_seconds"] if lost else 1e9
    after = [m for m in rep.get("metrics", []) if m["time_seconds"] > t_lost + 0.5]
    more = int(after[-1]["gradients"]) - int(after[0]["gradients"]) if len(after) > 1 else 0
    best = max((m["test_accuracy"] for m in after), default=0)
    check(rep.get("stop_reason") == "time budget spent" and more > 1000 and best > 0.83,
          "the survivors trained on under node 1 (%d more gradients, best accuracy %.3f, %s)" % (
              more, best, rep.get("stop_reason")))
    check(all(h.alive() for h in c.hosts[1:]), "the other hosts keep running")
finally:
    c.stop()

finish("reroot_host_test")
