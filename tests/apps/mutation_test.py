"""Property: whatever a shipped spec or a small data file is mutated into,
`atrain check` exits 0 or 2, never a signal nor another code, within a time and
memory bound (docs/RELIABILITY.md "Bounds"). Seeded and reproducible: a failure
prints its seed and case number; the mutated file is kept in the printed path.

usage: mutation_test.py ATRAIN [SEED [CASES]]   (from the source root)"""
import glob
import gzip
import os
import random
import re
import shutil
import sys
import tempfile
import time

from bounded_child import run_bounded

atrain = os.path.abspath(sys.argv[1])
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 16
cases = int(sys.argv[3]) if len(sys.argv) > 3 else 150
TIME_LIMIT = 10           # seconds per command
AS_LIMIT = 2 << 30        # address space of the child (bad_alloc, not the OOM killer)
RSS_LIMIT_MB = 400
rng = random.Random(seed)
failures = []

SPECS = sorted(["config/quickstart.textproto"] + glob.glob("config/algorithms/*.textproto") +
               glob.glob("config/faults/*.textproto"))
# Values that once broke something, or sit at a limit's edge.
EXTREME = ["0", "-1", "1e-300", "1e300", "4294967295", "100000", "30000", "4097", "nan", "inf",
           "1e-06", "9.9e-07", "65537", "10000000", "2147483648", "\"\"", "[]",
           "[1000000000]", "COMPLETE", "EXPLICIT"]


def dense_mb(text):
    """The dense train and test matrices a LIBSVM spec may legitimately ask for
    (docs/RELIABILITY.md "Bounds": up to 2^29 floats each) at the 2000-row caps
    every case sets: a mutated `dimension: 65537` is 1 GB of features, within
    the bounds, not a leak."""
    dims = [int(m) for m in re.findall(r"^\s*dimension:\s*(\d+)", text, re.M)]
    return 2 * 2000 * max(dims, default=0) * 4 / 1e6


def mutate_text(text):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        op = rng.random()
        if op < 0.5 and ":" in lines[i]:  # a value replaced by an extreme one
            key = lines[i].split(":")[0]
            lines[i] = key + ": " + rng.choice(EXTREME)
        elif op < 0.65:
            del lines[i]
        elif op < 0.8:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif op < 0.9:  # a field repeated many times on separate lines
            lines[i:i] = [lines[i]] * rng.randint(100, 3000)
        else:
            pos = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:pos] + rng.choice("{}[]:,#\"\\\x00\xff") + lines[i][pos:]
    return "\n".join(lines)


def mutate_bytes(data):
    data = bytearray(data)
    op = rng.random()
    if op < 0.3:
        del data[rng.randrange(len(data)):]          # cut anywhere
    elif op < 0.6:
        for _ in range(rng.randint(1, 8)):           # bytes flipped
            data[rng.randrange(len(data))] ^= rng.randrange(1, 256)
    elif op < 0.8:
        pos = rng.randrange(len(data))               # a number replaced by a huge one
        data[pos:pos] = rng.choice([b"2147483648", b"1048576", b"99999999999", b"-", b":"])
    else:
        data[-4:] = bytes([0xff, 0xff, 0xff, 0xff])  # (gzip) the trailer lies
    return bytes(data)


def main():
    a9a = gzip.decompress(open("data/a9a.gz", "rb").read()).split(b"\n")
    small = b"\n".join(a9a[:300]) + b"\n"
    started = time.monotonic()
    counts = {0: 0, 2: 0}
    with tempfile.TemporaryDirectory(prefix="atrain-mutation-") as d:
        for k in range(cases):
            case_dir = os.path.join(d, str(k))
            os.mkdir(case_dir)
            spec = rng.choice(SPECS)
            data_dir = os.path.abspath("data") + "/"
            text = open(spec).read().replace("../../data/", data_dir).replace("../data/", data_dir)
            sets = ["dataset.max_train_samples=2000", "dataset.max_test_samples=2000"]
            what = "case %d (seed %d): %s" % (k, seed, spec)
            if rng.random() < 0.5:
                text = mutate_text(text)
                what += " text mutated"
            else:
                data = small
                name = "train.svm"
                if rng.random() < 0.5:
                    data, name = gzip.compress(data, 1), "train.svm.gz"
                path = os.path.join(case_dir, name)
                with open(path, "wb") as f:
                    f.write(mutate_bytes(data))
                sets = ["dataset.train_path=" + path, "dataset.test_path=" + path]
                what += " data mutated (%s)" % name
            spec_path = os.path.join(case_dir, "spec.textproto")
            with open(spec_path, "w", errors="surrogateescape") as f:
                f.write(text)
            rc, peak, secs, err, killed = run_bounded(
                [atrain, "check", spec_path] + [a for s in sets for a in ("--set", s)],
                TIME_LIMIT, AS_LIMIT)
            ok = rc in (0, 2) and not killed and peak < RSS_LIMIT_MB + dense_mb(text)
            if rc == 2 and not err.strip():
                ok = False  # exit 2 names its cause
            if not ok:
                kept = os.path.join(tempfile.gettempdir(), "atrain-mutation-failure-%d-%d" %
                                    (seed, k))
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(case_dir, kept)
                failures.append(what)
                print("FAIL %s: exit %s, %.2f s, %.0f MB (kept in %s)\n%s" %
                      (what, rc, secs, peak, kept, err[-800:]), flush=True)
            else:
                counts[rc] += 1
            shutil.rmtree(case_dir)
    print("%d cases in %.1f s: %d exit 0, %d exit 2, %d failed" %
          (cases, time.monotonic() - started, counts[0], counts[2], len(failures)))
    if failures:
        sys.exit(1)
    print("mutation OK")


main()
