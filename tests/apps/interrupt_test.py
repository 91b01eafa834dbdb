#!/usr/bin/env python3
"""SIGTERM and SIGINT end `atrain run` cleanly, and its files stream.

A long run (REAL clock for SIGTERM, VIRTUAL for SIGINT) is started; once
metrics.csv has at least 2 rows WHILE the process still runs (the rows are
written as the run goes), the signal is sent. Then: exit status 143 / 130,
report.json with stop_reason "interrupted", its rows = metrics.csv's,
events.jsonl parsing line by line with the stop event last-but-evaluation,
and the report's arithmetic (check_report.py). A second signal right after
the first exits at once.

  interrupt_test.py ATRAIN OUT_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_report  # noqa: E402


def fail(why):
    print(f"interrupt_test FAILED: {why}")
    sys.exit(1)


def rows_in(path):
    try:
        with open(path) as f:
            return max(0, sum(1 for _ in f) - 1)
    except FileNotFoundError:
        return 0


def wait_for_rows(p, out, rows, what):
    """Until metrics.csv has `rows` rows while `p` still runs (60 s at most)."""
    deadline = time.time() + 60
    while rows_in(os.path.join(out, "metrics.csv")) < rows:
        if p.poll() is not None:
            fail(f"{what}: the run ended (exit {p.returncode}) before metrics.csv had {rows} "
                 f"rows: the rows are not written as the run goes\n{p.stderr.read()}")
        if time.time() > deadline:
            p.kill()
            fail(f"{what}: no {rows} rows in metrics.csv after 60 s")
        time.sleep(0.05)


def interrupt(atrain, out, spec, sets, sig, status):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [atrain, "run", spec, "--no-progress", "--out", out]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_rows(p, out, 2, spec)
    streamed = rows_in(os.path.join(out, "metrics.csv"))
    if os.path.exists(os.path.join(out, "report.json")):
        fail(f"{spec}: report.json exists while the run goes")
    p.send_signal(sig)
    try:
        stdout, stderr = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        fail(f"{spec}: still running 60 s after {sig.name}")
    if p.returncode != status:
        fail(f"{spec}: exit {p.returncode} after {sig.name}, expected {status}\n{stdout}\n{stderr}")
    if "interrupted" not in stdout:
        fail(f"{spec}: the summary does not say interrupted:\n{stdout}")
    r, events = check_report.check(out)
    if r["stop_reason"] != "interrupted":
        fail(f"{spec}: stop_reason {r['stop_reason']!r}")
    if len(r["metrics"]) < streamed:
        fail(f"{spec}: {len(r['metrics'])} rows in the report, {streamed} streamed before")
    stops = [e for e in events if e["event"] == "stop"]
    if len(stops) != 1 or stops[0]["reason"] != "interrupted":
        fail(f"{spec}: stop events {stops}")
    print(f"{spec}: {sig.name} after {streamed} streamed rows -> exit {p.returncode}, "
          f"{len(r['metrics'])} rows, stopped at t={r['duration_seconds']:.3f} s")


def second_signal(atrain, out):
    """SIGTERM then SIGINT at once (two signals, so neither merges into the
    other while pending): whichever is delivered second ends the process at
    once, 128 + its number, before any report is written."""
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.Popen([atrain, "run", "config/quickstart.textproto", "--no-progress",
                          "--out", out, "--set", "stop.time_seconds=100000",
                          "--set", "stop.stop_at_target=false"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_rows(p, out, 1, "second signal")
    os.kill(p.pid, signal.SIGTERM)
    os.kill(p.pid, signal.SIGINT)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("second signal: still running 30 s after SIGTERM + SIGINT")
    if p.returncode not in (128 + signal.SIGINT, 128 + signal.SIGTERM):
        fail(f"second signal: exit {p.returncode}, expected 130 or 143")
    if os.path.exists(os.path.join(out, "report.json")):
        fail("second signal: a report was written: the second signal did not exit at once")
    print(f"second signal: exit {p.returncode}, no report (exited at once)")


def main():
    atrain, out = sys.argv[1], sys.argv[2]
    long_run = ["stop.time_seconds=100000", "stop.stop_at_target=false"]
    interrupt(atrain, os.path.join(out, "sigterm_real"), "config/quickstart_real.textproto",
              long_run + ["eval.period_seconds=0.1"], signal.SIGTERM, 143)
    interrupt(atrain, os.path.join(out, "sigint_virtual"), "config/quickstart.textproto",
              long_run, signal.SIGINT, 130)
    second_signal(atrain, os.path.join(out, "second_signal"))
    print("interrupt_test OK")


if __name__ == "__main__":
    main()
