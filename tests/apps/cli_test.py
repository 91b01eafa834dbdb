"""The command line's contract (apps/src/options.cpp): every subcommand's
--help lists its options with their defaults and exits 0; --version prints
the project's version; argument errors exit 2 with one sentence naming the
argument; --opt=value and --opt value are alike; run-time failures exit 1
without CAF's system_error(...) rendering; `atrain launch --local N` runs
across N node processes and leaves none behind, also when interrupted.
usage: cli_test.py ATRAIN VERSION   (from the source root)"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

atrain, version = sys.argv[1], sys.argv[2]
Q = "config/quickstart.textproto"
SHORT = ["--set", "stop.time_seconds=0.2", "--set", "dataset.max_train_samples=2000",
         "--no-progress"]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def cli(*args, timeout=60):
    return subprocess.run([atrain] + list(args), capture_output=True, text=True, timeout=timeout)


# Every subcommand: --help exits 0, names each option it takes, and gives
# each option's default (po's "(=...)" or the word "default" in its text).
OPTIONS = {
    "run": ["set", "out", "resume", "progress", "no-progress", "hosts", "secret-file", "tls-cert",
            "tls-key", "tls-ca", "threads", "caf-config", "caf#KEY=VALUE"],
    "compare": ["algorithms", "seeds", "set", "out", "progress", "no-progress", "threads",
                "caf-config"],
    "check": ["set"],
    "topology": ["set", "dot"],
    "shards": ["set", "out"],
    "plot": ["out"],
    "node": ["listen", "secret-file", "data-root", "tls-cert", "tls-key", "tls-ca",
             "allow-remote", "max-runs", "max-message-mb", "no-guard", "threads", "caf-config"],
    "launch": ["local", "set", "out", "resume", "progress", "no-progress", "threads",
               "caf-config"],
    "calibrate": ["out", "local", "seconds", "probe-out", "set", "hosts", "secret-file",
                  "progress", "no-progress", "threads", "caf-config"],
}
for cmd, names in OPTIONS.items():
    r = cli(cmd, "--help")
    # One entry per option: its line and the indented lines that continue it.
    entries = {}
    for m in re.finditer(r"^  (?:-\w \[ )?--(\S+?)(?: \])?(?: [^\n]*)?\n(?:   +\S[^\n]*\n)*",
                         r.stdout, re.M):
        entries[m.group(1)] = m.group(0)
    missing = [n for n in names if n not in entries]
    no_default = [n for n in names if n in entries and
                  "(=" not in entries[n] and "default" not in entries[n] and
                  "required" not in entries[n]]
    check(r.returncode == 0 and not missing and not no_default,
          "atrain %s --help: exit %d, lists %d options with defaults%s%s" % (
              cmd, r.returncode, len(names) - len(missing),
              "; missing " + ", ".join(missing) if missing else "",
              "; no default for " + ", ".join(no_default) if no_default else ""))
r = cli("--help")
check(r.returncode == 0 and all(re.search(r"^  %s\b" % c, r.stdout, re.M) for c in OPTIONS),
      "atrain --help lists every subcommand")

for args in (["--version"], ["version"]):
    r = cli(*args)
    check(r.returncode == 0 and r.stdout.strip() == "atrain " + version,
          "atrain %s prints 'atrain %s' (%r)" % (args[0], version, r.stdout.strip()))


def refused(args, needle, what):
    """exit 2, one line on stderr naming `needle`, nothing run."""
    r = cli(*args)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and needle in lines[0] and
          "trace hash" not in r.stdout,
          "%s: exit %d: %s" % (what, r.returncode, r.stderr.strip()[:140]))


secret_dir = tempfile.mkdtemp(prefix="atrain_cli_")
secret = os.path.join(secret_dir, "secret")
with open(secret, "w") as f:
    f.write("0123456789abcdef0123456789\n")
refused(["run", Q, "--bogus"], "'--bogus'", "unknown option")
refused(["compare", Q, "--algorithms", "rfast", "--frob=1"], "'--frob'", "unknown compare option")
refused(["run", Q, "--out"], "--out needs a value", "missing value")
refused(["run"], "no SPEC", "missing SPEC")
refused(["run", Q, "other.textproto"], "'other.textproto'", "extra positional argument")
refused(["run", Q, "--hosts", "localhost", "--secret-file", secret], "--hosts: 'localhost'",
        "--hosts entry without a port")
refused(["run", Q, "--hosts=127.0.0.1:70000", "--secret-file", secret], "--hosts",
        "--hosts port out of range")
refused(["run", Q, "--set", "clock=REAL", "--hosts", "127.0.0.1:7000"], "--secret-file",
        "--hosts without a secret or TLS")
refused(["run", Q, "--hosts", "127.0.0.1:7000", "--secret-file", "/nonexistent/secret"],
        "/nonexistent/secret", "missing --secret-file")
refused(["run", Q, "--tls-cert", "a.pem", "--tls-key", "a.key"], "--tls-ca", "partial TLS")
refused(["node", "--tls-ca", "ca.pem", "--secret-file", secret], "--tls-cert", "partial TLS (node)")
refused(["node", "--listen", "127.0.0.1", "--secret-file", secret], "--listen", "node --listen")
for bad in ("0", "x", "-1", "2.5"):
    refused(["run", Q, "--threads", bad], "--threads: '%s'" % bad, "--threads %s" % bad)
refused(["compare", Q, "--algorithms", "rfast", "--seeds", "x"], "--seeds", "--seeds x")
refused(["node", "--max-runs=0", "--secret-file", secret], "--max-runs", "node --max-runs 0")
refused(["launch", Q, "--set", "clock=REAL"], "--local", "launch without --local")
refused(["launch", Q, "--local", "2", "--hosts", "127.0.0.1:7000"], "'--hosts'",
        "launch refuses --hosts (it makes its own)")
refused(["launch", Q, "--local", "2"], "clock: REAL", "launch of a virtual-clock spec")
refused(["calibrate", Q, "--local", "2"], "--out", "calibrate without --out")
refused(["calibrate", Q, "--out", "t.textproto", "--local", "2", "--hosts", "127.0.0.1:7000"],
        "contradict", "calibrate with --local and --hosts")
refused(["calibrate", Q, "--out", "t.textproto", "--seconds", "0"], "--seconds",
        "calibrate --seconds 0")
refused(["run", Q, "--caf#no.such-option=1"], "'--caf#no.such-option=1'", "unknown CAF option")
refused(["check", Q, "--caf#scheduler.max-threads=2"], "'--caf#scheduler.max-threads",
        "CAF options only where a system runs")

# --opt=value and --opt value are alike.
with tempfile.TemporaryDirectory(prefix="atrain_cli_out_") as d:
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    ra = cli("run", Q, *SHORT, "--out=" + a)
    rb = cli("run", Q, *SHORT, "--out", b)
    hashes = [re.search(r"trace hash +(\w+)", r.stdout) for r in (ra, rb)]
    check(ra.returncode == 0 and rb.returncode == 0 and
          all(os.path.exists(os.path.join(x, "report.json")) for x in (a, b)) and
          all(hashes) and hashes[0].group(1) == hashes[1].group(1),
          "--out=DIR and --out DIR both write the report (same trace hash)")
    r = cli("run", Q, "--set=stop.time_seconds=0.2", "--set=dataset.max_train_samples=2000",
            "--no-progress", "--threads=2")
    check(r.returncode == 0 and "trace hash" in r.stdout, "--set=... --threads=2: the run ends")
    r = cli("run", "config/quickstart_real.textproto", *SHORT, "--threads", "1",
            "--caf#scheduler.max-throughput=100")
    check(r.returncode == 0 and "REAL clock" in r.stdout,
          "a REAL-clock run with --threads 1 and a CAF option (rc %d)" % r.returncode)

# A run-time failure (no host listens there): exit 1, a plain sentence.
r = cli("run", Q, *SHORT, "--set", "clock=REAL", "--hosts", "127.0.0.1:9", "--secret-file", secret)
check(r.returncode == 1 and "cannot reach host 127.0.0.1:9" in r.stderr and
      "system_error(" not in r.stdout + r.stderr,
      "unreachable host: exit %d: %s" % (r.returncode, r.stderr.strip()[:140]))


def pids_of(text):
    return [int(p) for p in re.findall(r"node \d+ \(pid (\d+)\) listening", text)]


def alive(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return not re.search(r"^State:\s+Z", f.read(), re.M)  # a zombie is dead
    except FileNotFoundError:
        return False


def secrets_left():
    tmp = os.environ.get("TMPDIR") or "/tmp"
    return set(f for f in os.listdir(tmp) if f.startswith("atrain-launch-"))


before = secrets_left()
LAUNCH = ["launch", "--local", "2", Q, "--set", "clock=REAL", "--set",
          "dataset.max_train_samples=4000", "--no-progress"]
started = time.monotonic()
r = cli(*LAUNCH, "--set", "stop.time_seconds=1", timeout=60)
pids = pids_of(r.stderr)
check(r.returncode == 0 and "REAL clock, 8 nodes" in r.stdout and len(pids) == 2 and
      r.stderr.count("spawned nodes") == 2 and not any(alive(p) for p in pids) and
      secrets_left() == before,
      "launch --local 2: the run spans both nodes, exit %d in %.1f s, nodes %s gone, "
      "secret removed" % (r.returncode, time.monotonic() - started, pids))

# Interrupted mid-run: SIGINT to the launcher stops the run (its report is
# written, as for `atrain run`), then its nodes.
launch_out = os.path.join(secret_dir, "launch_interrupted")
p = subprocess.Popen([atrain] + LAUNCH + ["--set", "stop.time_seconds=30", "--out", launch_out],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
err = ""
while err.count("spawned nodes") < 2 and p.poll() is None:
    line = p.stderr.readline()
    if not line:
        break
    err += line
pids = pids_of(err)
time.sleep(0.5)
sent = time.monotonic()
p.send_signal(signal.SIGINT)
try:
    out, rest = p.communicate(timeout=20)
except subprocess.TimeoutExpired:
    p.kill()
    out, rest = p.communicate()
took = time.monotonic() - sent
try:
    with open(os.path.join(launch_out, "report.json")) as f:
        stop_reason = json.load(f)["stop_reason"]
except (OSError, ValueError, KeyError) as e:
    stop_reason = "no report (%s)" % e
check(p.returncode == 130 and stop_reason == "interrupted" and len(pids) == 2 and
      not any(alive(x) for x in pids) and secrets_left() == before and took < 10,
      "launch interrupted by SIGINT: exit %s after %.1f s, report %s, nodes %s gone" % (
          p.returncode, took, stop_reason, pids))
shutil.rmtree(launch_out, ignore_errors=True)

os.remove(secret)
os.rmdir(secret_dir)
if failures:
    sys.exit("cli_test: %d check(s) failed:\n  %s" % (len(failures), "\n  ".join(failures)))
print("cli_test OK")
