#!/usr/bin/env python3
"""`atrain plot` on real short runs and on bad input.

  check_plot.py ATRAIN

Runs config/quickstart.textproto and config/faults/several.textproto for 2 s
of run clock, plots both and checks the PNG/SVG: the four panels' titles, one
shaded window per panel for every record of the report that has times (none
without faults), a metrics.csv whose time column is `time_seconds`, and the
refusals: no arguments, a missing directory, a missing report, a CSV without a
needed column (exit 2, naming it), gnuplot not on PATH (exit 1)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

atrain = os.path.abspath(sys.argv[1])
d = tempfile.mkdtemp(prefix="atrain_plot_")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(spec, out):
    r = subprocess.run([atrain, "run", spec, "--set", "stop.time_seconds=2", "--no-progress",
                        "--out", out], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit("%s did not run: %s" % (spec, r.stderr[-500:]))


def plot(*args, env=None):
    return subprocess.run([atrain, "plot"] + list(args), capture_output=True, text=True,
                          timeout=60, env=env)


PANELS = ("Test accuracy", "Training loss", "Consensus error", "Bytes sent")
SHADE = re.compile(r"<polygon fill = '[^']*' fill-opacity = '0.180000'")


def check_figure(fig, label, windows):
    for ext in ("png", "svg"):
        p = fig + "." + ext
        check(os.path.exists(p) and os.path.getsize(p) > 5000, "%s: %s written" % (label, p))
    with open(fig + ".svg") as f:
        svg = f.read()
    titles = [t for t in PANELS if "<text>%s</text>" % t in svg]
    check(len(titles) == 4, "%s: the SVG has the four panels' titles (%s)" % (label, titles))
    shades = len(SHADE.findall(svg))
    check(shades == 4 * windows, "%s: %d shaded windows in the SVG = 4 panels x %d windows" % (
        label, shades, windows))
    return svg


quick = os.path.join(d, "quick")
run("config/quickstart.textproto", quick)
r = plot(quick)
check(r.returncode == 0 and "run.{png,svg}" in r.stdout, "plot of a run without faults: " +
      (r.stdout + r.stderr).strip()[:150])
check_figure(os.path.join(quick, "run"), "no faults", 0)

faulty = os.path.join(d, "faults")
run("config/faults/several.textproto", faulty)
with open(os.path.join(faulty, "report.json")) as f:
    rep = json.load(f)
windows = len(rep.get("faults", [])) + len(rep.get("stragglers", [])) + len(
    rep.get("quarantined", []))
fig_dir = os.path.join(d, "figures")
r = plot(faulty, "--out", fig_dir)
check(r.returncode == 0, "plot --out of a run with faults: " + (r.stdout + r.stderr).strip()[:150])
svg = check_figure(os.path.join(fig_dir, "run"), "faults", windows)
check(windows >= 4 and "rgb(214,  39,  40)" in svg and "partition {0,1,2,3}" in svg,
      "faults: the partition window is shaded in its colour and listed (%d windows)" % windows)

# metrics.csv's columns by name, not position (an extra first column), and the
# older `time` header as well as `time_seconds`
renamed = os.path.join(d, "renamed")
shutil.copytree(quick, renamed)
csv = os.path.join(renamed, "metrics.csv")
with open(csv) as f:
    lines = f.read().splitlines()
cols = lines[0].split(",")
cols[cols.index("time_seconds")] = "time"
with open(csv, "w") as f:
    f.write("\n".join([",".join(["extra"] + cols)] + ["7," + l for l in lines[1:]]) + "\n")
r = plot(renamed)
check(r.returncode == 0 and os.path.getsize(os.path.join(renamed, "run.svg")) > 5000,
      "a metrics.csv with time_seconds (and another column first) plots: " + r.stderr.strip())

r = plot()
check(r.returncode == 2 and "RUN_DIR" in r.stderr, "no RUN_DIR: exit 2: " + r.stderr.strip())
missing = os.path.join(d, "no_such_run")
r = plot(missing)
check(r.returncode == 2 and missing in r.stderr and len(r.stderr.strip().splitlines()) == 1,
      "a missing directory: exit 2 naming it: " + r.stderr.strip())
noreport = os.path.join(d, "noreport")
shutil.copytree(quick, noreport)
os.remove(os.path.join(noreport, "report.json"))
r = plot(noreport)
check(r.returncode == 2 and "report.json" in r.stderr, "a missing report: exit 2: " +
      r.stderr.strip())
nocol = os.path.join(d, "nocol")
shutil.copytree(quick, nocol)
csv = os.path.join(nocol, "metrics.csv")
with open(csv) as f:
    rows = [l.split(",") for l in f.read().splitlines()]
k = rows[0].index("consensus_error")
with open(csv, "w") as f:
    f.write("\n".join(",".join(r[:k] + r[k + 1:]) for r in rows) + "\n")
r = plot(nocol)
check(r.returncode == 2 and "consensus_error" in r.stderr and csv in r.stderr,
      "a CSV without consensus_error: exit 2 naming the file and column: " + r.stderr.strip()[:160])
empty_path = tempfile.mkdtemp(prefix="atrain_nopath_")
r = plot(quick, env={"PATH": empty_path})
check(r.returncode == 1 and "gnuplot not found" in r.stderr,
      "gnuplot not on PATH: exit 1: " + r.stderr.strip()[:120])
r = plot(quick, "--bogus")
check(r.returncode == 2 and "--bogus" in r.stderr, "an unknown option: exit 2: " +
      r.stderr.strip())

if failures:
    sys.exit("check_plot: %d check(s) failed:\n  %s" % (len(failures), "\n  ".join(failures)))
shutil.rmtree(d)
print("check_plot OK")
