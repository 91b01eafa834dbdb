#!/usr/bin/env python3
"""How well the calibrated virtual twin predicts real runs across processes
(issue 20): per algorithm, config/mnist_hosts/NAME.textproto as shipped (the
MNIST MLP, 4 nodes, one per `atrain node` process on 127.0.0.1, direct links):
  1. the REAL runs, seeds 1..S, each to 0.95 or its budget;
  2. `atrain calibrate` of the same spec across 4 fresh local processes;
  3. the twin (`atrain run TWIN`), seeds 1..S, on the virtual clock.
Prints per algorithm the median time to target and staleness mean of each,
and their ratio (twin / real; the issue asks 0.75-1.25 for the time, 0.7-1.3
for staleness).

  python3 bench/twin_fidelity.py build/atrain [--seeds 3] [--time-limit 60]
      [--algorithms allreduce,dpsgd,adpsgd,osgp,dasgd,rfast] [--probe-seconds 8]
      [--set K=V ...] [--out DIR] [--summarize]
--summarize prints the table again from the reports in --out, without runs.
The "interpolated" column is the time the accuracy crossed the target,
linear between the evaluations on either side (the reports' time to target
is the first evaluation at it, on the spec's 0.5 s grid)."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "deploy"))
sys.path.insert(0, HERE)
from hosts import Cluster, report  # noqa: E402



def spec(algorithm):
    return os.path.join(ROOT, "config", "mnist_hosts", algorithm + ".textproto")


def sets_for(args, seed):
    # The spec's links are direct (the twin gets the measured latency instead).
    return ["stop.time_seconds=%g" % args.time_limit, "seed=%d" % seed] + args.set


def figures(rep, budget):
    """(time to target or the budget when not reached, staleness mean,
    reached, the first evaluation's time: a real run's start-up, which the
    twin does not model)."""
    nodes = rep.get("per_node", [])
    stale = statistics.mean(n.get("staleness_mean", 0) for n in nodes) if nodes else 0.0
    t = rep.get("time_to_target")
    start = next((m["time_seconds"] for m in rep.get("metrics", []) if m["gradients"] > 0), 0.0)
    c = crossing(rep)
    return (t if t else budget, stale, bool(t), start, c if c is not None else budget)


def crossing(rep):
    """The time the test accuracy crossed the target, interpolated linearly
    between the evaluations on either side (the reports' time to target is
    the first evaluation at it: a 0.5 s grid here); None when never."""
    target = rep.get("target_accuracy", 0.95)
    rows = rep.get("metrics", [])
    for i, m in enumerate(rows):
        a = m.get("test_accuracy", 0.0)
        if a >= target:
            if i == 0:
                return m["time_seconds"]
            p = rows[i - 1]
            pa = p.get("test_accuracy", 0.0)
            return p["time_seconds"] + (target - pa) / (a - pa) * (m["time_seconds"] - p["time_seconds"])
    return None


def twin_figures(reps, start, budget):
    """figures() of the twin's runs, with its calibrated cost.start_seconds
    as the start-up (its first evaluations all see the initial gradients)."""
    return [x[:3] + (start,) + x[4:] for x in (figures(r, budget) for r in reps)]


def run_real(args, cluster, algorithm, seed):
    out = os.path.join(args.out, "%s_real_%d" % (algorithm, seed))
    cluster.run(spec(algorithm), sets_for(args, seed), out,
                timeout=args.time_limit + 120)
    return report(out) if os.path.exists(out + "/report.json") else {}


def run_twin(args, algorithm):
    twin = os.path.join(args.out, "%s_twin.textproto" % algorithm)
    cmd = [args.atrain, "calibrate", spec(algorithm), "--local", "4", "--seconds", str(args.probe_seconds),
           "--out", twin, "--no-progress"]
    for s in sets_for(args, 1):
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit("calibrate %s failed (exit %d): %s" % (algorithm, r.returncode, r.stderr[-500:]))
    with open(twin) as f:
        m = re.search(r"^\s*start_seconds: ([0-9.e+-]+)", f.read(), re.M)
    start = float(m.group(1)) if m else 0.0
    reps = []
    for seed in range(1, args.seeds + 1):
        out = os.path.join(args.out, "%s_twin_%d" % (algorithm, seed))
        r = subprocess.run([args.atrain, "run", twin, "--no-progress", "--out", out, "--set",
                            "seed=%d" % seed], capture_output=True, text=True, timeout=1800)
        reps.append(report(out) if r.returncode == 0 else {})
    return reps, start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("atrain")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--algorithms", default="allreduce,dpsgd,adpsgd,osgp,dasgd,rfast")
    ap.add_argument("--probe-seconds", type=int, default=8)
    ap.add_argument("--set", action="append", default=[], metavar="K=V")
    ap.add_argument("--out", default="twin_fidelity")
    ap.add_argument("--summarize", action="store_true",
                    help="print the table from the reports already in --out (no runs)")
    args = ap.parse_args()
    if args.summarize:
        return summarize(args)
    args.atrain = os.path.abspath(args.atrain)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for a in args.algorithms.split(","):
        c = Cluster(args.atrain, 4)
        try:
            real = [figures(run_real(args, c, a, s), args.time_limit)
                    for s in range(1, args.seeds + 1)]
        finally:
            c.stop()
        reps, start = run_twin(args, a)
        # The twin's start-up is its calibrated cost.start_seconds.
        twin = twin_figures(reps, start, args.time_limit)
        rows.append((a, real, twin))
        print("%-9s real %s | twin %s" % (a, real, twin), file=sys.stderr, flush=True)
    table(rows)


def table(rows):
    print("| algorithm | real: time to 0.95 (median, reached) | twin | twin / real "
          "| interpolated: real / twin (ratio) "
          "| real after its start-up | twin after its start-up | ratio | real staleness mean "
          "| twin | twin / real |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for a, real, twin in rows:
        tr, tt = (statistics.median(x[0] for x in v) for v in (real, twin))
        ir, it = (statistics.median(x[4] for x in v) for v in (real, twin))
        sr, st = (statistics.median(x[1] for x in v) for v in (real, twin))
        ts, tw = (statistics.median(x[0] - x[3] for x in v) for v in (real, twin))
        print("| %s | %.2f s (%d/%d) | %.2f s (%d/%d) | %.2f | %.2f / %.2f s (%.2f) | %.2f s "
              "| %.2f s | %.2f | %.2f | %.2f | %s |" % (
                  a, tr, sum(x[2] for x in real), len(real), tt, sum(x[2] for x in twin),
                  len(twin), tt / tr, ir, it, it / ir, ts, tw, tw / ts, sr, st,
                  "%.2f" % (st / sr) if sr > 0 else "–"))


def summarize(args):
    """The table again from an earlier invocation's run directories (--out)."""
    rows = []
    for a in args.algorithms.split(","):
        real = [figures(report(os.path.join(args.out, "%s_real_%d" % (a, s))), args.time_limit)
                for s in range(1, args.seeds + 1)]
        with open(os.path.join(args.out, "%s_twin.textproto" % a)) as f:
            m = re.search(r"^\s*start_seconds: ([0-9.e+-]+)", f.read(), re.M)
        start = float(m.group(1)) if m else 0.0
        reps = [report(os.path.join(args.out, "%s_twin_%d" % (a, s)))
                for s in range(1, args.seeds + 1)]
        rows.append((a, real, twin_figures(reps, start, args.time_limit)))
    table(rows)


if __name__ == "__main__":
    main()
