#!/usr/bin/env python3
"""The report's arithmetic, on the files of one `atrain run` (DIR):

- every integer of report.json is a JSON number (never a string), and the
  uint64 counters are ints;
- per-node messages and bytes add up to the totals;
- time_to_target: some metrics row at that time has test_accuracy >= target,
  and no earlier row does; final = the last row; best_test_accuracy = the
  best row;
- no two rows share a time;
- metrics.csv: the report's column names, the same rows as report.json;
- events.jsonl: one JSON object per line, the evaluations = the rows.

  check_report.py DIR [DIR...]
"""
import csv
import json
import os
import sys

COUNTERS = ["seed", "gradients_total", "messages_sent", "bytes_sent", "packets_dropped",
            "trace_events", "packets_replaced", "packets_rejected", "packets_retransmitted",
            "late_contributions", "packets_old_epoch", "nodes"]
COLUMNS = ["time_seconds", "gradients", "train_loss", "test_accuracy", "consensus_error",
           "messages", "bytes", "dropped", "node_test_accuracy_mean", "node_test_accuracy_min",
           "node_train_loss_max", "worst_node"]
NODE_COLUMNS = COLUMNS[8:11]


def fail(d, why):
    print(f"check_report FAILED: {d}: {why}")
    sys.exit(1)


def no_numeric_strings(d, x, where="report"):
    if isinstance(x, dict):
        for k, v in x.items():
            no_numeric_strings(d, v, where + "." + k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            no_numeric_strings(d, v, f"{where}[{i}]")
    elif isinstance(x, str) and x.strip().lstrip("-").isdigit() and not where.endswith("trace_hash"):
        fail(d, f"{where} is the string {x!r}: integers must be JSON numbers")


def check(d):
    with open(os.path.join(d, "report.json")) as f:
        r = json.load(f)
    no_numeric_strings(d, r)
    for k in COUNTERS:
        if not isinstance(r.get(k), int) or isinstance(r.get(k), bool):
            fail(d, f"{k} = {r.get(k)!r} is not a JSON integer")
    rows = r["metrics"]
    if len(rows) < 2:
        fail(d, f"only {len(rows)} metrics rows")
    for m in rows:
        for k in ("gradients", "messages", "bytes", "dropped"):
            if not isinstance(m[k], int):
                fail(d, f"metrics row {m} field {k} is not an integer")
    nodes = r["per_node"]
    for k in ("messages_sent", "bytes_sent"):
        total = sum(n[k] for n in nodes)
        if total != r[k]:
            fail(d, f"per-node {k} add up to {total}, the total says {r[k]}")
        parts = sum(n["buffer_" + k] for n in nodes)
        if parts > total:
            fail(d, f"buffer_{k} {parts} exceed {k} {total}")
    # One process: nothing crosses between processes (multi_host_test.py checks
    # the wire accounting where something does).
    if r.get("wire_packets") != 0 or r.get("wire_bytes") != 0 or \
            any(n.get("wire") for n in nodes):
        fail(d, f"one process, yet wire traffic: {r.get('wire_packets')} packets")
    times = [m["time_seconds"] for m in rows]
    if len(set(times)) != len(times):
        dup = sorted(t for t in set(times) if times.count(t) > 1)
        fail(d, f"rows share a time: {dup}")
    if times != sorted(times):
        fail(d, "rows out of time order")
    last = rows[-1]
    if last["test_accuracy"] != r["final"]["test_accuracy"] or \
            last["train_loss"] != r["final"]["train_loss"]:
        fail(d, f"final {r['final']} is not the last row {last}")
    if last["gradients"] != r["gradients_total"] or last["messages"] != r["messages_sent"] or \
            last["bytes"] != r["bytes_sent"]:
        fail(d, f"totals differ from the last row {last}")
    best = max(rows, key=lambda m: m["test_accuracy"])
    if r["best_test_accuracy"] != best["test_accuracy"]:
        fail(d, f"best_test_accuracy {r['best_test_accuracy']} != best row {best}")
    target = r["target_accuracy"]
    if "time_to_target" in r:
        at = [m for m in rows if m["time_seconds"] == r["time_to_target"]]
        if not at or at[0]["test_accuracy"] < target:
            fail(d, f"time_to_target {r['time_to_target']} has no row at or above {target}")
        if any(m["test_accuracy"] >= target for m in rows if m["time_seconds"] < r["time_to_target"]):
            fail(d, "an earlier row already met the target")
    elif target > 0 and any(m["test_accuracy"] >= target for m in rows):
        fail(d, "a row met the target but time_to_target is absent")
    with open(os.path.join(d, "metrics.csv")) as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != COLUMNS:
            fail(d, f"metrics.csv columns {reader.fieldnames}, expected {COLUMNS}")
        lines = list(reader)
    if len(lines) != len(rows):
        fail(d, f"metrics.csv has {len(lines)} rows, report.json {len(rows)}")
    for line, m in zip(lines, rows):
        if int(line["gradients"]) != m["gradients"] or \
                abs(float(line["time_seconds"]) - m["time_seconds"]) > 1e-6 * max(1, m["time_seconds"]):
            fail(d, f"metrics.csv row {line} differs from {m}")
        scored = m.get("nodes_evaluated", 0)
        if scored == 0:
            if any(line[c] != "" for c in NODE_COLUMNS + ["worst_node"]):
                fail(d, f"metrics.csv row {line} has node columns but no node was scored")
            continue
        lo, mean = m.get("node_test_accuracy_min", 0.0), m.get("node_test_accuracy_mean", 0.0)
        if not (0 <= lo <= mean + 1e-12 <= 1 + 1e-12) or m.get("worst_node", 0) >= r["nodes"] \
                or scored > r["nodes"]:
            fail(d, f"row at {m['time_seconds']} s: node figures out of order: {m}")
        for c in NODE_COLUMNS:
            if abs(float(line[c]) - m.get(c, 0.0)) > 1e-6 * max(1, abs(m.get(c, 0.0))):
                fail(d, f"metrics.csv {c} {line[c]} differs from report.json {m.get(c, 0.0)}")
        if int(line["worst_node"]) != m.get("worst_node", 0):
            fail(d, f"metrics.csv worst_node {line['worst_node']} differs from report.json")
    events = []
    with open(os.path.join(d, "events.jsonl")) as f:
        for i, line in enumerate(f):
            try:
                events.append(json.loads(line))
            except ValueError as e:
                fail(d, f"events.jsonl line {i + 1} is not JSON: {e}")
    kinds = [e["event"] for e in events]
    if kinds[0] != "start" or "stop" not in kinds:
        fail(d, f"events.jsonl: no start or no stop ({kinds[:3]}...)")
    stop = [e for e in events if e["event"] == "stop"][-1]
    if stop["reason"] != r["stop_reason"]:
        fail(d, f"stop event {stop} vs report stop_reason {r['stop_reason']}")
    evals = [e for e in events if e["event"] == "evaluation" and not e.get("replaces_previous")]
    if len(evals) != len(rows):
        fail(d, f"{len(evals)} evaluation events, {len(rows)} rows")
    return r, events


if __name__ == "__main__":
    for d in sys.argv[1:]:
        r, events = check(d)
        print(f"{d}: {r['clock']} {r['stop_reason']}, {len(r['metrics'])} rows, "
              f"{len(r['per_node'])} nodes, {len(events)} events, "
              f"{sorted({e['event'] for e in events})}")
    print("check_report OK")
