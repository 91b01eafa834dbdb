#!/usr/bin/env python3
"""docs/RELIABILITY.md "Joining nodes": every algorithm growing from 8 to 12 nodes.

For each algorithm's shipped spec (config/algorithms/NAME.textproto: a9a, virtual clock,
target 0.845, 6 s) three runs per seed: 12 nodes of which 8-11 join at 0.25, 0.5, 0.75 and 1 s;
8 nodes; 12 nodes from the start. Prints one Markdown table: time to the target (per seed)
and gradients computed until then (mean), or why a run did not get there.

  python3 bench/elastic_joins.py [--atrain build/atrain] [--seeds 3] [--out build/elastic_joins]
"""
import argparse
import json
import os
import subprocess
import sys

ALGORITHMS = ["rfast", "allreduce", "local_sgd", "diloco", "dpsgd", "adpsgd", "dasgd", "sgp",
              "osgp", "loscar", "async_ps"]
JOINS = ("faults.join=[{node: 8 at_seconds: 0.25}, {node: 9 at_seconds: 0.5}, "
         "{node: 10 at_seconds: 0.75}, {node: 11 at_seconds: 1.0}]")
RUNS = [("8 → 12 (joins)", ["nodes=12", JOINS]), ("8 nodes", ["nodes=8"]),
        ("12 nodes", ["nodes=12"])]


def run(atrain, algo, sets, seed, out):
    cmd = [atrain, "run", f"config/algorithms/{algo}.textproto", "--no-progress", "--out", out,
           "--set", f"seed={seed}", "--set", "stop.time_seconds=6",
           # Every periodic evaluation kept (a stop at the target re-evaluates
           # at the same time, after events of that instant, and replaces it).
           "--set", "stop.stop_at_target=false"]
    for s in sets:
        cmd += ["--set", s]
    done = subprocess.run(cmd, capture_output=True, text=True)
    path = os.path.join(out, "report.json")
    if done.returncode != 0 or not os.path.exists(path):
        return None, (done.stderr.strip().splitlines() or ["failed"])[-1]
    with open(path) as f:
        return json.load(f), None


def cell(results):
    times, grads = [], []
    for report, why in results:
        if report is None:
            return "refused: " + why[:80]
        if report.get("error"):
            return "error: " + report["error"][:80]
        # The first evaluation at or above the target (the report's time to target).
        hit = next((m for m in report.get("metrics", [])
                    if m.get("test_accuracy", 0) >= report["target_accuracy"]), None)
        if hit is None:
            times.append("–")
            continue
        times.append(f"{hit.get('time_seconds', 0):.2f}")
        grads.append(hit["gradients"])
    g = f"{sum(grads) / len(grads):,.0f}".replace(",", " ") if grads else "–"
    return " / ".join(times) + f" s ({g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--atrain", default="build/atrain")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default="build/elastic_joins")
    args = ap.parse_args()
    print("| algorithm | " + " | ".join(title for title, _ in RUNS) + " |")
    print("|---|" + "---|" * len(RUNS))
    for algo in ALGORITHMS:
        cells = []
        for title, sets in RUNS:
            results = []
            for seed in range(1, args.seeds + 1):
                out = os.path.join(args.out, algo, title.split()[0] + title.split()[-1], str(seed))
                results.append(run(args.atrain, algo, sets, seed, out))
            cells.append(cell(results))
        print(f"| `{algo}` | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
