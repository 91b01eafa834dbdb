#!/usr/bin/env python3
"""Checkpoints and resume of multi-host runs (README "Checkpoint and resume"),
2 `atrain node` hosts on 127.0.0.1 and the driver:

- R-FAST and Ring-AllReduce take a checkpoint every 0.25 s (the ring 0.125 s) across the hosts;
  each file alone
  (decoded by protoc against messages/atrain.proto) holds every node's state:
  8 nodes, the model's parameters each, gradient counters > 0, all finite;
  R-FAST: every pushed tracker mass arrived (in-neighbour sequence numbers
  equal the senders' pushes) and the tracker-mass identity holds (sum z +
  sum c_ij (rho_j - rho~_ij) = sum g_prev, c from `atrain topology`);
  AllReduce (WAIT): every node at the same ring step, one gradient per step,
  the same model;
- a checkpoint (the first of models well above x^0's accuracy) resumed across
  2 fresh host processes continues: the report says where from, the first
  evaluation after the resume (before the nodes go on) has the saved gradient
  count and scores what the file's models score on a9a.t (computed here from
  the file), gradients count on, and the run reaches the target;
- a checkpoint resumed with another host count is refused before any host is
  contacted; a host whose data do not fit its part ends the run naming it;
  a host frozen (SIGSTOP) before a barrier ends the run naming the host and
  the barrier (no hang); a host lost earlier, in a run that went on without
  it, ends the run at the barrier naming it.

Real-clock runs across processes are not bit-identical: only the state's
consistency and the continuation are checked, not equality with an
uninterrupted run.

usage: checkpoint_host_test.py ATRAIN [PROTOC]"""
import gzip
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hosts import Cluster, Host, check, finish, report  # noqa: E402

atrain = sys.argv[1]
protoc = sys.argv[2] if len(sys.argv) > 2 else "protoc"
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, "..", ".."))

# Gradients paced to >= 10 ms (8 nodes: ~800/s): the target (0.84) comes
# after 2-4 s. Checkpoints every EVERY s to TAKEN s; R-FAST with step 0.5:
# across processes step 1 swings by +-0.05 between evaluations
# (docs/PERFORMANCE.md), too much to compare two of them.
EVERY = 0.25
# Ring-AllReduce at its a9a step swings between 0.74 and 0.84 from one ring
# step to the next (the same at every speed, per gradient), so at 0.25 s an
# ASan build sometimes saves only low points before the first 0.84 (2 of 3
# runs on 2026-12-06): twice as many chances.
EVERY_OF = {"rfast": EVERY, "allreduce": EVERY / 2}
TAKEN = 2.0
# The hurt runs' checkpoint: late enough that a host hurt right after the
# first evaluation (0.4-1.5 s, by the load) is hurt before it.
LATE = 2.5
PACED = ["clock=REAL", "cost.real_min_seconds=0.01", "eval.period_seconds=0.1",
         "stop.target_accuracy=0.84"]
# On the symmetric EXPONENTIAL graph the file's swings were measured on (the
# config's DIRECTED_EXPONENTIAL mixes more slowly: larger swings across processes).
TUNED = {"rfast": ["algorithm.rfast.step_size=0.5", "topology.builder=EXPONENTIAL"],
         "allreduce": []}


# ---- reading a checkpoint file without atrain

def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


def parse_text(lines):
    """protoc's text format -> dict of field -> list of values (numbers,
    strings, enum names, nested dicts)."""
    out, stack = {}, []
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line == "}":
            out = stack.pop()
            continue
        if line.endswith("{"):
            child = {}
            out.setdefault(line[:-1].strip(), []).append(child)
            stack.append(out)
            out = child
            continue
        key, value = line.split(":", 1)
        value = value.strip()
        if value.startswith('"'):
            value = value[1:-1]
        else:
            try:
                value = int(value)
            except ValueError:
                try:
                    value = float(value)
                except ValueError:
                    pass  # an enum name, true/false
        out.setdefault(key, []).append(value)
    return out


def read_checkpoint(path):
    """The file's Checkpoint as a dict ({} when the framing or the checksum
    is wrong: magic ATRCKPT2, length, payload, FNV-1a 64 of the payload)."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[8:16]) if len(data) >= 16 else (0,)
    payload = data[16:16 + length]
    if data[:8] != b"ATRCKPT2" or len(data) != 24 + length or \
            fnv1a64(payload) != struct.unpack("<Q", data[16 + length:])[0]:
        return {}
    text = subprocess.run([protoc, "--decode=atrain.proto.Checkpoint", "-I",
                           os.path.join(root, "messages"), "atrain.proto"],
                          input=payload, capture_output=True, check=True).stdout
    return parse_text(text.decode().splitlines())


def one(d, key, default=0):
    return d.get(key, [default])[0]


def floats(d, key):
    return [float(v) for v in d.get(key, [])]


def c_weights(spec, sets):
    """c_ij = 1 / (|out_C(j)| + 1) for j -> i in G_C (column-stochastic
    push weights, as topology/weights.hpp defines them), from the edges
    `atrain topology` prints."""
    cmd = [atrain, "topology", spec]
    for s in sets:
        cmd += ["--set", s]
    text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    edges = [tuple(map(int, m)) for m in re.findall(r"^\s+C (\d+) -> (\d+)$", text, re.M)]
    out_degree = {}
    for j, _ in edges:
        out_degree[j] = out_degree.get(j, 0) + 1
    return {(i, j): 1.0 / (out_degree[j] + 1) for j, i in edges}


def read_libsvm(path):
    rows = []
    with gzip.open(path, "rt") as f:
        for line in f:
            parts = line.split()
            if parts:
                rows.append((parts[0] in ("1", "+1"),
                             [(int(i) - 1, float(v)) for i, v in (p.split(":") for p in parts[1:])]))
    return rows


def accuracy(params, rows):
    """Logistic regression [w, b]: predicts the positive class when w.x + b > 0."""
    w, b = params[:-1], params[-1]
    return sum((b + sum(w[i] * v for i, v in x) > 0) == y for y, x in rows) / len(rows)


def node_average(ck):
    nodes = ck["nodes"]
    sums = [0.0] * len(nodes[0]["params"])
    for s in nodes:
        for k, v in enumerate(floats(s, "params")):
            sums[k] += v
    return [v / len(nodes) for v in sums]


def facts_common(ck, dim):
    """What every file must show: (problems, total gradients)."""
    nodes = ck.get("nodes", [])
    grads = [one(one(s, "compute", {}), "gradients") for s in nodes]
    bad = []
    if len(nodes) != 8 or [one(s, "node") for s in nodes] != list(range(8)):
        bad.append("not all 8 nodes")
    if sorted({len(s.get("params", [])) for s in nodes}) != [dim] or one(ck, "dimension") != dim:
        bad.append("a model without %d parameters" % dim)
    if not grads or min(grads) == 0:
        bad.append("a gradient counter at 0")
    if not all(math.isfinite(v) for s in nodes for v in floats(s, "params")) or \
            not all(math.isfinite(v) for s in nodes for key in ("tracker", "g_prev", "rho")
                    for v in floats(one(s, "rfast", {}), key)):
        bad.append("a value not finite")
    return bad, sum(grads)


FOLDED = [0]  # wakes that folded, over every R-FAST file (what the check covered)


def facts_rfast(ck, c):
    """(problems, relative residual of the tracker-mass identity)."""
    nodes = ck["nodes"]
    dim = one(ck, "dimension")
    lhs, rhs = [0.0] * dim, [0.0] * dim
    bad = []
    part = [one(s, "rfast", {}) for s in nodes]  # R-FAST's own part of each node
    for s, own in zip(nodes, part):
        i = one(s, "node")
        for k, (z, g) in enumerate(zip(floats(own, "tracker"), floats(own, "g_prev"))):
            lhs[k] += z
            rhs[k] += g
        for m in own.get("mass_in", []):
            j = one(m, "node")
            sender = part[j]
            if one(m, "seq") != one(sender, "pushes") or floats(m, "rho_hat") != floats(sender, "rho"):
                bad.append("node %d misses a push of node %d" % (i, j))
            used = floats(m, "rho_hat") if one(m, "consumed_all", "false") == "true" \
                else floats(m, "rho_tilde")
            for k, (r, u) in enumerate(zip(floats(sender, "rho"), used)):
                lhs[k] += c[(i, j)] * (r - u)
        # Held with nothing in flight: every gradient computed is tracked
        # (x^0's, one per wake) or folded (a wake that did not step, its sum
        # saved while it waits for the next step).
        folded = one(own, "folded_total")
        FOLDED[0] += folded
        if one(one(s, "compute", {}), "gradients") != one(s, "wakes") + 1 + folded or \
                one(own, "tracks") != one(s, "wakes"):
            bad.append("node %d: gradients != wakes + 1 + folded or tracks != wakes" % i)
        if len(floats(own, "folded")) != (dim if one(own, "folded_n") else 0):
            bad.append("node %d: %d folded values for %d gradients" % (
                i, len(floats(own, "folded")), one(own, "folded_n")))
    err = max(abs(a - b) for a, b in zip(lhs, rhs)) / max(1.0, max(abs(b) for b in rhs))
    if not err < 1e-9:
        bad.append("mass residual %.2e" % err)
    return bad, err


def facts_allreduce(ck):
    nodes = ck["nodes"]
    steps = [one(one(s, "ring", {}), "round") for s in nodes]
    bad = []
    if len(set(steps)) != 1 or any(one(s, "wakes") != steps[0] or
                                   one(one(s, "compute", {}), "gradients") != steps[0]
                                   for s in nodes):
        bad.append("ring steps %s" % steps)
    if any(floats(s, "params") != floats(nodes[0], "params") for s in nodes):
        bad.append("models differ")
    return bad, steps[0]


# ---- the runs

def resumed_checks(label, rep, ck, saved_grads, saved, initial):
    at = one(ck, "time_seconds")
    rows = rep.get("metrics", [])
    after = [m for m in rows if m["time_seconds"] > at + 1e-9]
    check(rep.get("resumed_at_seconds") == at and rep.get("resumed_from", "").endswith(".ckpt"),
          "%s: resumed from %s at t=%.3f s" % (label, os.path.basename(rep.get("resumed_from", "?")),
                                               rep.get("resumed_at_seconds", -1)))
    first = after[0] if after else {"test_accuracy": 0, "gradients": 0, "time_seconds": 0}
    check(int(rep.get("gradients_total", 0)) > saved_grads,
          "%s: gradients counted on from the saved %d (%d at the end)" % (
              label, saved_grads, int(rep.get("gradients_total", 0))))
    # Resumed after its next evaluation was due (the hosts prepared: 0.3 s
    # and more here), the run evaluates the restored models before they go
    # on: that row is the file's state, scored independently here from the
    # file (float32 in atrain, float64 here: a row or two of a9a.t may
    # differ). Hosts up before it was due (a fast machine): the row comes at
    # its time, after some training, close to the file's score.
    due = one(one(ck, "evaluator", {}), "next_eval_ns") * 1e-9
    before_go = int(first["gradients"]) == saved_grads
    check(abs(first["test_accuracy"] - saved) < 0.002 if before_go else
          first["time_seconds"] >= due and abs(first["test_accuracy"] - saved) < 0.02,
          "%s: the first evaluation after the resume (t=%.2f s, %s, %d gradients) scores %.4f: "
          "the saved models' average scores %.4f (from the file), x^0 %.4f" % (
              label, first["time_seconds"], "before the go" if before_go else
              "after the go, due at %.2f s" % due, int(first["gradients"]),
              first["test_accuracy"], saved, initial))
    check(rep.get("time_to_target", 0) > at and rep.get("stop_reason") == "target accuracy reached",
          "%s: reaches %.3f at t=%s s (%s)" % (label, rep.get("target_accuracy", 0),
                                               rep.get("time_to_target"), rep.get("stop_reason")))


def take_and_resume(algo, work, test_rows):
    """A checkpoint every EVERY_OF[algo] s to TAKEN s across 2 hosts; every file is
    checked; the first one whose models are well above x^0 (>= 0.045 in
    accuracy: on a loaded machine the hosts start late and the first files
    are of barely trained models) and before the target is resumed."""
    spec = "config/algorithms/%s.textproto" % algo
    files = os.path.join(work, algo + "_{k}.ckpt")
    task = PACED + TUNED[algo]
    every = EVERY_OF[algo]
    c = Cluster(atrain, 2)
    try:
        out = os.path.join(work, algo + "_taken")
        r = c.run(spec, task + ["checkpoint.every_seconds=%g" % every, "checkpoint.file=" + files,
                                "stop.stop_at_target=false", "stop.time_seconds=%g" % TAKEN], out)
        rep = report(out) if os.path.exists(os.path.join(out, "report.json")) else {}
        taken = rep.get("checkpoints", [])
        drains = [t["drain_seconds"] for t in taken] or [-1]
        due = [k * every for k in range(1, 100) if k * every < TAKEN]  # every multiple before the stop
        # A multiple that comes due during a barrier is queued and taken after it, in
        # order; under ASan drains (0.6-0.9 s) outlast the period, and the stop at TAKEN
        # leaves the last queued ones untaken. So: a prefix of the multiples, none
        # skipped, at least 3 of them.
        requested = [t["requested_seconds"] for t in taken]
        check(r.returncode == 0 and requested == due[:len(requested)] and len(requested) >= 3,
              "%s: %d checkpoints across 2 hosts every %g s to %g s (drain %.1f-%.1f ms, %s-%s bytes)%s"
              % (algo, len(taken), every, TAKEN, 1e3 * min(drains), 1e3 * max(drains),
                 min((t["bytes"] for t in taken), default="?"),
                 max((t["bytes"] for t in taken), default="?"),
                 "" if r.returncode == 0 else ": " + (r.stdout + r.stderr)[-500:]))
    finally:
        c.stop()
    initial = accuracy([0.0] * 124, test_rows)
    c_ij = c_weights(spec, task) if algo == "rfast" else None
    problems, worst, chosen = [], 0.0, None
    for t in taken:
        ck = read_checkpoint(t["file"])
        if not ck:
            problems.append("%s: framing or checksum wrong" % os.path.basename(t["file"]))
            continue
        bad, grads = facts_common(ck, 124)
        if algo == "rfast":
            more, err = facts_rfast(ck, c_ij)
            worst = max(worst, err)
        else:
            more, _ = facts_allreduce(ck)
        placement = ck["spec"][0].get("deploy", [{}])[0].get("placement", [])
        if placement != [0, 1] * 4:
            more.append("deploy placement %s recorded" % placement)
        problems += ["%s: %s" % (os.path.basename(t["file"]), b) for b in bad + more]
        if chosen is None:
            saved = accuracy(node_average(ck), test_rows)
            before = [m for m in rep["metrics"] if m["time_seconds"] <= t["taken_seconds"]]
            if saved - initial >= 0.045 and all(m["test_accuracy"] < 0.84 for m in before):
                chosen = (t["file"], ck, grads, saved)
    what = {"rfast": "every node holds its in-neighbours' latest tracker mass (seq = the sender's "
                     "pushes, rho^ = its rho: nothing was in flight between processes), gradients "
                     "= wakes + 1 + folded, tracks = wakes, sum z + sum c_ij (rho_j - rho~_ij) = sum g_prev "
                     "(worst relative residual %.1e; %d folded wakes in the files)" % (
                         worst, FOLDED[0]),
            "allreduce": "every node at one ring step with one gradient per step and one model "
                         "(WAIT)"}[algo]
    check(taken and not problems,
          "%s: every file (framed, checksum right, decoded by protoc) holds 8 nodes' states, 124 finite parameters each, "
          "gradient counters > 0, the deploy as run; %s%s" % (
              algo, what, ": " + "; ".join(problems[:4]) if problems else ""))
    check(chosen is not None, "%s: a checkpoint of models >= 0.045 above x^0's accuracy (%.4f), "
                              "before the target: %s" % (
                                  algo, initial, os.path.basename(chosen[0]) if chosen else "none"))
    if chosen is None:
        return None
    file, ck, grads, saved = chosen
    # Fresh host processes (new ports): the addresses may change.
    c = Cluster(atrain, 2)
    try:
        out = os.path.join(work, algo + "_resumed")
        r = c.run(spec, task + ["stop.time_seconds=%g" % (TAKEN + 10)], out,
                  extra=["--secret-file", c.secret, "--resume", file])
        rep = report(out) if os.path.exists(os.path.join(out, "report.json")) else {}
        check(r.returncode == 0 and all("resumed from" in h.text() for h in c.hosts),
              "%s: resumed across 2 fresh hosts (each host logs the resume)%s" % (
                  algo, "" if r.returncode == 0 else ": " + (r.stdout + r.stderr)[-500:]))
        resumed_checks(algo, rep, ck, grads, saved, initial)
    finally:
        c.stop()
    return file


def errors(file, work):
    spec = "config/algorithms/rfast.textproto"
    # Another host count: refused before any host is contacted.
    c = Cluster(atrain, 1)
    try:
        r = c.run(spec, PACED + TUNED["rfast"] + ["stop.time_seconds=%g" % (TAKEN + 10)],
                  os.path.join(work, "one"),
                  extra=["--secret-file", c.secret, "--resume", file])
        check(r.returncode == 2 and "was taken across 2 hosts; this run would run across 1 host" in
              r.stderr and "spawned" not in c.hosts[0].text(),
              "another host count is refused before any host is contacted (exit %d): %s" % (
                  r.returncode, r.stderr.strip()[:160]))
    finally:
        c.stop()
    # A host whose a9a differs (the first 20000 rows: other shards) cannot
    # apply its part: the driver ends naming it.
    other = tempfile.mkdtemp(prefix="atrain_other_data_")
    os.makedirs(os.path.join(other, "config", "algorithms"))
    os.makedirs(os.path.join(other, "data"))
    with gzip.open(os.path.join(root, "data", "a9a.gz"), "rt") as f:
        rows = f.readlines()[:20000]
    with gzip.open(os.path.join(other, "data", "a9a.gz"), "wt") as f:
        f.writelines(rows)
    shutil.copy(os.path.join(root, "data", "a9a.t.gz"), os.path.join(other, "data"))
    c = Cluster(atrain, 1)
    try:  # host 1 with its own data root, same secret
        c.hosts.append(Host(atrain, c.dir, "host1_other", ["--secret-file", c.secret, "--data-root",
                                                          os.path.join(other, "config", "algorithms")]))
        r = c.run(spec, PACED + TUNED["rfast"] + ["stop.time_seconds=%g" % (TAKEN + 10)],
                  os.path.join(work, "odd"),
                  extra=["--secret-file", c.secret, "--resume", file])
        err = report(os.path.join(work, "odd")).get("error", "") if r.returncode == 1 else r.stderr
        name = c.hosts[1].address
        check(r.returncode == 1 and ("host " + name) in err and "cannot resume" in err and
              "node 1: the sampler's order is not a permutation of the node's shard" in err,
              "a host that cannot apply its part ends the run naming it (exit %d): %s" % (
                  r.returncode, err[:260]))
    finally:
        c.stop()
        shutil.rmtree(other, ignore_errors=True)


def frozen_during_barrier(work):
    """Host 1 frozen (SIGSTOP) right after the first evaluation, the
    checkpoint at LATE s: the barrier cannot finish; 4 s without heartbeats
    (after LATE s) lose the host during the barrier, which ends the run
    naming it (R-FAST would otherwise go on without its nodes). SIGCONT 6 s
    after the freeze: the driver's exit waits for its connections' close."""
    c = Cluster(atrain, 2)
    try:
        victim = c.hosts[1]
        out = os.path.join(work, "frozen")
        file = os.path.join(work, "frozen.ckpt")
        d, _ = c.run_hurt("config/algorithms/rfast.textproto",
                          PACED + TUNED["rfast"] + ["stop.stop_at_target=false",
                                                    "stop.time_seconds=30",
                                                    "checkpoint.at_seconds=[%g]" % LATE,
                                                    "checkpoint.file=" + file], out, 0,
                          lambda: victim.proc.send_signal(signal.SIGSTOP),
                          lambda: victim.proc.send_signal(signal.SIGCONT), 6)
        err = d.report.get("error", "")
        check(d.returncode == 1 and ("host " + victim.address + " lost") in err and
              "during a checkpoint barrier" in err and not os.path.exists(file),
              "a host frozen before the barrier ends the run naming it (exit %s, run time %.2f s): %s"
              % (d.returncode, d.report.get("duration_seconds", -1), err[:200]))
    finally:
        c.stop()


def lost_before_barrier(work):
    """DASGD goes on without a host killed right after the first
    evaluation; its checkpoint at LATE s ends the run at once, naming the
    host (it used to wait out the drain poll's 10 s reply timeout)."""
    c = Cluster(atrain, 3)
    try:
        victim = c.hosts[2]
        d, _ = c.run_hurt("config/algorithms/dasgd.textproto",
                          PACED + ["stop.stop_at_target=false", "stop.time_seconds=30",
                                   "checkpoint.at_seconds=[%g]" % LATE,
                                   "checkpoint.file=" + os.path.join(work, "lost.ckpt")],
                          os.path.join(work, "lost"), 0,
                          lambda: victim.proc.send_signal(signal.SIGKILL), lambda: None, 0)
        err = d.report.get("error", "")
        check(d.returncode == 1 and ("host " + victim.address + " was lost earlier") in err and
              abs(d.report.get("duration_seconds", 0) - LATE) < 0.05,
              "a host lost before the barrier (the run went on) ends the run at the barrier, "
              "t=%.3f s, naming it: %s" % (d.report.get("duration_seconds", -1), err[:160]))
    finally:
        c.stop()


work = tempfile.mkdtemp(prefix="atrain_ckpt_hosts_")
try:
    test_rows = read_libsvm(os.path.join(root, "data", "a9a.t.gz"))
    files = [take_and_resume(a, work, test_rows) for a in ("rfast", "allreduce")]
    if files[0]:
        errors(files[0], work)
    frozen_during_barrier(work)
    lost_before_barrier(work)
finally:
    shutil.rmtree(work, ignore_errors=True)
finish("checkpoint_host_test")
