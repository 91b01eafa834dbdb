#!/usr/bin/env python3
"""Link codecs against raw links: bytes and time to the target, per algorithm.

Usage (from the repository root, after a build):
    python3 bench/codecs.py [ATRAIN] [--seeds 2] [--tasks a9a,mnist] [--out build/codecs]
                            [--algorithms rfast,adpsgd,dasgd] [--codecs none,fp16,...] [--reuse]

Virtual clock, 8 nodes, every run stopped at its task's target, on bandwidth-bound links
(docs/ALGORITHMS.md "Codecs on links"):
  a9a    config/algorithms/NAME.textproto as shipped (logistic regression, d = 124, target
         0.845) on links of 100 kB/s and 2 ms: raw R-FAST puts ~1.5 kB on each link per
         10 ms gradient, more than the link carries;
  mnist  config/mnist_mlp.textproto (784-128-10, d = 101,770, target 0.95) with the
         algorithm's MNIST step on links of 10 MB/s and 2 ms with the outbox's window of 4
         packets per route, as across processes (without it R-FAST floods these links: its
         newest-wins links replace most packets and it does not learn, raw or coded).
Codecs: none, fp16, bf16, int8 (block 256, error feedback), top-k 10 % and 1 % (error
feedback; the ring algorithms code each chunk once, without it). Prints one markdown table per task and algorithm (mean over seeds; "-" when a
seed missed the target within the budget, whose final accuracy then says how far it got) and
writes every run's report under --out.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from low_comm import mean, run  # noqa: E402  (the same runner)

CODECS = [
    ("none", "{}"),
    ("fp16", "{kind: FP16}"),
    ("bf16", "{kind: BF16}"),
    ("int8 + EF", "{kind: INT8 error_feedback: true}"),
    ("top-k 10% + EF", "{kind: TOPK topk_fraction: 0.1 error_feedback: true}"),
    ("top-k 1% + EF", "{kind: TOPK topk_fraction: 0.01 error_feedback: true}"),
]
A9A = ["link.bandwidth_bytes_per_second=1e5", "link.latency_seconds=0.002",
       "eval.period_seconds=0.05", "stop.time_seconds=30"]
MNIST = ["link.bandwidth_bytes_per_second=1e7", "link.latency_seconds=0.002", "link.window=4",
         "eval.period_seconds=0.25", "stop.time_seconds=60"]
RINGS = ("allreduce", "local_sgd", "diloco")
# The MNIST MLP's steps of docs/RESULTS.md's MNIST grids (config/mnist_mlp.textproto is R-FAST's).
MNIST_BLOCK = {
    "rfast": [],  # the shipped 0.1: at 0.5 it diverges on these bandwidth-bound links
    "adpsgd": ["algorithm.adpsgd={step_size: 0.5}", "topology.builder=BIPARTITE_EXPONENTIAL"],
    "dasgd": ["algorithm.dasgd={step_size: 0.05}"],
    "dpsgd": ["algorithm.dpsgd={step_size: 1}"],
    "allreduce": ["algorithm.allreduce={step_size: 1}"],
}


def table(title, rows):
    """Per codec: seeds at target, time, gradients and bytes to it; final accuracy otherwise."""
    print(f"\n### {title}\n")
    print("| codec | seeds at target | time to target (s) | gradients | kB per node | "
          "bytes per node per gradient | final accuracy |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, runs in rows:
        hit = [r for r in runs if "time_to_target" in r]
        per = mean([float(r["bytes_sent"]) / float(r["gradients_total"]) for r in runs])
        acc = mean([r["final"]["test_accuracy"] for r in runs])
        if len(hit) == len(runs):
            t = "%.2f" % mean([r["time_to_target"] for r in hit])
            g = "%.0f" % mean([float(r["gradients_total"]) for r in hit])
            b = "%.1f" % mean([float(r["bytes_sent"]) / r["nodes"] / 1e3 for r in hit])
        else:
            t = g = b = "-"
        print(f"| {label} | {len(hit)}/{len(runs)} | {t} | {g} | {b} | {per:.0f} B | {acc:.4f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("atrain", nargs="?", default="build/atrain")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--tasks", default="a9a,mnist")
    ap.add_argument("--algorithms", default="rfast,adpsgd,dasgd")
    ap.add_argument("--codecs", default=",".join(label for label, _ in CODECS),
                    help="comma-separated labels of CODECS to run")
    ap.add_argument("--out", default="build/codecs")
    ap.add_argument("--reuse", action="store_true", help="read the reports already under --out")
    a = ap.parse_args()
    for task in a.tasks.split(","):
        for name in a.algorithms.split(","):
            rows = []
            for label, codec in [c for c in CODECS if c[0] in a.codecs.split(",")]:
                if task == "a9a":
                    spec, sets = f"config/algorithms/{name}.textproto", list(A9A)
                else:
                    spec, sets = "config/mnist_mlp.textproto", MNIST + MNIST_BLOCK[name]
                if name in RINGS:  # a ring codes each chunk once: no error feedback
                    codec = codec.replace(" error_feedback: true", "")
                sets.append(f"link.codec={codec}")
                runs = []
                for seed in range(1, a.seeds + 1):
                    out = os.path.join(a.out, task, name, label.replace(" ", "_"), str(seed))
                    runs.append(run(a.atrain, spec, sets + [f"seed={seed}"], out, a.reuse))
                    print(f"{task} {name} {label} seed {seed}: "
                          f"{runs[-1].get('time_to_target', 'missed')}", file=sys.stderr)
                rows.append((label, runs))
            table(f"{task}, {name}: 8 nodes, virtual clock, {a.seeds} seeds", rows)


if __name__ == "__main__":
    main()
