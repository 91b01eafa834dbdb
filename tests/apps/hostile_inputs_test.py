"""Specs and data files the validator used to accept but the machine cannot
hold (issue 16, docs/RELIABILITY.md "Bounds"): each runs `atrain check` and
`atrain run` in a child process under a peak-RSS and time bound and must exit
2 (never a signal) with a message naming the cause. The hostile files are made
here, in a temporary directory.

usage: hostile_inputs_test.py ATRAIN            (from the source root)
       hostile_inputs_test.py ATRAIN --measure  (a Markdown table: exit, peak
       RSS, time of each case, no assertion; RLIMIT_AS 4 GiB, 20 s each)"""
import gzip
import os
import struct
import sys
import tempfile
import time
import zlib

from bounded_child import TIME_SCALE, run_bounded

atrain = os.path.abspath(sys.argv[1])
measure = "--measure" in sys.argv
Q = os.path.abspath("config/quickstart.textproto")
DASGD = os.path.abspath("config/algorithms/dasgd.textproto")
A9A = os.path.abspath("data/a9a.gz")
TIME_LIMIT = 20 if measure else 10        # seconds per command
RSS_LIMIT_MB = 4096 if measure else 400   # peak RSS of the child
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def child(args, cwd):
    """(exit code or -signal, peak RSS MB, seconds, output) of `atrain ARGS`."""
    cap = RSS_LIMIT_MB << 20 if measure else 2 << 30  # address space: a backstop
    rc, peak, secs, out, _ = run_bounded([atrain] + args, TIME_LIMIT, cap, cwd)
    return rc, peak, secs, out


def write(d, name, data):
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def gzip_claiming(size):
    """A valid 20-byte gzip of nothing whose trailer claims `size` bytes."""
    raw = gzip.compress(b"")
    return raw[:-4] + struct.pack("<I", size % (1 << 32))


def newline_bomb(gib):
    """gzip members of 64 MiB of newlines each, concatenated: `gib` GiB inflated."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = c.compress(b"\n" * (64 << 20)) + c.flush()
    return member * (gib * 16)


def idx_images(count, rows, cols, payload=b""):
    return struct.pack(">IIII", 2051, count, rows, cols) + payload


def cases(d):
    """(name, spec, --set list, words the message must hold)."""
    lib = lambda path: ["dataset.train_path=" + path, "dataset.test_path=" + path]  # noqa: E731
    no_dim = ["dataset.dimension=0"]
    mlp = ["model.mlp={}"]
    a9a_lines = gzip.decompress(open(A9A, "rb").read()).split(b"\n")
    head = b"\n".join(a9a_lines[:200]) + b"\n"
    classes = head.replace(b"-1 ", b"0 ").replace(b"+1 ", b"1 ")  # multiclass ids
    yield ("nodes=30000 (dense weights)", Q, ["nodes=30000"], ["nodes", "4096"])
    yield ("COMPLETE on 2500 nodes", Q, ["nodes=2500", "topology.builder=COMPLETE"],
           ["topology.builder", "edges", "4194304"])
    yield ("hidden [1000000000]", Q, ["model.mlp.hidden=[1000000000]"],
           ["model.mlp.hidden[0]", "65536"])
    yield ("dimension 10000000", Q, ["dataset.dimension=10000000"],
           ["model.batch_size", "134217728"])
    yield ("batch_size 4000000000", Q, ["model.batch_size=4000000000"],
           ["model.batch_size", "134217728"])
    yield ("eval.period_seconds 1e-300", Q, ["eval.period_seconds=1e-300"],
           ["eval.period_seconds", "1e-06"])
    yield ("cost.tau_seconds 1e-300", Q, ["cost.tau_seconds=1e-300"],
           ["cost.tau_seconds", "1e-06"])
    yield ("DASGD retransmit_seconds 1e-300", DASGD, ["link.retransmit_seconds=1e-300"],
           ["link.retransmit_seconds", "1e-06"])
    yield ("gzip trailer claims 4 GiB", Q, lib(write(d, "claims.gz", gzip_claiming(2**32 - 1))),
           ["claims.gz", "incorrect length check"])
    yield ("gzip bomb: 2 GiB of newlines", Q, lib(write(d, "bomb.gz", newline_bomb(2))),
           ["bomb.gz", "1073741824"])
    yield ("LIBSVM index 2^31, inferred dimension", Q,
           lib(write(d, "index.svm", b"+1 2147483648:1\n-1 1:1\n")) + no_dim,
           ["index.svm:1", "too large", "10000000"])
    yield ("LIBSVM label 1048576 with an MLP", Q,
           lib(write(d, "label.svm", classes + b"1048576 1:1\n")) + mlp,
           ["label.svm:201", "class id too large", "65535"])
    yield ("LIBSVM cut in its last line", Q, lib(write(d, "cut.svm", head + b"+1 3:1 5:0.2")),
           ["cut.svm:201", "truncated"])
    imgs = write(d, "images.idx", idx_images(4, 2**31, 2**31))
    labs = write(d, "labels.idx", struct.pack(">II", 2049, 4) + bytes([0, 1, 0, 1]))
    yield ("IDX rows = cols = 2^31 in 16 bytes", Q,
           ["dataset.format=IDX", "dataset.train_path=" + imgs, "dataset.test_path=" + imgs,
            "dataset.train_labels_path=" + labs, "dataset.test_labels_path=" + labs,
            "dataset.dimension=0", "nodes=2"] + mlp,
           ["images.idx", "image size", "10000000"])
    imgs = write(d, "short.idx", idx_images(100000, 28, 28, bytes(784)))
    yield ("IDX header says 100000 images, file holds 1", Q,
           ["dataset.format=IDX", "dataset.train_path=" + imgs, "dataset.test_path=" + imgs,
            "dataset.train_labels_path=" + labs, "dataset.test_labels_path=" + labs,
            "dataset.dimension=0"] + mlp,
           ["short.idx", "truncated pixel data", "78400016"])


def main():
    rows = []
    with tempfile.TemporaryDirectory(prefix="atrain-hostile-") as d:
        spec_dir = os.path.join(d, "spec")
        os.mkdir(spec_dir)
        for name, spec, sets, words in cases(d):
            args = [a for s in sets for a in ("--set", s)]
            for cmd in ("check", "run"):
                extra = ["--out", os.path.join(d, "out"), "--no-progress"] if cmd == "run" else []
                rc, peak, secs, out = child([cmd, spec] + args + extra, spec_dir)
                rows.append((name, cmd, rc, peak, secs, out.strip().splitlines()[-1:]))
                if measure:
                    continue
                what = "%s: atrain %s" % (name, cmd)
                check(rc == 2, "%s exits 2 (got %s)" % (what, rc))
                missing = [w for w in words if w not in out]
                check(not missing, "%s names %s%s" % (what, words,
                                                       "" if not missing else ": " + out[-600:]))
                limit = TIME_LIMIT * TIME_SCALE  # ATRAIN_TIME_SCALE: slower builds (ASan)
                check(secs < limit, "%s within %g s (%.2f s)" % (what, limit, secs))
                check(peak < RSS_LIMIT_MB, "%s peak RSS %.0f MB < %d MB" % (what, peak,
                                                                            RSS_LIMIT_MB))
    if measure:
        print("| input | command | exit | peak RSS | time | last line |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, cmd, rc, peak, secs, last in rows:
            print("| %s | %s | %s | %.0f MB | %.2f s | %s |" % (
                name, cmd, rc, peak, secs, (last[0][:110] if last else "").replace("|", "/")))
        return
    if failures:
        print("%d failed" % len(failures))
        sys.exit(1)
    print("hostile_inputs OK")


main()
