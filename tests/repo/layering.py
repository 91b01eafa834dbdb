#!/usr/bin/env python3
"""repo_layering: the floors of the house depend one way (docs/ARCHITECTURE.md).

    python3 tests/repo/layering.py [ROOT]

1. The shared runtime (actors/) names no algorithm outside comments: no
   algorithm's name (a config/algorithms/ file or an algorithms/ folder) as a
   word in code or a string, and no #include of algorithms/.
2. kernels/ and topology/ know nothing of CAF or of the runtime.
3. messages/ includes nothing of the runtime (atrain/actors) or of algorithms/.
Prints each offence as FILE:LINE: reason and exits 1; "repo_layering OK".
"""
import os
import re
import sys

SHARED_HELPERS = {"gossip", "ring"}  # algorithms/ folders that are not algorithms
SOURCES = (".cpp", ".hpp", ".h")


def algorithm_names(root):
    names = {f[:-len(".textproto")] for f in os.listdir(os.path.join(root, "config/algorithms"))
             if f.endswith(".textproto")}
    names |= {d for d in os.listdir(os.path.join(root, "algorithms"))
              if os.path.isdir(os.path.join(root, "algorithms", d))}
    return sorted(names - SHARED_HELPERS)


def sources(root, top):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if f.endswith(SOURCES):
                yield os.path.join(d, f)


def code_lines(path):
    """(number, line) of each line with its // comment and /* */ blocks removed."""
    in_block = False
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if in_block:
                end = line.find("*/")
                if end < 0:
                    continue
                line, in_block = line[end + 2:], False
            line = re.sub(r"/\*.*?\*/", "", line)
            if "/*" in line:
                line, in_block = line[:line.index("/*")], True
            cut = line.find("//")
            yield n, (line[:cut] if cut >= 0 else line)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    names = algorithm_names(root)
    word = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9])",
                      re.IGNORECASE)
    rules = [
        ("actors", lambda l: '#include "algorithms/' in l, "the runtime includes an algorithm"),
        ("actors", lambda l: word.search(l) and not l.lstrip().startswith("#include"),
         "the runtime names an algorithm"),
        ("kernels", lambda l: re.search(r"#include\s*[<\"](caf/|atrain/actors)", l),
         "kernels/ includes CAF or the runtime"),
        ("topology", lambda l: re.search(r"#include\s*[<\"](caf/|atrain/actors)", l),
         "topology/ includes CAF or the runtime"),
        ("messages", lambda l: re.search(r"#include\s*[<\"](atrain/actors|algorithms/)", l),
         "messages/ includes the runtime or an algorithm"),
    ]
    offences = []
    for top, bad, reason in rules:
        for path in sources(root, top):
            for n, line in code_lines(path):
                if bad(line):
                    offences.append(f"{os.path.relpath(path, root)}:{n}: {reason}: {line.strip()}")
    for o in offences:
        print(o)
    if offences:
        return 1
    print(f"repo_layering OK ({len(names)} algorithm names: {', '.join(names)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
