"""One command in a child process under a time and address-space bound, with
its own peak RSS (wait4's rusage: RUSAGE_CHILDREN would give the largest child
so far). Shared by hostile_inputs_test.py and mutation_test.py."""
import os
import resource
import subprocess
import tempfile
import time


def run_bounded(argv, time_limit, as_limit, cwd=None):
    """(exit code or -signal, peak RSS MB, seconds, output, killed)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))

    with tempfile.TemporaryFile() as log:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                             preexec_fn=limit)
        killed = False
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > time_limit and not killed:
                p.kill()
                killed = True
            time.sleep(0.005)
        elapsed = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        out = log.read().decode(errors="replace")
    if killed:
        out += "\n[killed after %d s]" % time_limit
    return p.returncode, usage.ru_maxrss / 1024, elapsed, out, killed
