#!/usr/bin/env python3
"""Tune every algorithm's step size per node count, and record the grid.

Usage (from the repository root):
    python3 bench/tune_steps.py [ATRAIN] [--nodes 8,16] [--algorithms a,b] [--seeds 3]
                                [--out build/tuning] [--budget 10] [--reuse] [--write]
                                [--criterion first|sustained] [--set FIELD=VALUE]...
                                [--start NAME=STEP,...]

For each node count N and algorithm A, on the quickstart task (config/quickstart.textproto:
a9a, iid shards, tau 0.01 s +- 20 %, latency 0.002 s, target 0.845, virtual clock), with A's
own config (config/algorithms/nodesN/A.textproto when it exists, else
config/algorithms/A.textproto: its algorithm block and topology), every step size of a
geometric grid (the config's step x 2^k, k = -2..2, widened by one factor of 2 at an edge
that wins, at most 3 times) runs `atrain compare` over --seeds seeds, each run stopped at
the target or after --budget virtual seconds (10; the quickstart's own budget is 30: a
step that needs more than 10 s is far from the best, and the misses are the slow runs). The best step is the
smallest step whose mean time to target is within 10 % of the fastest mean among the steps
that reached it in every seed (the time's resolution is the 0.05 s evaluation period, and a
first crossing at a large step can be a lucky oscillation: the smaller step is the more
stable one). A centralized run has one node whatever N: it is tuned once, at N = 1.

--criterion sustained scores the sustained time instead (the first evaluation from which the
mean of the last stop.sustained_evaluations evaluations stays at or above the target; runs
go on for the whole budget), and --set adds overrides to every run (a skewed split): a study,
not for --write.

Writes OUT/step_grid.csv (every grid point: nodes, algorithm, step_size, seeds, reached,
mean and sd of the time to target, mean final accuracy, mean worst-node accuracy, chosen) and
prints a markdown table of the choices. --write puts each chosen step into the config it
was tuned for: config/algorithms/A.textproto for the node count that file names (8), and
config/algorithms/nodesN/A.textproto for every other N (created from the first, with
`nodes: N`), and copies the grid to docs/results/step_grid.csv.
"""
import argparse
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys

QS = "config/quickstart.textproto"
ALGS = ["rfast", "allreduce", "dpsgd", "adpsgd", "sgp", "osgp", "dasgd", "async_ps",
        "local_sgd", "diloco", "loscar", "loscar_naive", "centralized"]
STEP = re.compile(r"(\bstep_size:\s*)([0-9.eE+-]+)")
NODES = re.compile(r"^nodes:\s*(\d+)", re.M)


def config_of(name, nodes):
    tuned = os.path.join("config", "algorithms", "nodes%d" % nodes, name + ".textproto")
    return tuned if os.path.exists(tuned) else os.path.join("config", "algorithms", name + ".textproto")


def block_of(text):
    """The algorithm block's name (`loscar` for loscar_naive): the first `NAME {` in it."""
    m = re.search(r"^algorithm\s*\{\s*(?:#[^\n]*\n\s*)*([a-z_]+)\s*\{", text, re.M)
    if not m:
        sys.exit("tune_steps: no algorithm block found")
    return m.group(1)


def current_step(text, path):
    body = text[text.index("algorithm"):]
    m = STEP.search(body)
    if not m:
        sys.exit("tune_steps: %s has no step_size in its algorithm block" % path)
    return float(m.group(2))


def run_point(args, name, block, nodes, step):
    out = os.path.join(args.out, "n%d" % nodes, "%s_%g" % (name, step))
    cmd = [args.atrain, "compare", QS, "--algorithms", name, "--seeds", str(args.seeds),
           "--set", "nodes=%d" % nodes, "--set", "eval.period_seconds=0.05",
           "--set", "stop.time_seconds=%g" % args.budget]
    if args.criterion == "sustained":  # the runs go on past the target to show it holds
        cmd += ["--set", "stop.stop_at_target=false"]
    for extra in args.set:
        cmd += ["--set", extra]
    cmd += ["--set", "algorithm.%s.step_size=%r" % (block, step), "--out", out, "--no-progress"]
    if not (args.reuse and os.path.exists(os.path.join(out, "compare.json"))):
        print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode not in (0, 1):
            sys.exit("tune_steps: atrain compare failed (%d):\n%s" % (r.returncode, r.stderr))
    with open(os.path.join(out, "compare.json")) as f:
        a = json.load(f)["algorithms"][0]
    ttt = a["time_to_target"]
    if args.criterion == "sustained":  # the same fields, from the sustained times
        ts = [r.get("sustained_time_to_target") for r in a["per_run"]]
        held = [t for t in ts if t is not None]
        a["reached"] = len(held)
        mean = sum(held) / len(held) if held else None
        sd = (sum((t - mean) ** 2 for t in held) / (len(held) - 1)) ** 0.5 if len(held) > 1 else None
        ttt = {"mean": mean, "std": sd}
    return {"nodes": nodes, "algorithm": name, "step_size": step, "seeds": args.seeds,
            "reached": a["reached"], "ttt_mean": ttt["mean"] if a["reached"] == args.seeds else None,
            "ttt_sd": ttt["std"] if a["reached"] == args.seeds else None,
            "final_accuracy": a["final_accuracy"]["mean"],
            "worst_node_accuracy": (a.get("worst_node_accuracy") or {}).get("mean"),
            "chosen": False}


def score(p):
    return (p["ttt_mean"] if p["ttt_mean"] is not None else math.inf, p["step_size"])


def tune(args, name, nodes):
    path = config_of(name, nodes)
    with open(path) as f:
        text = f.read()
    block, start = block_of(text), current_step(text, path)
    start = args.start.get(name, start)
    points = {}
    ks = list(range(-2, 3))
    for _ in range(4):
        for k in ks:
            step = float("%.6g" % (start * 2.0 ** k))
            if step not in points:
                points[step] = run_point(args, name, block, nodes, step)
        best = min(points.values(), key=score)
        if best["ttt_mean"] is None:
            break
        lo, hi = min(points), max(points)
        if best["step_size"] == hi:
            ks = [max(ks) + 1]
        elif best["step_size"] == lo:
            ks = [min(ks) - 1]
        else:
            break
    best = min(points.values(), key=score)
    if best["ttt_mean"] is not None:
        # A first crossing at a large step can be a lucky oscillation: take the
        # smallest step within 10 % of the fastest.
        best = min((p for p in points.values()
                    if p["ttt_mean"] is not None and p["ttt_mean"] <= 1.1 * best["ttt_mean"]),
                   key=lambda p: p["step_size"])
        best["chosen"] = True
    return sorted(points.values(), key=lambda p: p["step_size"]), best, path


def write_config(name, nodes, step):
    base = os.path.join("config", "algorithms", name + ".textproto")
    with open(base) as f:
        text = f.read()
    m = NODES.search(text)
    base_nodes = int(m.group(1)) if m else 0
    if nodes in (base_nodes, 1) or base_nodes == 1:
        target = base
    else:
        os.makedirs(os.path.join("config", "algorithms", "nodes%d" % nodes), exist_ok=True)
        target = os.path.join("config", "algorithms", "nodes%d" % nodes, name + ".textproto")
        if os.path.exists(target):
            with open(target) as f:
                text = f.read()
        else:
            text = NODES.sub("nodes: %d" % nodes, text, count=1)
            text = re.sub(r"\b%d nodes\b" % base_nodes, "%d nodes" % nodes, text)
            text = text.replace("config/algorithms/%s.textproto`" % name,
                                "config/algorithms/nodes%d/%s.textproto`" % (nodes, name))
            text = text.replace('"../../data/', '"../../../data/')
            text = ("# %s tuned for %d nodes by bench/tune_steps.py (grid: docs/results/step_grid.csv);\n"
                    "# `atrain compare` reads it for %d-node runs. Otherwise as ../%s.textproto.\n"
                    % (name, nodes, nodes, name)) + text
    body_at = text.index("algorithm")
    text = text[:body_at] + STEP.sub(lambda m: m.group(1) + ("%g" % step), text[body_at:], count=1)
    # The step's line says where it came from (an older comment there is stale).
    at = text.index("step_size:", body_at)
    start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
    line = text[start:end].split("#")[0].rstrip()
    note = "  # bench/tune_steps.py at %d node%s (docs/results/step_grid.csv)" % (
        nodes, "" if nodes == 1 else "s")
    text = text[:start] + line + note + text[end:]
    with open(target, "w") as f:
        f.write(text)
    return target


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("atrain", nargs="?", default="build/atrain")
    ap.add_argument("--nodes", default="8,16")
    ap.add_argument("--algorithms", default=",".join(ALGS))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default="build/tuning")
    ap.add_argument("--budget", type=float, default=10,
                    help="virtual seconds a run may take to reach the target (default 10)")
    ap.add_argument("--criterion", choices=["first", "sustained"], default="first",
                    help="first: the first time at the target (the shipped configs); sustained: "
                         "the sustained time (stop.sustained_evaluations), runs not stopped at "
                         "the target")
    ap.add_argument("--set", action="append", default=[],
                    help="an extra --set for every run (e.g. a shard policy); not with --write")
    ap.add_argument("--start", default="",
                    help="NAME=STEP,...: centre the grid there instead of on the config's step")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--reuse", action="store_true",
                    help="read a grid point's compare.json under --out instead of running it again")
    args = ap.parse_args()
    args.start = {k: float(v) for k, v in (kv.split("=") for kv in args.start.split(",") if kv)}
    if args.write and (args.set or args.criterion != "first"):
        sys.exit("tune_steps: --write is for the shipped configs' task: no --set, criterion first")
    counts = [int(n) for n in args.nodes.split(",")]
    rows, chosen = [], []
    for name in args.algorithms.split(","):
        for nodes in ([1] if name == "centralized" else counts):
            points, best, path = tune(args, name, nodes)
            rows += points
            chosen.append((name, nodes, path, best))
    os.makedirs(args.out, exist_ok=True)
    grid = os.path.join(args.out, "step_grid.csv")
    with open(grid, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    print("| algorithm | nodes | grid | chosen step | %s time to 0.845 (s) | final accuracy |"
          % args.criterion)
    print("|---|---:|---|---:|---:|---:|")
    for name, nodes, path, best in chosen:
        steps = ", ".join("%g" % p["step_size"] for p in rows
                          if p["algorithm"] == name and p["nodes"] == nodes)
        if best["ttt_mean"] is None:
            print("| %s | %d | %s | none reached it | — | — |" % (name, nodes, steps))
            continue
        print("| %s | %d | %s | %g | %.3f ± %.3f | %.4f |" % (
            name, nodes, steps, best["step_size"], best["ttt_mean"], best["ttt_sd"] or 0,
            best["final_accuracy"]))
        if args.write:
            print("  wrote %s" % write_config(name, nodes, best["step_size"]), file=sys.stderr)
    if args.write:
        os.makedirs(os.path.join("docs", "results"), exist_ok=True)
        shutil.copy(grid, os.path.join("docs", "results", "step_grid.csv"))


if __name__ == "__main__":
    main()
