"""`atrain calibrate` (apps/src/calibrate.cpp): a probe of the a9a quickstart
across 2 local `atrain node` processes, then checks of the twin it writes
against the probe's own report, read here independently:
- the twin's notes give every node's per_node seconds_per_gradient, and that
  figure is physical: gradients x seconds each fit in the probe's time;
- cost.tau_per_node makes the twin compute, in the probe's budget and without
  faults, each node's gradients of the probe within 20 %;
- link.latency_seconds is half the median round trip of the routes that
  crossed processes (there are some: 4 nodes on 2 hosts);
- cost.start_seconds is when the probe's nodes began computing: the first
  evaluation with gradients, extrapolated back at the rate to the next one;
  and in the twin run with a start-up (that + 0.5 s) no step completes before it;
- cost.message_seconds is the senders' coding time per packet between
  processes (the spec codes in bf16 here), recomputed; and per node the CPU
  figures are ordered (gradient CPU <= process CPU, <= gradient wall);
- link.window is 4 (the outbox's), and in the twin's own run every route's
  round trip is 2 x latency (plus the packet's wait to leave its sender),
  its packets fit the window (at most 4 per round
  trip), its sends add up (packets + merged + dropped + waiting), and a
  second run gives the same trace hash;
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
                    "--set", "cost.real_min_seconds=0.002", "--set", straggle,
                    "--set", "link.codec={kind: BF16}"],
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
noted = {int(i): float(ms) / 1e3 for i, ms in
         re.findall(r"^# node (\d+): \d+ gradients, ([0-9.e+-]+) ms each", text, re.M)}
check(len(taus) == 4 and len(noted) == 4 and
      all(abs(noted[i] - spg[i]) <= 1e-3 * spg[i] for i in spg),
      "the notes give the probe's seconds per gradient per node: %s vs %s" % (noted, spg))
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
rows = rep["metrics"]
first = next(i for i, m in enumerate(rows) if m.get("gradients", 0) > 0)
a, b = rows[first], rows[first + 1]
rate = (b["gradients"] - a["gradients"]) / (b["time_seconds"] - a["time_seconds"])
expect = max(0.0, a["time_seconds"] - a["gradients"] / rate)
st = re.search(r"start_seconds: ([0-9.e+-]+)", text)
start = float(st.group(1)) if st else 0.0  # the text format leaves out a 0
check(abs(start - expect) <= 1e-6 * max(1.0, expect) and 0 <= start <= a["time_seconds"],
      "cost.start_seconds %.3f = the start extrapolated from the probe's first evaluations "
      "(%.3f; first gradients seen at %.2f s)" % (start, expect, a["time_seconds"]))
# cost.message_seconds, recomputed from the probe's report: the senders'
# seconds coding the packets between processes (bf16) over their number.
routes_all = [w for n in rep["per_node"] for w in n.get("wire", [])]
coding = sum(w.get("code_seconds", 0.0) for w in routes_all)
packets = sum(int(w.get("packets", 0)) for w in routes_all)
expect_ms = coding / packets if packets else 0.0
ms = re.search(r"^\s*message_seconds: ([0-9.e+-]+)", text, re.M)
cpu = {n["node"]: (n.get("process_cpu_seconds", 0.0), n.get("gradient_cpu_seconds", 0.0),
                   n.get("gradient_wall_seconds", 0.0)) for n in rep["per_node"]}
check(ms and expect_ms > 0 and abs(float(ms.group(1)) - expect_ms) <= 1e-6 * expect_ms and
      all(0 < g <= c and 0 < g <= w * 1.05 for c, g, w in cpu.values()),
      "cost.message_seconds %s = the senders' %.4f s coding %d packets over their number (%.3g); "
      "per node (process CPU, gradient CPU, gradient wall) %s" % (
          ms.group(1) if ms else "missing", coding, packets, expect_ms, cpu))
check("clock: VIRTUAL" in text and "deploy {" not in text and "factor: 3" in text,
      "the twin: virtual clock, no deploy block, the straggle kept")

# The engine's side, with a start-up it must honour whatever the probe gave.
hold = start + 0.5
out = os.path.join(tmp, "twin_run")
r = subprocess.run([atrain, "run", twin, "--no-progress", "--out", out, "--set",
                    "stop.time_seconds=%g" % (hold + 2), "--set", "eval.period_seconds=0.1",
                    "--set", "cost.start_seconds=%r" % hold],
                   capture_output=True, text=True, timeout=120)
rep2 = json.load(open(os.path.join(out, "report.json"))) if r.returncode == 0 else {}
check(r.returncode == 0 and rep2.get("clock") == "VIRTUAL" and rep2.get("gradients_total", 0) > 0,
      "atrain run TWIN: exit %d, %s clock, %s gradients" % (
          r.returncode, rep2.get("clock"), rep2.get("gradients_total")))
out = os.path.join(tmp, "twin_rates")
r = subprocess.run([atrain, "run", twin, "--no-progress", "--out", out, "--set", "faults={}",
                    "--set", "stop.time_seconds=%g" % dur, "--set", "stop.stop_at_target=false"],
                   capture_output=True, text=True, timeout=120)
rep3 = json.load(open(os.path.join(out, "report.json"))) if r.returncode == 0 else {}
tg = {n["node"]: n["gradients"] for n in rep3.get("per_node", [])}
check(len(tg) == 4 and all(abs(tg[i] - grads[i]) <= 0.2 * grads[i] for i in grads),
      "the twin without faults computes each node's probe gradients within 20%%: %s vs %s" % (
          tg, grads))
# R-FAST's initial gradients (z = g0) are computed at time 0, outside the cost model.
rows2 = rep2.get("metrics", [{}])
g0 = rows2[0].get("gradients", 0)
win = re.search(r"^\s*window: (\d+)", text, re.M)
check(win and int(win.group(1)) == 4, "link.window = 4 in the twin (%s)" % (
    win.group(1) if win else "missing"))
latency = float(lat.group(1)) if lat else 0.0
routes = [w for n in rep3.get("per_node", []) for w in n.get("wire", [])]
bound = 4 * (dur / (2 * latency) + 1) if latency > 0 else 0
# A round trip is 2 x latency after the packet left: it waits cost.message_seconds
# behind each packet its node sent before it (at most one per route and step).
depart = float(ms.group(1)) if ms else 0.0
per_node_routes = max(len(n.get("wire", [])) for n in rep3.get("per_node", [{}]))
check(routes and all(-1e-6 * latency - 2e-9 <= w["round_trip_seconds"] - 2 * latency <=
                     2 * per_node_routes * depart + 1e-6 * latency + 2e-9 and
                     w["packets"] <= bound and
                     w["sends"] == w["packets"] + w.get("merged", 0) + w.get("dropped", 0) +
                     w.get("waiting", 0) for w in routes),
      "the twin's %d routes: round trip 2 x latency (+ the packets' wait to leave), at most "
      "%.0f packets each, sends add up (%s)" % (len(routes), bound, [(w["sends"], w["packets"], w.get("merged", 0),
                                      w["round_trip_seconds"]) for w in routes[:2]]))
r = subprocess.run([atrain, "run", twin, "--no-progress", "--out", out + "_again", "--set",
                    "faults={}", "--set", "stop.time_seconds=%g" % dur, "--set",
                    "stop.stop_at_target=false"], capture_output=True, text=True, timeout=120)
again = json.load(open(os.path.join(out + "_again", "report.json"))) if r.returncode == 0 else {}
check(again.get("trace_hash") and again.get("trace_hash") == rep3.get("trace_hash"),
      "the twin with its window replays: trace hash %s twice" % rep3.get("trace_hash"))
before = [m.get("gradients", 0) for m in rows2 if m["time_seconds"] < hold]
after = [m.get("gradients", 0) for m in rows2 if m["time_seconds"] >= hold + 2 * max(taus)]
check(before and all(g == g0 for g in before) and after and min(after) > g0,
      "the twin steps only after its start-up: %d evaluations before %.2f s see the %d "
      "initial gradients, every one from start + 2 tau on sees more" % (len(before), hold, g0))

# A window that binds: R-FAST on a9a (tau 10 ms) over 50 ms links, one packet
# per route per 0.1 s round trip; the nodes fold and the mass stays conserved.
out = os.path.join(tmp, "window1")
r = subprocess.run([atrain, "run", "config/quickstart.textproto", "--no-progress", "--out", out,
                    "--set", "link.latency_seconds=0.05", "--set", "link.window=1", "--set",
                    "stop.time_seconds=2", "--set", "stop.stop_at_target=false"],
                   capture_output=True, text=True, timeout=120)
rep4 = json.load(open(os.path.join(out, "report.json"))) if r.returncode == 0 else {}
routes = [w for n in rep4.get("per_node", []) for w in n.get("wire", [])]
grads = [n["gradients"] for n in rep4.get("per_node", [])]
check(routes and all(w["packets"] <= 2 / 0.1 + 1 for w in routes) and min(grads) > 40 and
      rep4.get("mass_residual", 1) < 1e-6,
      "link.window=1 over 50 ms links: at most 21 packets per route in 2 s (max %s), %s gradients "
      "per node, mass residual %s" % (max((w["packets"] for w in routes), default=None),
                                      min(grads, default=0), rep4.get("mass_residual")))

if failures:
    sys.exit("calibrate_test FAILED: %d checks" % len(failures))
print("calibrate_test OK")
