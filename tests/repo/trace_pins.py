#!/usr/bin/env python3
"""Pinned virtual-clock behaviour: every shipped algorithm and fault spec,
run on the virtual clock, gives the trace hash and report recorded in
trace_pins.txt. A refactor must keep every line; a deliberate change of
behaviour re-records them (--record) and says why in its commit.

  trace_pins.py ATRAIN --check  [--pins FILE]   compare (exit 1 on a change)
  trace_pins.py ATRAIN --record [--pins FILE]   write the pins anew

The pins hold on the machine kind they were recorded on: oneDNN's JIT
kernels, and so the MLP's rounding, depend on the CPU's ISA. The file holds
one section per CPU kind (a `cpu` line, then its runs); --record replaces
the section of this CPU and keeps the others. On a CPU with no section (a
different model name or flag set) whose recorded sections all agree (so
far they always have), the runs are checked against those: a match passes;
a difference may be this CPU's rounding rather than a change, so it skips
(exit 77), not fails: record a section from a commit known to be right
first. Run from the source root.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PINS = os.path.join(HERE, "trace_pins.txt")
SKIP = 77

# (label, spec, --set overrides): each algorithm to its target and past it,
# each fault scenario, and the MLP.
LONG = ["stop.stop_at_target=false", "stop.time_seconds=4"]


def cases():
    out = []
    for d in ("config/algorithms", "config/faults"):
        for f in sorted(os.listdir(d)):
            if f.endswith(".textproto"):
                name = f[: -len(".textproto")]
                out.append((f"{os.path.basename(d)}/{name}", f"{d}/{f}", []))
                if d == "config/algorithms":
                    out.append((f"{os.path.basename(d)}/{name}+long", f"{d}/{f}", LONG))
    out.append(("mnist_mlp", "config/mnist_mlp.textproto",
                ["stop.time_seconds=2", "stop.stop_at_target=false",
                 "dataset.max_train_samples=4000"]))
    return out


def cpu_signature():
    model, flags = "?", ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k.strip() == "model name" and model == "?":
                model = v.strip()
            if k.strip() == "flags" and not flags:
                flags = " ".join(sorted(v.split()))
    return f"{model} / flags {hashlib.sha256(flags.encode()).hexdigest()[:12]}"


def digest(report):
    """Everything a run decides; not wall time, version or paths, nor the
    REAL clock's CPU measurements (0 on the virtual clock)."""
    measured = ("process_cpu_seconds", "gradient_cpu_seconds", "gradient_wall_seconds")
    report = dict(report, per_node=[{k: v for k, v in n.items() if k not in measured}
                                    for n in report.get("per_node", [])])
    kept = {k: report.get(k) for k in ("final", "metrics", "per_node", "faults", "stragglers",
                                       "quarantined", "checkpoints", "stop_reason",
                                       "gradients_total", "messages_sent", "bytes_sent",
                                       "duration_seconds", "consensus_error", "mass_residual")}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def run_case(atrain, spec, sets, tmp):
    out = os.path.join(tmp, "run")
    cmd = [atrain, "run", spec, "--no-progress", "--out", out]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"trace_pins: {spec} {sets}: exit {r.returncode}\n{r.stderr}")
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    return f"{rep['trace_hash']} events {rep['trace_events']} report {digest(rep)}"


HEADER = "# trace hash, trace events and report digest per run: tests/repo/trace_pins.py\n"


def read_sections(pins):
    """{cpu signature: [lines of its runs]}, in file order."""
    sections = {}
    if not os.path.exists(pins):
        return sections
    current = None
    with open(pins) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#") or not line:
                continue
            if line.startswith("cpu "):
                current = sections.setdefault(line[4:], [])
            elif current is not None:
                current.append(line)
    return sections


def check(atrain, want_lines, tmp, foreign=False):
    want = dict(l.split(" ", 1) for l in want_lines)
    changed, got = [], {}
    for label, spec, sets in cases():
        got[label] = run_case(atrain, spec, sets, tmp)
        if want.get(label) != got[label]:
            changed.append(f"{label}: pinned {want.get(label)}, now {got[label]}")
    if changed and foreign:
        print("trace_pins SKIPPED: this CPU has no section and differs from the others' pins:\n  "
              + "\n  ".join(changed))
        sys.exit(SKIP)
    if changed:
        sys.exit("trace_pins FAILED: behaviour changed:\n  " + "\n  ".join(changed))
    print(f"trace_pins OK: {len(got)} runs as pinned")


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("--check", "--record"):
        sys.exit(__doc__)
    atrain, mode = sys.argv[1], sys.argv[2]
    pins = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--pins" else PINS
    cpu = cpu_signature()
    sections = read_sections(pins)
    with tempfile.TemporaryDirectory(prefix="atrain_pins_") as tmp:
        if mode == "--check":
            if cpu in sections:
                return check(atrain, sections[cpu], tmp)
            kinds = {tuple(sorted(lines)) for lines in sections.values()}
            if len(kinds) != 1:
                print(f"trace_pins SKIPPED: pinned on {', '.join(repr(c) for c in sections)}, "
                      f"which differ; this is '{cpu}'")
                sys.exit(SKIP)
            print(f"trace_pins: no section for '{cpu}'; checking against the "
                  f"{len(sections)} recorded CPU kinds, which agree")
            return check(atrain, next(iter(sections.values())), tmp, foreign=True)
        sections[cpu] = [f"{label} {run_case(atrain, spec, sets, tmp)}"
                         for label, spec, sets in cases()]
    with open(pins, "w") as f:
        f.write(HEADER)
        for sig, lines in sections.items():
            f.write("cpu " + sig + "\n")
            for line in lines:
                f.write(line + "\n")
    print(f"trace_pins: recorded {len(sections[cpu])} runs for '{cpu}' in {pins}")


if __name__ == "__main__":
    main()
