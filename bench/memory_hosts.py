#!/usr/bin/env python3
"""Resident memory of `atrain node` processes over a long run (issue 20): one
MNIST MLP run (config/mnist_hosts/ALGORITHM.textproto as shipped, 4 nodes, one
per host on 127.0.0.1, REAL clock, the target ignored) for --seconds; every --every
seconds each host's VmRSS is read from /proc. Prints the samples, each host's
peak (VmHWM), and its growth from the first sample after --settle seconds to
the last (a leak grows; a steady run does not).

  python3 bench/memory_hosts.py build/atrain [--seconds 600] [--every 30]
      [--settle 60] [--algorithm rfast] [--set K=V ...]

It also prints an idle host's resident memory (a host serving no run), the
baseline a run's memory adds to."""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "deploy"))
from hosts import Cluster  # noqa: E402


def status_mb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key + ":")) / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("atrain")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--every", type=float, default=30)
    ap.add_argument("--settle", type=float, default=60)
    ap.add_argument("--algorithm", default="rfast",
                    help="config/mnist_hosts/ALGORITHM.textproto")
    ap.add_argument("--set", action="append", default=[], metavar="K=V")
    args = ap.parse_args()
    sets = ["stop.stop_at_target=false", "eval.period_seconds=5",
            "stop.time_seconds=%g" % args.seconds]
    c = Cluster(os.path.abspath(args.atrain), 4)
    samples = []  # (run seconds, [MB per host])
    try:
        idle = [status_mb(h.proc.pid, "VmHWM") for h in c.hosts]
        print("idle hosts, VmHWM MB: " + ", ".join("%.1f" % m for m in idle), flush=True)
        spec = os.path.join(ROOT, "config", "mnist_hosts", args.algorithm + ".textproto")
        d = c.start(spec, sets + args.set, os.path.join(c.dir, "run"))
        if not d.wait_started(timeout=60):
            sys.exit("the run did not start: " + c.dir)
        began = time.monotonic()
        while d.proc.poll() is None:
            t = time.monotonic() - began
            samples.append((t, [status_mb(h.proc.pid, "VmRSS") for h in c.hosts]))
            print("%6.0f s  VmRSS MB: %s" % (t, "  ".join("%.0f" % m for m in samples[-1][1])),
                  flush=True)
            time.sleep(max(0.0, args.every - (time.monotonic() - began - t)))
        rep = d.wait(timeout=60)
        peaks = [status_mb(h.proc.pid, "VmHWM") for h in c.hosts]
    finally:
        c.stop()
    settled = next((s for s in samples if s[0] >= args.settle), samples[0])
    last = samples[-1]
    print("run: %s, %d gradients, final accuracy %.4f" % (
        rep.get("stop_reason", "?"), rep.get("gradients_total", 0),
        rep.get("final", {}).get("test_accuracy", 0)))
    print("peak (VmHWM) MB per host: " + ", ".join("%.0f" % p for p in peaks))
    print("growth from %.0f s to %.0f s, MB per host: %s" % (
        settled[0], last[0], ", ".join("%+.1f" % (b - a) for a, b in zip(settled[1], last[1]))))


if __name__ == "__main__":
    main()
