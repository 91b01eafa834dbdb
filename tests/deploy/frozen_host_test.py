#!/usr/bin/env python3
"""A frozen host (issue 7): SIGSTOP one of two `atrain node` hosts (127.0.0.1)
mid-run of DASGD. Its kernel still holds the TCP connection open (nothing is
closed, nothing is refused): only the missing heartbeats tell. The driver
reports the host lost (kind host_lost, < 15 s after the stop; CAF's timeout is
4 s), the other host's nodes train on to the target; after SIGCONT the host
notices its run is gone and serves a new one.

usage: frozen_host_test.py ATRAIN"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hosts import (PACED, Cluster, check, check_host_lost, check_serves_again,  # noqa: E402
                   check_went_on, finish)

atrain = sys.argv[1]
c = Cluster(atrain, 2)
victim = c.hosts[1]  # nodes 1,3,5,7 of 8
try:
    # Frozen at 1 s of the run for 8 s: past the loss (~4.5 s later) and the
    # budget's end (7 s later).
    d, stopped = c.run_hurt(
        "config/algorithms/dasgd.textproto", PACED + ["stop.time_seconds=8"],
        os.path.join(c.dir, "frozen"), 1.0,
        lambda: victim.proc.send_signal(signal.SIGSTOP),
        lambda: victim.proc.send_signal(signal.SIGCONT), 8.0)
    t_lost, _ = check_host_lost(d, stopped, [1, 3, 5, 7], "SIGSTOP, DASGD")
    check_went_on(d.report, t_lost, "SIGSTOP, DASGD")
    check(d.returncode == 0, "the driver ends well (rc %d)" % d.returncode)
    check_serves_again(c, victim, "after SIGCONT")
    check(c.hosts[0].alive(), "the other host keeps running")
finally:
    victim.proc.send_signal(signal.SIGCONT)
    c.stop()
finish("frozen_host_test")
