#!/usr/bin/env python3
"""docs/RELIABILITY.md's straggler-policy table: Ring-AllReduce, D-PSGD and Local SGD,
straggler_policy WAIT vs SKIP, with no straggler, one and two 4x stragglers.

Runs `atrain compare` once per (condition, policy) on the quickstart task
(config/quickstart.textproto: a9a, 8 nodes, virtual clock, target 0.845; each
algorithm with its block from config/algorithms/NAME.textproto) and prints one
Markdown table: mean time to the target over the seeds (or why not) and the
late gradients per run (SKIP: gradients that joined a later step).

  python3 bench/straggler_policy.py [--atrain build/atrain] [--seeds 3] [--out build/straggler_policy]
                                    [--set field.path=value]...   (e.g. nodes=16)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ALGORITHMS = ["allreduce", "dpsgd", "local_sgd"]
POLICIES = ["WAIT", "SKIP"]
CONDITIONS = [
    ("no straggler", []),
    ("node 3 x4", ["cost.slowdown=[{node: 3 factor: 4}]"]),
    ("nodes 3 and 6 x4", ["cost.slowdown=[{node: 3 factor: 4}, {node: 6 factor: 4}]"]),
]


def cell(alg, out):
    if alg["completed"] < alg["runs"]:
        return "fails"
    late = []
    for r in alg["per_run"]:
        with open(os.path.join(out, r["dir"], "report.json")) as f:
            late.append(int(json.load(f).get("late_contributions", 0)))
    if alg["reached"] < alg["runs"]:
        return f"not reached ({alg['runs'] - alg['reached']}/{alg['runs']})"
    t = alg["time_to_target"]
    return f"{t['mean']:.2f} ± {t['std']:.2f} s ({statistics.mean(late):.0f} late)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atrain", default="build/atrain")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default="build/straggler_policy")
    ap.add_argument("--set", action="append", default=[], help="extra override for every run")
    args = ap.parse_args()
    rows = {(a, p): [] for a in ALGORITHMS for p in POLICIES}
    for k, (title, sets) in enumerate(CONDITIONS):
        for policy in POLICIES:
            out = os.path.join(args.out, f"condition{k}_{policy}")
            cmd = [args.atrain, "compare", "config/quickstart.textproto",
                   "--algorithms", ",".join(ALGORITHMS), "--seeds", str(args.seeds),
                   "--out", out, "--no-progress", "--set", "eval.period_seconds=0.05",
                   "--set", "stop.time_seconds=20"]
            for a in ALGORITHMS:
                cmd += ["--set", f"algorithm.{a}.straggler_policy={policy}"]
            for s in args.set + sets:
                cmd += ["--set", s]
            print(f"{title}, {policy}: {' '.join(cmd)}", file=sys.stderr)
            rc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).returncode
            if rc == 2:
                sys.exit(f"straggler_policy: `{' '.join(cmd)}` refused its arguments")
            with open(os.path.join(out, "compare.json")) as f:
                result = {a["name"]: a for a in json.load(f)["algorithms"]}
            for a in ALGORITHMS:
                rows[(a, policy)].append(cell(result[a], out))
    print("| algorithm | policy | " + " | ".join(c[0] for c in CONDITIONS) + " |")
    print("|---|---|" + "---|" * len(CONDITIONS))
    for (a, p), cells in rows.items():
        print(f"| {a} | {p} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
