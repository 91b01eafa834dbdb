#!/usr/bin/env python3
"""The 4-process all-reduce stall hunt (issue 20): many short MNIST
Ring-AllReduce runs with every node in its own `atrain node` process on
127.0.0.1, looking for a run whose ring stops (its gradients stop growing while
the budget still runs) or whose driver hangs past its budget.

The one stall ever seen was the first run on freshly started hosts, so by
default every other run starts a fresh cluster; the rest reuse the previous
hosts (a host serving its second, third, ... job). Seeds vary per run; every
third run has a 4x straggler on node 3.

  python3 bench/stall_stress.py build/atrain [--runs 100] [--budget 4]
      [--fresh-every 2] [--algorithm allreduce] [--out build/stall_stress]

A run counts as stalled when its report's gradients grew by less than one
gradient per node over the second half of the budget (a ring that moves does
hundreds), or the driver did not exit within budget + 60 s (killed), or it
failed. Each stalled run's driver and host logs are kept under --out; the
script prints one line per run and a summary, and exits 1 on any stall."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "deploy"))
from hosts import Cluster  # noqa: E402


def sets_for(args, run):
    s = ["clock=REAL", "seed=%d" % (run + 1), "nodes=4", "link.latency_seconds=0",
         "stop.stop_at_target=false", "stop.time_seconds=%g" % args.budget,
         "eval.period_seconds=%g" % (args.budget / 8), "dataset.max_train_samples=20000"]
    if args.algorithm == "allreduce":
        s.append("algorithm.allreduce.step_size=0.5")
    if run % 3 == 2:
        s.append("faults.straggle=[{node: 3 factor: 4 from_seconds: 0}]")
    return s


def verdict(args, rep, rc, seconds):
    """(stalled?, what) from one run's report."""
    if rc != 0 or not rep:
        return True, "failed (exit %s)" % rc
    if seconds > args.budget + 60:
        return True, "driver ran %.0f s" % seconds
    half = [m for m in rep["metrics"] if m["time_seconds"] >= args.budget / 2]
    if not half:
        return True, "no evaluation in the second half"
    grew = int(rep["gradients_total"]) - int(half[0]["gradients"])
    if grew < 4:
        return True, "gradients stuck at %d (grew %d in the second half)" % (
            int(rep["gradients_total"]), grew)
    return False, "%d gradients, accuracy %.3f" % (int(rep["gradients_total"]),
                                                    rep["final"]["test_accuracy"])


def one_run(args, cluster, run):
    out = os.path.join(args.out, "run%03d" % run)
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.monotonic()
    cmd = cluster.command(args.spec, sets_for(args, run), out)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.budget + 60)
        rc, log = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        rc, log = "timeout", str(e.stdout or "") + str(e.stderr or "")
    seconds = time.monotonic() - t0
    path = os.path.join(out, "report.json")
    rep = json.load(open(path)) if os.path.exists(path) else {}
    stalled, what = verdict(args, rep, rc, seconds)
    if stalled:
        with open(out + ".driver.log", "w") as f:
            f.write(" ".join(cmd) + "\n" + log)
        for i, h in enumerate(cluster.hosts):
            with open(out + ".host%d.log" % i, "w") as f:
                f.write(h.text())
    return stalled, what, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("atrain")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--budget", type=float, default=4.0, help="stop.time_seconds per run")
    ap.add_argument("--fresh-every", type=int, default=2,
                    help="start a fresh cluster before every K-th run (1: always)")
    ap.add_argument("--algorithm", default="allreduce", choices=("allreduce", "rfast"),
                    help="allreduce (step 0.5, as bench/realtime_claim1.py) or the spec's rfast")
    ap.add_argument("--out", default="stall_stress")
    args = ap.parse_args()
    args.atrain = os.path.abspath(args.atrain)
    args.spec = os.path.join(ROOT, "config", "mnist_mlp.textproto")
    os.makedirs(args.out, exist_ok=True)
    stalls, cluster, began = [], None, time.monotonic()
    try:
        for run in range(args.runs):
            if cluster is None or run % args.fresh_every == 0:
                if cluster is not None:
                    cluster.stop()
                cluster = Cluster(args.atrain, 4)
                fresh = "fresh"
            else:
                fresh = "reused"
            stalled, what, seconds = one_run(args, cluster, run)
            if stalled:
                stalls.append(run)
            print("[%5.0f s] run %3d (%s hosts%s): %s%s in %.1f s" % (
                time.monotonic() - began, run, fresh, ", straggler" if run % 3 == 2 else "",
                "STALL: " if stalled else "", what, seconds), flush=True)
    finally:
        if cluster is not None:
            cluster.stop()
    print("%d runs of %s across 4 processes, %g s budget: %d stalled %s; %.0f s in all" % (
        args.runs, args.algorithm, args.budget, len(stalls), stalls, time.monotonic() - began))
    return 1 if stalls else 0


if __name__ == "__main__":
    sys.exit(main())
