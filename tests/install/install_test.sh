#!/bin/sh
# install_embed: `cmake --install` the build into a fresh prefix, build
# apps/examples/embed.cpp as an outside project against it (tests/install/
# CMakeLists.txt: find_package(atrain) + atrain::atrain), run it, and run the
# installed `atrain` from outside the source tree (check, and compare finding
# config/algorithms/ and apps/plot/ under <prefix>/share/atrain).
#
#   install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR [compiler launcher]
set -eu
build="$1" src="$2" work="$3" launcher="${4:-}"
fail() { echo "install_test FAILED: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work/elsewhere"
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || fail "cmake --install (log: $work/install.log)"
for f in bin/atrain lib/cmake/atrain/atrainConfig.cmake lib/cmake/atrain/atrainConfigVersion.cmake \
         lib/cmake/atrain/atrainTargets.cmake lib/cmake/atrain/atrainFindCAF.cmake \
         include/atrain/engine.hpp include/atrain/version.hpp include/atrain/proto/atrain.pb.h \
         lib/libatrain_actors.a share/atrain/config/algorithms/rfast.textproto share/atrain/apps/plot/compare.gp; do
  [ -e "$prefix/$f" ] || fail "$prefix/$f not installed"
done
echo "installed into $prefix"

set -- -S "$src/tests/install" -B "$work/app" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
[ -n "$launcher" ] && set -- "$@" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"
cmake "$@" >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the outside project"; }
grep -q "atrain_DIR:PATH=$prefix/lib/cmake/atrain" "$work/app/CMakeCache.txt" ||
  fail "find_package(atrain) did not use $prefix: $(grep atrain_DIR "$work/app/CMakeCache.txt")"
cmake --build "$work/app" -j2 >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "building embed.cpp outside"; }
echo "built embed.cpp against the installed package"

# The outside binary: a real-clock run in its own actor_system, stopped after 2 evaluations.
out="$("$work/app/embed" "$src/config/quickstart_real.textproto" 2 2>&1)" || { echo "$out"; fail "embed exited $?"; }
echo "$out"
evals="$(echo "$out" | grep -c '^t=.* gradients=[0-9]* loss=' || true)"
[ "$evals" -ge 2 ] || fail "embed printed $evals evaluations, expected at least 2"
echo "$out" | grep -Eq '^done: (stopped by request|target accuracy reached), final accuracy 0\.[0-9]*, [1-9][0-9]* gradients$' ||
  fail "no final report from embed"

# The installed binary, run from a directory with no config/ or apps/ in it.
cd "$work/elsewhere"
"$prefix/bin/atrain" check "$src/config/quickstart.textproto" || fail "installed atrain check"
cmp_out="$("$prefix/bin/atrain" compare "$src/config/quickstart.textproto" --algorithms dasgd --seeds 1 \
           --set dataset.max_train_samples=2000 --set stop.time_seconds=2 --no-progress --out "$work/compare" 2>&1)" ||
  { echo "$cmp_out"; fail "installed atrain compare"; }
echo "$cmp_out" | tail -5
echo "$cmp_out" | grep -q "not found" && fail "installed compare did not find its files under $prefix/share/atrain"
[ -s "$work/compare/compare.json" ] || fail "installed compare wrote no compare.json"
if command -v gnuplot >/dev/null; then
  ls "$work/compare" | grep -q '\.\(png\|svg\|pdf\)$' || fail "installed compare drew no figure (gnuplot is installed)"
fi
echo "install_test OK"
