"""One command in a child process under a time and address-space bound, with
its own peak RSS (wait4's rusage: RUSAGE_CHILDREN would give the largest child
so far). Shared by hostile_inputs_test.py and mutation_test.py.

Under the sanitizers (apps/setup.sh sanitize) the bounds keep their meaning
where they can: ATRAIN_TIME_SCALE (default 1) multiplies the time limit, and
an AddressSanitizer binary, which reserves terabytes of shadow address space
at start and so cannot run under RLIMIT_AS at all, gets the same backstop
from ASan's allocator instead: an allocation above the limit fails (new
throws std::bad_alloc, as under RLIMIT_AS) rather than being served."""
import os
import resource
import subprocess
import tempfile
import time

TIME_SCALE = float(os.environ.get("ATRAIN_TIME_SCALE", "1"))
_asan = {}


def is_asan(path):
    """Whether the executable at `path` links AddressSanitizer's run time."""
    if path not in _asan:
        try:
            with open(path, "rb") as f:
                _asan[path] = b"libasan.so" in f.read()
        except OSError:
            _asan[path] = False
    return _asan[path]


def run_bounded(argv, time_limit, as_limit, cwd=None):
    """(exit code or -signal, peak RSS MB, seconds, output, killed);
    `time_limit` is scaled by ATRAIN_TIME_SCALE."""
    time_limit *= TIME_SCALE
    env = None
    if is_asan(argv[0]):
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = ":".join(filter(None, [
            env.get("ASAN_OPTIONS", ""), "allocator_may_return_null=1",
            "max_allocation_size_mb=%d" % (as_limit >> 20)]))

    def limit():
        if env is None:
            resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))

    with tempfile.TemporaryFile() as log:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                             preexec_fn=limit, env=env)
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
        out += "\n[killed after %g s]" % time_limit
    return p.returncode, usage.ru_maxrss / 1024, elapsed, out, killed
