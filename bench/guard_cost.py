#!/usr/bin/env python3
"""The cost of the BASP guard of `atrain node` (hosts without TLS) on whole
runs: the same spec across 2 `atrain node` hosts on 127.0.0.1 and a driver,
with the guard (the default) and with `--no-guard` (CAF's port public),
alternating within each repetition. a9a quickstart task of
config/algorithms/NAME.textproto on the REAL clock, without
cost.real_min_seconds, so that the network, not the gradients, sets the pace;
a fixed wall time. Gradients per second = gradients_total / wall_seconds;
bytes/s = bytes_sent / wall_seconds (every node's sends, as the report counts them).
With --time-to-target: the multi-host test's setting instead
(cost.real_min_seconds=0.002, the spec's target, 30 s budget), and the
seconds to the target (runs that miss it are listed as such).

usage: python3 bench/guard_cost.py build/atrain [--reps 3] [--seconds 8]
       [--algorithms allreduce,rfast] [--time-to-target]"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "deploy"))
from hosts import Cluster, report  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("atrain")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--seconds", type=float, default=8)
ap.add_argument("--algorithms", default="allreduce,rfast")
ap.add_argument("--time-to-target", action="store_true")
args = ap.parse_args()

modes = {"guard": (), "no guard": ("--no-guard",)}
clusters = {m: Cluster(args.atrain, 2, flags=flags) for m, flags in modes.items()}
rates = {}  # (algorithm, mode) -> [(gradients/s, MB/s)]
try:
    for a in args.algorithms.split(","):
        for rep in range(1, args.reps + 1):
            for m, c in clusters.items():
                out = os.path.join(c.dir, "%s_%d" % (a, rep))
                sets = (["clock=REAL", "cost.real_min_seconds=0.002", "stop.time_seconds=30"]
                        if args.time_to_target else
                        ["clock=REAL", "stop.time_seconds=%g" % args.seconds,
                         "stop.target_accuracy=0.99"])
                r = c.run("config/algorithms/%s.textproto" % a, sets + ["seed=%d" % rep], out)
                rep_json = report(out) if os.path.exists(out + "/report.json") else {}
                wall = rep_json.get("wall_seconds", 0)
                if r.returncode != 0 or wall <= 0:
                    sys.exit("%s %s rep %d failed: %s" % (a, m, rep, r.stdout[-300:] + r.stderr[-300:]))
                if args.time_to_target:
                    t = rep_json.get("time_to_target")
                    rates.setdefault((a, m), []).append(t)
                    print("%-9s %-8s rep %d: %s" % (a, m, rep, "%.2f s" % t if t else "missed"),
                          file=sys.stderr, flush=True)
                    continue
                g = int(rep_json.get("gradients_total", 0)) / wall
                b = int(rep_json.get("bytes_sent", 0)) / wall / 1e6
                rates.setdefault((a, m), []).append((g, b))
                print("%-9s %-8s rep %d: %.0f gradients/s, %.1f MB/s" % (a, m, rep, g, b),
                      file=sys.stderr, flush=True)
finally:
    for c in clusters.values():
        c.stop()

if args.time_to_target:
    print("| algorithm | guard: s to target | no guard: s to target | no guard / guard (medians) |")
    print("|---|---|---|---|")
    for a in args.algorithms.split(","):
        g, n = rates[(a, "guard")], rates[(a, "no guard")]
        show = lambda xs: ", ".join("%.1f" % x if x else "missed" for x in xs)  # noqa: E731
        med = lambda xs: statistics.median(x if x else float("inf") for x in xs)  # noqa: E731
        print("| %s | %.1f [%s] | %.1f [%s] | %.2f |" % (a, med(g), show(g), med(n), show(n),
                                                          med(n) / med(g)))
    sys.exit(0)
print("| algorithm | guard: gradients/s (MB/s) | no guard: gradients/s (MB/s) | guard / no guard |")
print("|---|---|---|---|")
for a in args.algorithms.split(","):
    g = [x for x, _ in rates[(a, "guard")]]
    n = [x for x, _ in rates[(a, "no guard")]]
    gb = statistics.median(b for _, b in rates[(a, "guard")])
    nb = statistics.median(b for _, b in rates[(a, "no guard")])
    print("| %s | %.0f (%.1f) [%s] | %.0f (%.1f) [%s] | %.2f |" % (
        a, statistics.median(g), gb, ", ".join("%.0f" % x for x in g), statistics.median(n), nb,
        ", ".join("%.0f" % x for x in n), statistics.median(g) / statistics.median(n)))
