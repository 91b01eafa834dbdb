#!/usr/bin/env python3
"""Claim 1 on the REAL clock across processes: R-FAST against the baselines
with every node in its own `atrain node` process on 127.0.0.1 (4 hosts,
8 nodes, node i on host i mod 4) and the driver in a fifth, with and without
a 4x straggler (node 3; cost.slowdown, a real delay). a9a quickstart task of
config/algorithms/NAME.textproto, cost.real_min_seconds=0.002.

usage: python3 bench/claim1_hosts.py build/atrain [--seeds 3] [--algorithms rfast,allreduce,...]"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "deploy"))
from hosts import Cluster, report  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("atrain")
ap.add_argument("--seeds", type=int, default=3)
ap.add_argument("--algorithms", default="rfast,allreduce,dpsgd,adpsgd,osgp")
args = ap.parse_args()

conditions = {"no straggler": [], "node 3 x4": ["cost.slowdown=[{node: 3 factor: 4}]"]}
c = Cluster(args.atrain, 4)
rows = []
try:
    for cond, extra in conditions.items():
        for a in args.algorithms.split(","):
            times = []
            for s in range(1, args.seeds + 1):
                out = os.path.join(c.dir, "%s_%s_%d" % (a, cond.replace(" ", "_"), s))
                sets = ["clock=REAL", "cost.real_min_seconds=0.002", "stop.time_seconds=30",
                        "seed=%d" % s] + extra
                r = c.run("config/algorithms/%s.textproto" % a, sets, out)
                rep = report(out) if os.path.exists(out + "/report.json") else {}
                t = rep.get("time_to_target")
                times.append(t)
                print("%-13s %-9s seed %d: %s" % (cond, a, s, "%.2f s" % t if t else
                                                  "not reached " + rep.get("error", "")[:80]),
                      file=sys.stderr, flush=True)
            rows.append((cond, a, times))
finally:
    c.stop()

print("| condition | algorithm | time to 0.845 (s), mean ± sd | reached | vs allreduce |")
print("|---|---|---|---|---|")
base = {}
for cond, a, times in rows:
    ok = [t for t in times if t]
    if a == "allreduce" and ok:
        base[cond] = statistics.mean(ok)
for cond, a, times in rows:
    ok = [t for t in times if t]
    m = statistics.mean(ok) if ok else float("nan")
    sd = statistics.stdev(ok) if len(ok) > 1 else 0.0
    ratio = base.get(cond, float("nan")) / m if ok else float("nan")
    print("| %s | %s | %.2f ± %.2f | %d/%d | %.2f× |" % (cond, a, m, sd, len(ok), len(times), ratio))
