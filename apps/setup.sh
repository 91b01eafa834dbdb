#!/usr/bin/env bash
# atrain set-up: installs what is missing, builds (Release), then runs or tests.
#
#   apps/setup.sh run  [SPEC] [atrain run flags...]   default experiment (config/quickstart.textproto)
#   apps/setup.sh test [ctest flags...]               the whole test suite through CTest
#   apps/setup.sh build                               install + build only
#   apps/setup.sh configure                           install + configure only
#   apps/setup.sh bench                               + the benchmarks' peers (gloo), run bench/
#   apps/setup.sh sanitize [ctest flags...]           the whole suite under ASan + UBSan (build-asan/)
#
# Idempotent: packages already installed are not reinstalled, an existing
# build directory is reused (incremental build). BUILD_DIR overrides ./build.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$here/build}"
jobs="$(nproc 2>/dev/null || echo 2)"
# gnuplot-nox draws `atrain compare`'s figures (and lets the tests check them);
# iproute2 (`ip`) builds the network namespaces of tests/deploy/partition_test.py.
packages=(libcaf-dev libdnnl-dev ocl-icd-opencl-dev libeigen3-dev libprotobuf-dev protobuf-compiler
          libboost-test-dev libboost-program-options-dev zlib1g-dev libssl-dev openssl cmake g++ make
          gnuplot-nox iproute2 python3)

# Peers of the benchmarks only (bench/): not needed to build, run or test.
bench_packages=(libgloo-dev)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

# Configure unless a configure already finished there: a failed or interrupted
# one leaves CMakeCache.txt but no generator files (Makefile, build.ninja), and
# must be redone rather than leave a build directory that fails for ever.
# configure [DIR [cmake args...]]: DIR defaults to $build. Under CI (CI set
# and not "false") warnings are errors.
configure() {
  local dir="${1:-$build}"
  [ $# -gt 0 ] && shift
  if [ -f "$dir/CMakeCache.txt" ] && { [ -f "$dir/Makefile" ] || [ -f "$dir/build.ninja" ]; }; then
    return 0
  fi
  local args=(-DCMAKE_BUILD_TYPE=Release)
  [ -n "${CI:-}" ] && [ "${CI}" != false ] && args+=(-DATRAIN_WERROR=ON)
  mkdir -p "$dir"
  if ! cmake -S "$here" -B "$dir" "${args[@]}" "$@" >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log" >&2
    rm -f "$dir/CMakeCache.txt"
    echo "setup: configuring $dir failed (log above); fix the cause and run setup again" >&2
    exit 1
  fi
}

# The whole test suite (ctest, the multi-process deploy tests included) under
# AddressSanitizer + UndefinedBehaviorSanitizer, in its own build directory
# (${build}-asan). Every instrumented process, the `atrain node` hosts and
# drivers the tests start included, writes its sanitizer report to a file in
# $dir/sanitizer-logs/ (log_path), not to a stderr a test may capture or
# discard: any file there fails the step, whatever the tests said. UBSan
# halts on its first finding; LeakSanitizer runs at every exit, with the
# named suppressions of tests/sanitizers/lsan.supp (CAF's shutdown only).
# ATRAIN_TIME_SCALE stretches the tests' wall-clock bounds for the slower
# build (see docs/RELIABILITY.md "Sanitizers"). Extra arguments go to ctest.
sanitize() {
  local dir="${build}-asan"
  configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DATRAIN_SANITIZE=address;undefined" \
    -DATRAIN_BUILD_BENCH=OFF
  cmake --build "$dir" -j"$jobs"
  local logs="$dir/sanitizer-logs"
  rm -rf "$logs" && mkdir -p "$logs"
  local status=0
  (
    cd "$dir"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:log_path=$logs/asan"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"
    export LSAN_OPTIONS="suppressions=$here/tests/sanitizers/lsan.supp:print_suppressions=0"
    export ATRAIN_TIME_SCALE="${ATRAIN_TIME_SCALE:-3}"
    ctest --output-on-failure -j"$jobs" --timeout 1800 "$@"
  ) || status=$?
  if [ -n "$(ls -A "$logs")" ]; then
    for f in "$logs"/*; do
      echo "setup: sanitizer report $f:" >&2
      cat "$f" >&2
    done
    echo "setup: the sanitizers reported $(ls "$logs" | wc -l) finding(s) (above)" >&2
    [ "$status" -ne 0 ] || status=1
  fi
  return "$status"
}

build_all() {
  configure
  cmake --build "$build" -j"$jobs" "$@"
}

verify_data() {
  (cd "$here/data" && sha256sum --quiet -c SHA256SUMS) || {
    echo "setup: data/ does not match data/SHA256SUMS" >&2
    exit 1
  }
}

cmd="${1:-run}"
[ $# -gt 0 ] && shift
[ "$cmd" = bench ] && packages+=("${bench_packages[@]}")
install_missing
verify_data
case "$cmd" in
  configure)
    configure
    ;;
  build)
    build_all
    ;;
  run)
    build_all --target atrain
    spec="config/quickstart.textproto"
    if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then spec="$1"; shift; fi
    cd "$here"
    exec "$build/atrain" run "$spec" --out "$build/runs/$(basename "$spec" .textproto)" "$@"
    ;;
  bench)
    # Reconfigure so a peer installed just now is found.
    [ -f "$build/CMakeCache.txt" ] && cmake "$build" >/dev/null
    build_all --target bench
    ;;
  sanitize)
    sanitize "$@"
    ;;
  test)
    build_all
    cd "$build"
    exec ctest --output-on-failure -j"$jobs" "$@"
    ;;
  *)
    echo "usage: apps/setup.sh {run [SPEC] [flags]|test [ctest flags]|build|configure|bench|sanitize}" >&2
    exit 2
    ;;
esac
