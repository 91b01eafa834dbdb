#!/usr/bin/env python3
"""docs/RELIABILITY.md's table: every algorithm under each fault condition.

Runs `atrain compare` once per condition (same task: config/quickstart.textproto,
a9a, 8 nodes, virtual clock, target 0.845) and prints one Markdown table:
time to target (mean over seeds, or why not) and final accuracy.

  python3 bench/reliability.py [--atrain build/atrain] [--seeds 3] [--out build/reliability]
"""
import argparse
import json
import os
import subprocess
import sys

ALGORITHMS = ["rfast", "dasgd", "loscar", "loscar_naive", "allreduce", "dpsgd", "adpsgd",
              "sgp", "osgp", "local_sgd", "async_ps"]

# (column title, spec, extra --set overrides, algorithms it applies to or None = all)
CONDITIONS = [
    ("no fault", "config/quickstart.textproto", [], None),
    ("10% loss", "config/quickstart.textproto", ["link.loss=0.1"], None),
    ("30% loss", "config/quickstart.textproto", ["link.loss=0.3"], None),
    ("50% loss", "config/quickstart.textproto", ["link.loss=0.5"], None),
    ("partition 0.2-0.8 s heals", "config/faults/partition_heals.textproto", [], None),
    ("node 3 straggles x4", "config/faults/straggler.textproto", [], None),
    ("node 2 crashes at 0.3 s, restart 0.2 s later", "config/quickstart.textproto",
     ["faults.crash=[{node: 2 at_seconds: 0.3 restart_after_seconds: 0.2}]"],
     None),  # every algorithm restarts but centralized (not in the table)
    ("node 2 crashes at 0.3 s, no restart", "config/quickstart.textproto",
     ["faults.crash=[{node: 2 at_seconds: 0.3}]"], None),
]


def cell(alg):
    if alg["completed"] < alg["runs"]:
        errors = {r["error"] for r in alg["per_run"] if not r["completed"]}
        reason = errors.pop() if errors else "failed"
        if "cannot go on" in reason:
            return "fails: needs every node"
        return "fails: " + reason[:60]
    t = alg["time_to_target"]
    acc = alg["final_accuracy"]["mean"]
    if alg["reached"] < alg["runs"]:
        return f"not reached ({alg['runs'] - alg['reached']}/{alg['runs']}), acc {acc:.3f}"
    return f"{t['mean']:.2f} s, acc {acc:.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atrain", default="build/atrain")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default="build/reliability")
    args = ap.parse_args()
    table = {a: [] for a in ALGORITHMS}
    for k, (title, spec, sets, only) in enumerate(CONDITIONS):
        algs = only or ALGORITHMS
        out = os.path.join(args.out, f"condition{k}")
        cmd = [args.atrain, "compare", spec, "--algorithms", ",".join(algs),
               "--seeds", str(args.seeds), "--out", out, "--no-progress",
               "--set", "eval.period_seconds=0.05", "--set", "stop.time_seconds=20"]
        for s in sets:
            cmd += ["--set", s]
        print(f"[{k + 1}/{len(CONDITIONS)}] {title}", file=sys.stderr)
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        if rc == 2:
            sys.exit(f"reliability: `{' '.join(cmd)}` refused its arguments")
        with open(os.path.join(out, "compare.json")) as f:
            result = {a["name"]: a for a in json.load(f)["algorithms"]}
        for a in ALGORITHMS:
            table[a].append(cell(result[a]) if a in result else "— (restart refused)")
    print("| algorithm | " + " | ".join(c[0] for c in CONDITIONS) + " |")
    print("|---|" + "---|" * len(CONDITIONS))
    for a in ALGORITHMS:
        print(f"| {a} | " + " | ".join(table[a]) + " |")


if __name__ == "__main__":
    main()
