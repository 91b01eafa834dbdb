#!/usr/bin/env python3
"""Checks an `atrain compare` directory against its own per-run reports.

  check_compare.py DIR ALGORITHMS SEEDS [--figures] [--replay ATRAIN NAME]

ALGORITHMS is comma-separated, SEEDS the number of seeds. Recomputes every
aggregate of compare.json from DIR/NAME_seedS/report.json with Python's
statistics module (mean, sample stdev) and checks compare.md's rows,
curves.csv and, with --figures, the PNG/SVG files: the band files recomputed
from curves.csv (mean, min, max over the seeds still running at each
evaluation time, linear between a seed's evaluations), the scenario in the
titles, a shaded band per algorithm and a legend entry only for a line. With --replay, runs
`ATRAIN run config/algorithms/NAME.textproto` with compare's overrides and
checks that compare's first-seed run of NAME has the same trace hash (when
SPEC's task is the one of config/algorithms/, as for config/quickstart).
"""
import csv
import json
import bisect
import math
import re
import os
import statistics
import subprocess
import sys


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def at(curve, t, k):
    """Column k of a seed's curve [(t, acc, loss, cons)] at t, linear between rows."""
    ts = [r[0] for r in curve]
    i = bisect.bisect_left(ts, t)
    if i == len(ts):
        return curve[-1][k]
    if i == 0 or ts[i] == t:
        return curve[i][k]
    lo, hi = curve[i - 1], curve[i]
    return lo[k] + (t - lo[0]) / (hi[0] - lo[0]) * (hi[k] - lo[k])


def check_bands(d, algs, curves, spec_name):
    with open(os.path.join(d, "bands.gp")) as f:
        gp = dict(re.findall(r'^(\w+) = "([^"]*)"', f.read(), re.M))
    with_data = [a for a in algs if any(c["algorithm"] == a for c in curves)]
    assert gp["band_names"].split() == with_data, (gp, with_data)
    positive, worst = [], []
    for a in with_data:
        seeds = {}
        for c in curves:
            if c["algorithm"] == a:
                seeds.setdefault(c["seed"], []).append(tuple(float(c[k]) for k in (
                    "time_seconds", "test_accuracy", "train_loss", "consensus_error",
                    "worst_node_accuracy")))
        for v in seeds.values():
            v.sort()
        with open(os.path.join(d, "bands_%s.csv" % a)) as f:
            rows = list(csv.DictReader(f))
        times = sorted({r[0] for v in seeds.values() for r in v})
        assert [float(r["time_seconds"]) for r in rows] == times, a
        for r, t in zip(rows, times):
            live = [v for v in seeds.values() if v[0][0] <= t <= v[-1][0]]
            assert int(r["seeds"]) == len(live), (a, t)
            for k, name in ((1, "test_accuracy"), (2, "train_loss"), (3, "consensus_error"),
                            (4, "worst_node_accuracy")):
                xs = [at(v, t, k) for v in live]
                if any(math.isnan(x) for x in xs):  # a seed without scored nodes
                    assert all(r[name + "_" + st] == "nan" for st in ("mean", "min", "max")), r
                    continue
                for stat, want in (("mean", statistics.mean(xs)), ("min", min(xs)),
                                   ("max", max(xs))):
                    assert close(float(r[name + "_" + stat]), want), (a, t, name, stat, r, xs)
        if any(float(r["consensus_error_mean"]) > 0 for r in rows):
            positive.append(a)
        if any(not math.isnan(float(r["worst_node_accuracy_mean"])) for r in rows):
            worst.append(a)
    assert gp["consensus_names"].split() == positive, (gp, positive)
    assert gp["worst_names"].split() == worst, (gp, worst)
    for fig, names in (("accuracy_vs_time", with_data), ("loss_vs_time", with_data),
                       ("consensus_vs_time", positive)):
        with open(os.path.join(d, fig + ".svg")) as f:
            svg = f.read()
        legend = [a for a in algs if "<text>%s</text>" % a in svg]
        assert legend == names, (fig, legend, names)  # an entry only with a line
        if fig == "accuracy_vs_time":  # the worst nodes' dotted lines, with their entries
            drawn = [a for a in algs if "<text>%s worst node</text>" % a in svg]
            assert drawn == worst, (drawn, worst)
        assert spec_name + ": " in svg, (fig, spec_name)  # the scenario in the title
        bands = len(re.findall(r"fill-opacity = '0.200000'", svg))
        # a band whose min is zero somewhere may have no area on the log scale
        want = (1 if names else 0) if fig == "consensus_vs_time" else len(names)
        assert bands >= want, (fig, bands, names)
    return with_data, positive


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
        # the least accuracy of the nodes' own models, where the run scored them
        worst = [r["final"].get("node_test_accuracy_min", 0.0) for r in reports
                 if r["final"].get("nodes_evaluated", 0) > 0]
        for key, xs in (("final_accuracy", acc), ("worst_node_accuracy", worst),
                        ("gradients", grads),
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
        with open(os.path.join(d, f"{algs[0]}_seed{cj['seeds'][0]}", "report.json")) as f:
            spec_name = json.load(f)["name"]
        lines, cons = check_bands(d, algs, curves, spec_name)
        print("bands: %s drawn (consensus: %s), legend entries only for them" % (
            ",".join(lines), ",".join(cons) or "none"))
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
