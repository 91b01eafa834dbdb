#!/usr/bin/env python3
"""repo_self_contained: the repository needs nothing outside itself.

    python3 tests/repo/self_contained.py [ROOT]

1. No tracked file mentions the development machine's shared folder (the two
   forbidden strings are built below so that this file does not contain them).
2. Every data file a shipped spec (config/**/*.textproto) names in its dataset
   block exists in the repository (paths relative to the spec's directory).
Prints each offence as FILE:LINE: reason and exits 1; "repo_self_contained OK".
"""
import os
import re
import subprocess
import sys

FORBIDDEN = ["../" + "shared", "/work/" + "shared"]
DATA_FIELDS = ("train_path", "train_labels_path", "test_path", "test_labels_path")
SKIP_DIRS = {".git", ".ccache"}


def tracked_files(root):
    """`git ls-files` when root is a git checkout, else every file under root."""
    if os.path.exists(os.path.join(root, ".git")):
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             stdout=subprocess.PIPE).stdout.decode()
        return sorted(p for p in out.split("\0") if p)
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(files)


def forbidden_references(root, files):
    found = []
    for rel in files:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue  # tracked but deleted in the work tree
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            continue  # binary (the .gz data)
        for no, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            for s in FORBIDDEN:
                if s in line:
                    found.append(f"{rel}:{no}: mentions {s}: {line.strip()[:120]}")
    return found


def missing_data(root, files):
    found = []
    field = re.compile(r'^\s*(%s)\s*:\s*"([^"]*)"' % "|".join(DATA_FIELDS))
    files = set(files)
    specs = [f for f in files if f.startswith("config/") and f.endswith(".textproto")]
    for rel in specs:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                m = field.match(line)
                if not m or not m.group(2):
                    continue
                target = os.path.normpath(os.path.join(os.path.dirname(rel), m.group(2)))
                if os.path.isabs(m.group(2)):
                    found.append(f"{rel}:{no}: {m.group(1)} is an absolute path: {m.group(2)}")
                elif target.startswith(".."):
                    found.append(f"{rel}:{no}: {m.group(1)} {m.group(2)} leaves the repository")
                elif target not in files:
                    found.append(f"{rel}:{no}: {m.group(1)} {m.group(2)}: {target} not in the repository")
    return found, len(specs)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    files = tracked_files(root)
    refs = forbidden_references(root, files)
    data, specs = missing_data(root, files)
    for line in refs + data:
        print(line)
    if refs or data:
        print(f"repo_self_contained FAILED: {len(refs)} reference(s) outside the repository, "
              f"{len(data)} spec data file(s) missing")
        return 1
    if specs == 0:
        print("repo_self_contained FAILED: no config/**/*.textproto found under " + root)
        return 1
    print(f"repo_self_contained OK: {len(files)} files, {specs} specs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
