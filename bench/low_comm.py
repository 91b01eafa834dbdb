#!/usr/bin/env python3
"""DiLoCo against Local SGD and LOSCAR-SGD: time, gradients and bytes to the target.

Usage (from the repository root, after a build):
    python3 bench/low_comm.py [ATRAIN] [--seeds 3] [--tasks a9a,mnist] [--out build/low_comm]
                              [--reuse]

Virtual clock, 8 nodes, every run stopped at its task's target. Tasks:
  a9a    the quickstart (config/algorithms/NAME.textproto as shipped: logistic regression,
         target 0.845, latency 2 ms, unlimited bandwidth), evaluated every 20 ms;
  mnist  the MNIST MLP of config/mnist_mlp.textproto (784-128-10, target 0.95) on links of
         10 MB/s and 2 ms: a ring round of the model (407 kB) costs about 70 ms against 20 ms
         per gradient, so communication dominates unless it is rare; evaluated every 0.2 s.
Systems: Local SGD and DiLoCo with the same H (the same ring traffic per gradient: equal
bytes), streaming DiLoCo (4 fragments, overlap), DiLoCo with AdamW inner steps, and LOSCAR-SGD (10 % of the coordinates per
round). Prints one markdown table per task (mean over seeds; "-" when a seed missed the
target within the budget), then every system's accuracy at an equal byte budget per node (the
least any system needed to reach the target), and writes every run's report under --out
(--reuse reads them back instead of running again).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

A9A = [
    ("local_sgd H=8", "local_sgd", ["algorithm.local_sgd.local_steps=8"]),
    ("diloco H=8", "diloco", []),
    ("diloco H=8, 4 fragments, overlap", "diloco",
     ["algorithm.diloco.fragments=4", "algorithm.diloco.overlap=true"]),
    ("diloco H=8, AdamW inner", "diloco",  # config/beyond/diloco_adamw.textproto's block
     ["algorithm.diloco={inner: ADAMW step_size: 0.1 weight_decay: 0 inner_steps: 8 "
      "outer_step_size: 1 momentum: 0.5}"]),
    ("loscar (shipped)", "loscar", []),
]
# Evaluations fine enough to read the accuracy at a byte budget (and the time to target).
A9A_EVAL = ["eval.period_seconds=0.02"]
MNIST_LINK = ["link.bandwidth_bytes_per_second=1e7", "stop.time_seconds=120",
              "eval.period_seconds=0.2"]
MNIST = [
    ("local_sgd H=8", "local_sgd", ["algorithm.local_sgd={step_size: 0.5 local_steps: 8}"]),
    ("diloco H=8", "diloco",
     ["algorithm.diloco={step_size: 0.5 inner_steps: 8 outer_step_size: 1 momentum: 0.5}"]),
    ("diloco H=8, 4 fragments, overlap", "diloco",
     ["algorithm.diloco={step_size: 0.5 inner_steps: 8 outer_step_size: 1 momentum: 0.5 "
      "fragments: 4 overlap: true}"]),
    ("diloco H=8, AdamW inner", "diloco",  # lr 0.01 of {0.001, 0.003, 0.01} (seed 1)
     ["algorithm.diloco={inner: ADAMW step_size: 0.01 weight_decay: 0 inner_steps: 8 "
      "outer_step_size: 1 momentum: 0.5}"]),
    ("loscar", "loscar",
     ["algorithm.loscar={step_size: 0.5 sparsity: 0.1 round_seconds: 0.16 overlap_steps: 2}"]),
]


def run(atrain, spec, sets, out, reuse=False):
    if reuse and os.path.exists(os.path.join(out, "report.json")):
        with open(os.path.join(out, "report.json")) as f:
            return json.load(f)
    cmd = [atrain, "run", spec, "--no-progress", "--out", out] + sum((["--set", s] for s in sets), [])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def mean(xs):
    return statistics.mean(xs) if xs else float("nan")


def table(title, rows):
    print(f"\n### {title}\n")
    print("| system | seeds at target | time to target (s) | gradients | bytes per node | "
          "bytes per node per gradient |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, runs in rows:
        hit = [r for r in runs if "time_to_target" in r]
        t = mean([r["time_to_target"] for r in hit])
        g = mean([float(r["gradients_total"]) for r in hit])
        b = mean([float(r["bytes_sent"]) / r["nodes"] for r in hit])
        per = mean([float(r["bytes_sent"]) / float(r["gradients_total"]) for r in hit])
        cell = (lambda v, f: "-" if len(hit) < len(runs) else f % v)
        print(f"| {label} | {len(hit)}/{len(runs)} | {cell(t, '%.2f')} | {cell(g, '%.0f')} | "
              f"{cell(b / 1e3, '%.1f kB')} | {cell(per, '%.0f B')} |")


def accuracy_within(report, budget):
    """Test accuracy at the last evaluation whose bytes per node are within budget."""
    best = None
    for row in report["metrics"]:
        if float(row.get("bytes", 0)) / report["nodes"] <= budget:
            best = row["test_accuracy"]
    return best


def equal_bytes(rows):
    """Every system's accuracy with the bytes per node the most frugal one needed."""
    budgets = []
    for _, runs in rows:
        if all("time_to_target" in r for r in runs):
            budgets.append(mean([float(r["bytes_sent"]) / r["nodes"] for r in runs]))
    if not budgets:
        return
    budget = min(budgets)
    print(f"\nAt an equal budget of {budget / 1e3:.1f} kB per node (the least any system needed "
          "to reach the target): test accuracy at the last evaluation within it, mean over seeds\n")
    print("| system | accuracy |")
    print("|---|---:|")
    for label, runs in rows:
        accs = [accuracy_within(r, budget) for r in runs]
        cell = "-" if any(a is None for a in accs) else "%.4f" % mean(accs)
        print(f"| {label} | {cell} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("atrain", nargs="?", default="build/atrain")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--tasks", default="a9a,mnist")
    ap.add_argument("--out", default="build/low_comm")
    ap.add_argument("--reuse", action="store_true", help="read the reports already under --out")
    a = ap.parse_args()
    for task in a.tasks.split(","):
        systems = A9A if task == "a9a" else MNIST
        rows = []
        for label, name, sets in systems:
            spec = f"config/algorithms/{name}.textproto" if task == "a9a" else "config/mnist_mlp.textproto"
            extra = A9A_EVAL if task == "a9a" else MNIST_LINK
            runs = []
            for seed in range(1, a.seeds + 1):
                out = os.path.join(a.out, task, label.replace(" ", "_").replace(",", ""), str(seed))
                runs.append(run(a.atrain, spec, extra + sets + [f"seed={seed}"], out, a.reuse))
                print(f"{task} {label} seed {seed}: "
                      f"{runs[-1].get('time_to_target', 'missed')}", file=sys.stderr)
            rows.append((label, runs))
        table(f"{task}: 8 nodes, virtual clock, {a.seeds} seeds", rows)
        equal_bytes(rows)


if __name__ == "__main__":
    main()
