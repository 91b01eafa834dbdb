"""`atrain calibrate` (apps/src/calibrate.cpp): a probe of the a9a quickstart
across 2 local `atrain node` processes, then checks of the twin it writes
against the probe's own report, read here independently:
- every node's cost.tau_per_node is its per_node seconds_per_gradient, and
  that figure is physical: gradients x seconds each fit in the probe's time;
- link.latency_seconds is half the median round trip of the routes that
  crossed processes (there are some: 4 nodes on 2 hosts);
- the twin is on the virtual clock and keeps the spec's faults (the probe
  ran without them), and `atrain run TWIN` completes.
usage: calibrate_test.py ATRAIN   (from the source root)"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

atrain = sys.argv[1]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


tmp = tempfile.mkdtemp(prefix="atrain_calibrate_")
twin = os.path.join(tmp, "twin.textproto")
straggle = "faults.straggle=[{node: 1 factor: 3 from_seconds: 0}]"
r = subprocess.run([atrain, "calibrate", "config/quickstart.textproto", "--local", "2",
                    "--seconds", "3", "--out", twin, "--no-progress", "--set", "nodes=4",
                    "--set", "cost.real_min_seconds=0.002", "--set", straggle],
                   capture_output=True, text=True, timeout=120)
check(r.returncode == 0 and os.path.exists(twin),
      "calibrate --local 2: exit %d, twin written (%s)" % (r.returncode, r.stderr[-300:]))
if r.returncode != 0:
    sys.exit("calibrate_test FAILED")
with open(twin + ".probe/report.json") as f:
    rep = json.load(f)
text = open(twin).read()

check(rep["clock"] == "REAL" and not rep.get("faults"), "the probe ran on the REAL clock, "
      "without the spec's faults (%s, %d fault records)" % (rep["clock"], len(rep.get("faults", []))))
spg = {n["node"]: n["seconds_per_gradient"] for n in rep["per_node"]}
grads = {n["node"]: n["gradients"] for n in rep["per_node"]}
taus = [float(x) for x in re.findall(r"^\s*tau_per_node: ([0-9.e+-]+)", text, re.M)]
check(len(taus) == 4 and all(abs(t - spg[i]) <= 1e-9 * spg[i] for i, t in enumerate(taus)),
      "tau_per_node = the probe's seconds per gradient per node: %s vs %s" % (taus, spg))
dur = rep["duration_seconds"]
check(all(0.002 * (1 - 1e-9) <= spg[i] and grads[i] * spg[i] <= dur * 1.05 for i in spg),
      "each node's gradients fit in the probe's %.2f s at >= real_min 2 ms each: %s" % (
          dur, {i: round(grads[i] * spg[i], 2) for i in spg}))
trips = [w["round_trip_seconds"] for n in rep["per_node"] for w in n.get("wire", [])
         if w["round_trip_seconds"] > 0]
lat = re.search(r"latency_seconds: ([0-9.e+-]+)", text)
check(len(trips) > 0 and lat and abs(float(lat.group(1)) - statistics.median(trips) / 2) <=
      1e-9 * statistics.median(trips),
      "link.latency_seconds = half the median of %d round trips (%s)" % (
          len(trips), lat.group(1) if lat else "missing"))
check("clock: VIRTUAL" in text and "deploy {" not in text and "factor: 3" in text,
      "the twin: virtual clock, no deploy block, the straggle kept")

out = os.path.join(tmp, "twin_run")
r = subprocess.run([atrain, "run", twin, "--no-progress", "--out", out, "--set",
                    "stop.time_seconds=2"], capture_output=True, text=True, timeout=120)
rep2 = json.load(open(os.path.join(out, "report.json"))) if r.returncode == 0 else {}
check(r.returncode == 0 and rep2.get("clock") == "VIRTUAL" and rep2.get("gradients_total", 0) > 0,
      "atrain run TWIN: exit %d, %s clock, %s gradients" % (
          r.returncode, rep2.get("clock"), rep2.get("gradients_total")))

if failures:
    sys.exit("calibrate_test FAILED: %d checks" % len(failures))
print("calibrate_test OK")
