#!/usr/bin/env python3
"""Checks an `atrain compare` directory against its own per-run reports.

  check_compare.py DIR ALGORITHMS SEEDS [--figures] [--replay ATRAIN NAME]

ALGORITHMS is comma-separated, SEEDS the number of seeds. Recomputes every
aggregate of compare.json from DIR/NAME_seedS/report.json with Python's
statistics module (mean, sample stdev) and checks compare.md's rows,
curves.csv and, with --figures, the PNG/SVG files. With --replay, runs
`ATRAIN run config/algorithms/NAME.textproto` with compare's overrides and
checks that compare's first-seed run of NAME has the same trace hash (when
SPEC's task is the one of config/algorithms/, as for config/quickstart).
"""
import csv
import json
import math
import os
import statistics
import subprocess
import sys


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def main():
    d, algs, nseeds = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
    figures = "--figures" in sys.argv[4:]
    replay = sys.argv[sys.argv.index("--replay") + 1:][:2] if "--replay" in sys.argv else None
    with open(os.path.join(d, "compare.json")) as f:
        cj = json.load(f)
    assert [a["name"] for a in cj["algorithms"]] == algs, cj["algorithms"]
    assert len(cj["seeds"]) == nseeds
    runs = 0
    for a in cj["algorithms"]:
        assert a["runs"] == nseeds and len(a["per_run"]) == nseeds, a["name"]
        reports = []
        for seed in cj["seeds"]:
            with open(os.path.join(d, f"{a['name']}_seed{seed}", "report.json")) as f:
                r = json.load(f)
            assert os.path.exists(os.path.join(d, f"{a['name']}_seed{seed}", "metrics.csv"))
            assert int(r["seed"]) == seed and r["algorithm"] == a["name"].replace("_naive", "")
            reports.append(r)
            runs += 1
        acc = [r["final"]["test_accuracy"] for r in reports]
        grads = [int(r["gradients_total"]) for r in reports]
        bpn = [int(r["bytes_sent"]) / r["nodes"] for r in reports]
        ttt = [r["time_to_target"] for r in reports if "time_to_target" in r]
        for key, xs in (("final_accuracy", acc), ("gradients", grads),
                        ("bytes_per_node", bpn), ("time_to_target", ttt)):
            s = a[key]
            assert s["n"] == len(xs), (a["name"], key)
            if xs:
                assert close(s["mean"], statistics.mean(xs)), (a["name"], key, s, xs)
            if len(xs) > 1:
                assert close(s["std"], statistics.stdev(xs)), (a["name"], key, s, xs)
        assert a["reached"] == len(ttt)
        for pr, r in zip(a["per_run"], reports):
            assert close(pr["final_accuracy"], r["final"]["test_accuracy"])
            assert (pr["time_to_target"] is None) == ("time_to_target" not in r)
    # speed-up: allreduce's mean time to target over each algorithm's, when
    # every run of both reached the target
    by_name = {a["name"]: a for a in cj["algorithms"]}
    ref = by_name.get("allreduce")
    for a in cj["algorithms"]:
        def all_reached(x):
            return x["completed"] > 0 and x["reached"] == x["completed"]
        if ref and all_reached(ref) and all_reached(a):
            want = ref["time_to_target"]["mean"] / a["time_to_target"]["mean"]
            assert close(a["speedup_vs_allreduce"], want), (a["name"], a["speedup_vs_allreduce"])
        else:
            assert a["speedup_vs_allreduce"] is None, a["name"]
    with open(os.path.join(d, "compare.md")) as f:
        rows = [l for l in f if l.startswith("| ") and not l.startswith("| algorithm")]
    assert [r.split("|")[1].strip() for r in rows] == algs, rows
    with open(os.path.join(d, "curves.csv")) as f:
        curves = list(csv.DictReader(f))
    assert {(c["algorithm"], c["seed"]) for c in curves} == {
        (a, str(s)) for a in algs for s in cj["seeds"]}
    if figures:
        for name in ("accuracy_vs_time", "loss_vs_time", "consensus_vs_time",
                     "time_to_target", "staleness"):
            for ext in ("png", "svg"):
                p = os.path.join(d, f"{name}.{ext}")
                assert os.path.getsize(p) > 1000, p
    if replay:
        atrain, name = replay
        cmd = [atrain, "run", f"config/algorithms/{name}.textproto", "--no-progress"]
        for o in cj["overrides"]:
            cmd += ["--set", o]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        want = [l.split()[2] for l in out.splitlines() if l.startswith("trace hash")][0]
        with open(os.path.join(d, f"{name}_seed{cj['seeds'][0]}", "report.json")) as f:
            got = json.load(f)["trace_hash"]
        assert got == want, (name, got, want)
        print(f"{name}: same trace as atrain run ({got})")
    print(f"compare OK: {len(algs)} algorithms x {nseeds} seeds = {runs} runs checked"
          + (", figures present" if figures else ""))


main()
