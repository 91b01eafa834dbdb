#!/usr/bin/env python3
"""Every algorithm on the REAL clock across processes: each node in its own
`atrain node` process on 127.0.0.1 and the driver in another, 3 seeds.

  --task a9a   (default) the a9a quickstart task of config/algorithms/NAME.textproto,
               8 nodes on 4 hosts (node i on host i mod 4), target 0.845,
               cost.real_min_seconds=0.002, with and without a 4x straggler
               (node 3, cost.slowdown), 30 s budget.
  --task mnist config/mnist_mlp.textproto (784-128-10 MLP), 4 nodes on 4 hosts,
               target 0.95, no pacing, the algorithm's MNIST step size (below;
               R-FAST: the spec's own γ = 0.1), 60 s budget, the spec's emulated link.
  --task shipped config/mnist_hosts/NAME.textproto as shipped (the same MLP, 4
               hosts, direct links, each algorithm's step in its spec): nothing
               set on the command line but the seed (and --time-limit, --set).

Prints a table per condition (time to target, reached, gradients, staleness,
wire packets) and each host's peak resident memory (VmHWM) over the
invocation.

usage: python3 bench/claim1_hosts.py build/atrain [--task a9a|mnist|shipped] [--seeds 3]
           [--target 0.97]
           [--algorithms rfast,allreduce,...] [--time-limit S] [--no-straggler] [--set K=V]..."""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "deploy"))
from hosts import Cluster, report  # noqa: E402
from memory_hosts import status_mb  # noqa: E402

# The MLP's step sizes of docs/RESULTS.md "MNIST on skewed splits" (virtual clock,
# 16 nodes); R-FAST keeps config/mnist_mlp.textproto's γ = 0.1: 0.3 and above
# diverge across processes with float32 packets (docs/PERFORMANCE.md "Folding"); the
# shipped config/mnist_hosts/rfast.textproto codes them in bf16 and steps 0.3.
MNIST_STEPS = {"allreduce": 1.0, "dpsgd": 1.0, "adpsgd": 0.5, "osgp": 0.5, "dasgd": 0.05,
               "sgp": 0.5, "local_sgd": 0.5, "async_ps": 0.05}
# AD-PSGD needs a bipartite graph: its shipped one (config/algorithms/adpsgd.textproto).
MNIST_EXTRA = {"adpsgd": ["topology.builder=BIPARTITE_EXPONENTIAL"]}
TASKS = {
    "a9a": {"spec": "config/algorithms/%s.textproto", "hosts": 4, "target": 0.845,
            "budget": 30, "sets": ["cost.real_min_seconds=0.002"],
            "straggle": ["cost.slowdown=[{node: 3 factor: 4}]"],
            "algorithms": "rfast,allreduce,dpsgd,adpsgd,osgp"},
    "mnist": {"spec": "config/mnist_mlp.textproto", "hosts": 4, "target": 0.95,
              "budget": 60, "sets": ["nodes=4", "eval.period_seconds=0.5"],
              "straggle": ["faults.straggle=[{node: 3 factor: 4 from_seconds: 0}]"],
              "algorithms": "rfast,allreduce,dpsgd,adpsgd,osgp,dasgd"},
    "shipped": {"spec": "config/mnist_hosts/%s.textproto", "hosts": 4, "target": 0.95,
                "budget": None, "sets": [],
                "straggle": ["faults.straggle=[{node: 3 factor: 4 from_seconds: 0}]"],
                "algorithms": "rfast,allreduce,dpsgd,adpsgd,osgp,dasgd,sgp,local_sgd,async_ps,"
                              "loscar"},
}


def sets_for(task, args, algorithm, seed):
    sets = ["clock=REAL", "seed=%d" % seed]
    if args.time_limit:  # the shipped specs' own budget otherwise
        sets.append("stop.time_seconds=%g" % args.time_limit)
    if args.target:
        sets.append("stop.target_accuracy=%g" % args.target)
    sets += task["sets"]
    if args.task == "mnist" and algorithm in MNIST_STEPS:
        sets.append("algorithm.%s.step_size=%g" % (algorithm, MNIST_STEPS[algorithm]))
    if args.task == "mnist":
        sets += MNIST_EXTRA.get(algorithm, [])
    return sets + args.set  # last: they win


def peak_rss_mb(cluster):
    """Each host's VmHWM (peak resident set) so far, MB."""
    return [status_mb(h.proc.pid, "VmHWM") for h in cluster.hosts]


def summary(rep):
    nodes = rep.get("per_node", [])
    stale = [n.get("staleness_mean", 0) for n in nodes]
    return {"time": rep.get("time_to_target"), "gradients": rep.get("gradients_total", 0),
            "final": rep.get("final", {}).get("test_accuracy", 0.0),
            "staleness": statistics.mean(stale) if stale else 0.0,
            "packets": rep.get("wire_packets", 0), "error": rep.get("error", "")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("atrain")
    ap.add_argument("--task", choices=sorted(TASKS), default="a9a")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--algorithms")
    ap.add_argument("--time-limit", type=float)
    ap.add_argument("--no-straggler", action="store_true", help="the no-straggler condition only")
    ap.add_argument("--target", type=float,
                    help="stop.target_accuracy (default: the task's), e.g. 0.97 with --time-limit 600")
    ap.add_argument("--set", action="append", default=[], metavar="K=V",
                    help="an extra override of every run (repeatable)")
    args = ap.parse_args()
    task = TASKS[args.task]
    args.algorithms = args.algorithms or task["algorithms"]
    args.time_limit = args.time_limit or task["budget"]
    conditions = {"no straggler": []}
    if not args.no_straggler:
        conditions["node 3 x4"] = task["straggle"]
    c = Cluster(args.atrain, task["hosts"])
    print("runs and host logs in " + c.dir, file=sys.stderr, flush=True)
    rows = []
    try:
        for cond, extra in conditions.items():
            for a in args.algorithms.split(","):
                runs = []
                for s in range(1, args.seeds + 1):
                    out = os.path.join(c.dir, "%s_%s_%d" % (a, cond.replace(" ", "_"), s))
                    spec = task["spec"] % a if "%s" in task["spec"] else task["spec"]
                    done = c.run(spec, sets_for(task, args, a, s) + extra, out,
                                 timeout=(args.time_limit or 600) + 120)
                    r = summary(report(out) if os.path.exists(out + "/report.json") else
                                {"error": "exit %d: %s" % (done.returncode, done.stderr[-300:])})
                    runs.append(r)
                    print("%-13s %-9s seed %d: %s, final %.3f, %d gradients, staleness %.1f" % (
                        cond, a, s, "%.2f s" % r["time"] if r["time"] else
                        "not reached " + r["error"][:80], r["final"], r["gradients"],
                        r["staleness"]), file=sys.stderr, flush=True)
                rows.append((cond, a, runs))
        rss = peak_rss_mb(c)
    finally:
        c.stop()
    print_table(args.target or task["target"], rows)
    print("\npeak resident memory per host process (VmHWM, MB): " +
          ", ".join("%.0f" % m for m in rss))


def print_table(target, rows):
    print("| condition | algorithm | time to %g (s), mean ± sd | reached | gradients "
          "(mean) | final accuracy (min–max) | staleness mean | time / allreduce's |"
          % target)
    print("|---|---|---|---|---|---|---|---|")
    base = {}
    for cond, a, runs in rows:
        ok = [r["time"] for r in runs if r["time"]]
        if a == "allreduce" and ok:
            base[cond] = statistics.mean(ok)
    for cond, a, runs in rows:
        ok = [r["time"] for r in runs if r["time"]]
        m = statistics.mean(ok) if ok else float("nan")
        sd = statistics.stdev(ok) if len(ok) > 1 else 0.0
        finals = [r["final"] for r in runs]
        print("| %s | %s | %.2f ± %.2f | %d/%d | %.0f | %.3f–%.3f | %.1f | %.2f× |" % (
            cond, a, m, sd, len(ok), len(runs), statistics.mean(r["gradients"] for r in runs),
            min(finals), max(finals), statistics.mean(r["staleness"] for r in runs),
            m / base[cond] if ok and cond in base else float("nan")))


if __name__ == "__main__":
    main()
