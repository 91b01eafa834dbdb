#!/usr/bin/env python3
"""Set-up check: every header, library, CMake config and program the configure
found (BUILD/setup_inventory.txt, written by cmake/atrainInventory.cmake) must
come from a Debian package that apps/setup.sh installs, and README's Quick
start must list exactly setup.sh's packages.

  check_packages.py BUILD_DIR SOURCE_DIR

A path's package is the first hop of its symlink chain that dpkg knows
(`dpkg -S`; /usr-merged variants too). A package counts as installed by
setup.sh when it is in `packages=(...)` or a Depends/Pre-Depends of one,
transitively (setup.sh installs with --no-install-recommends). Paths inside
the build or source tree are the build's own: skipped, each said. Exits 1
naming every package setup.sh would not install, every path no package owns,
every item the configure did not find, and any difference with the README.
"""
import os
import re
import shutil
import subprocess
import sys


def setup_packages(setup_sh):
    text = open(setup_sh).read()
    m = re.search(r"^packages=\(([^)]*)\)", text, re.M)
    if not m:
        sys.exit(f"{setup_sh}: no packages=(...) array")
    return m.group(1).split()


def readme_packages(readme):
    text = open(readme).read()
    m = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.M | re.S)
    if not m:
        sys.exit(f"{readme}: no '## Quick start' section")
    section = m.group(1)
    m = re.search(r"What `setup.sh` installs.*?\n```[a-z]*\n(.*?)```", section, re.S)
    if not m:
        sys.exit(f"{readme}: Quick start has no 'What `setup.sh` installs' paragraph followed by a ``` block")
    return m.group(1).split()


def installed_db():
    """name -> (provides, depends groups) for every installed package."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package}\t${db:Status-Status}\t${Provides}\t${Depends}, ${Pre-Depends}\n"],
        check=True, capture_output=True, text=True).stdout
    db, providers = {}, {}
    names = lambda s: [re.sub(r"[\s(].*", "", a.strip()).split(":")[0] for a in s.split("|") if a.strip()]
    for line in out.splitlines():
        pkg, status, provides, depends = (line.split("\t") + ["", "", ""])[:4]
        if status != "installed":
            continue
        groups = [names(g) for g in depends.split(",") if g.strip()]
        db[pkg] = groups
        for p in provides.split(","):
            if p.strip():
                providers.setdefault(names(p)[0], []).append(pkg)
    return db, providers


def closure(roots, db, providers):
    """package -> the listed package it is pulled in by."""
    via = {}
    todo = [(r, r) for r in roots if r in db]
    while todo:
        pkg, root = todo.pop()
        if pkg in via:
            continue
        via[pkg] = root
        for group in db[pkg]:
            for name in group:
                for cand in ([name] if name in db else []) + providers.get(name, []):
                    if cand not in via:
                        todo.append((cand, root))
    return via


def symlink_chain(path):
    chain, seen = [path], set()
    p = path
    while os.path.islink(p) and p not in seen:
        seen.add(p)
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
        chain.append(p)
    real = os.path.realpath(path)
    if real not in chain:
        chain.append(real)
    return chain


def usr_variants(p):
    for top in ("/bin/", "/sbin/", "/lib/", "/lib64/"):
        if p.startswith("/usr" + top):
            return [p, p[len("/usr"):]]
        if p.startswith(top):
            return [p, "/usr" + p]
    return [p]


def owner(path):
    """(package, the path dpkg knows) or (None, None)."""
    for hop in symlink_chain(path):
        for cand in usr_variants(hop):
            r = subprocess.run(["dpkg", "-S", cand], capture_output=True, text=True)
            if r.returncode == 0:
                for line in r.stdout.splitlines():
                    pkgs, _, owned = line.partition(": ")
                    if owned.strip() == cand:
                        return pkgs.split(",")[0].strip().split(":")[0], cand
    return None, None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build, source = (os.path.realpath(a) for a in sys.argv[1:3])
    setup_sh = os.path.join(source, "apps", "setup.sh")
    listed = setup_packages(setup_sh)
    problems = []
    in_readme = readme_packages(os.path.join(source, "README.md"))
    if in_readme != listed:
        problems.append("README.md Quick start lists\n    " + " ".join(in_readme) +
                        "\n  but apps/setup.sh packages=(...) is\n    " + " ".join(listed) +
                        f"\n  (only in README: {sorted(set(in_readme) - set(listed))}, "
                        f"only in setup.sh: {sorted(set(listed) - set(in_readme))})")
    db, providers = installed_db()
    via = closure(listed, db, providers)
    for p in listed:
        if p not in db:
            problems.append(f"apps/setup.sh lists {p}, which is not installed here (run apps/setup.sh)")
    inventory = os.path.join(build, "setup_inventory.txt")
    items = [l.split("\t") for l in open(inventory).read().splitlines() if l]
    if not items:
        problems.append(f"{inventory} is empty")
    missing = {}
    for what, path in items:
        if path == "NOTFOUND":
            problems.append(f"{what}: not found by the configure (install it and add its package to apps/setup.sh)")
            continue
        real = os.path.realpath(path)
        if not os.path.exists(real):
            problems.append(f"{what}: {path} does not exist")
            continue
        if any(real == d or real.startswith(d + os.sep) for d in (build, source)):
            print(f"SKIP  {what:40} {path}: the build's own file, no package")
            continue
        pkg, owned = owner(path)
        if pkg is None:
            problems.append(f"{what}: {path} belongs to no Debian package (installed by hand?)")
        elif pkg in listed:
            print(f"ok    {what:40} {owned} -> {pkg}")
        elif pkg in via:
            print(f"ok    {what:40} {owned} -> {pkg} (a dependency of {via[pkg]})")
        else:
            missing.setdefault(pkg, []).append(f"{what} ({owned})")
    py = dict(items).get("python3", "NOTFOUND")
    on_path = shutil.which("python3")
    if py != "NOTFOUND" and on_path and os.path.realpath(on_path) != os.path.realpath(py):
        print(f"NOTE  python3 on PATH is {on_path} ({os.path.realpath(on_path)}), not {py}: the tests run "
              f"that one; setup.sh provides {py}")
    for pkg, whats in sorted(missing.items()):
        problems.append(f"package {pkg} is not installed by apps/setup.sh (not in packages=(...) nor a "
                        f"dependency of one), yet the build uses it: " + "; ".join(whats))
    if problems:
        for p in problems:
            print("FAIL  " + p)
        print(f"check_packages FAILED: {len(problems)} problem(s)")
        return 1
    print(f"check_packages OK: {len(items)} items, all from packages apps/setup.sh installs "
          f"({len(listed)} listed); README matches apps/setup.sh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
