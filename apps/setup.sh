#!/usr/bin/env bash
# atrain set-up: installs what is missing, builds (Release), then runs or tests.
#
#   apps/setup.sh run  [SPEC] [atrain run flags...]   default experiment (config/quickstart.textproto)
#   apps/setup.sh test [ctest flags...]               the whole test suite through CTest
#   apps/setup.sh build                               install + build only
#   apps/setup.sh configure                           install + configure only
#   apps/setup.sh bench                               + the benchmarks' peers (gloo), run bench/
#   apps/setup.sh sanitize [ctest flags...]           the whole suite under ASan + UBSan (build-asan/)
#   apps/setup.sh tsan [ctest flags...]               test_actors's real-clock cases under TSan,
#                                                     against CAF built with TSan (build-tsan/)
#
# Idempotent: packages already installed are not reinstalled, an existing
# build directory is reused (incremental build). BUILD_DIR overrides ./build.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$here/build}"
jobs="$(nproc 2>/dev/null || echo 2)"
# Paths relative to the source root in ccache's keys: a fresh clone elsewhere
# (CI's) reuses what an earlier clone compiled.
export CCACHE_BASEDIR="$here" CCACHE_NOHASHDIR=true
# gnuplot-nox draws `atrain compare`'s figures (and lets the tests check them);
# iproute2 (`ip`) builds the network namespaces of tests/deploy/partition_test.py.
# ccache keeps compiled objects between build directories and fresh clones.
packages=(ccache libcaf-dev libdnnl-dev ocl-icd-opencl-dev libeigen3-dev libprotobuf-dev protobuf-compiler
          libboost-test-dev libboost-program-options-dev zlib1g-dev libssl-dev openssl cmake g++ make
          gnuplot-nox iproute2 python3)

# Peers of the benchmarks only (bench/): not needed to build, run or test.
# python3-torch is PyTorch for the DDP peer and the kernel comparison
# (/usr/bin/python3; bench/*.py take --python or $ATRAIN_PYTHON). Without
# libopenblas0-pthread torch's BLAS is the reference one (the MLP peer ran 85
# steps/s instead of 1,006): an unfair peer.
bench_packages=(libgloo-dev python3-torch libopenblas0-pthread)

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
  command -v ccache >/dev/null && args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  [ -n "${CI:-}" ] && [ "${CI}" != false ] && args+=(-DATRAIN_WERROR=ON)
  mkdir -p "$dir"
  if ! cmake -S "$here" -B "$dir" "${args[@]}" "$@" >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log" >&2
    rm -f "$dir/CMakeCache.txt"
    echo "setup: configuring $dir failed (log above); fix the cause and run setup again" >&2
    exit 1
  fi
}

# Prints every report file in $1 (a sanitizer's log_path directory) and fails
# when there is one, whatever ctest's status $2 said; $3 names the tool.
sanitizer_verdict() {
  local logs="$1" status="$2" tool="$3"
  if [ -n "$(ls -A "$logs")" ]; then
    for f in "$logs"/*; do
      echo "setup: $tool: report $f:" >&2
      cat "$f" >&2
    done
    echo "setup: $tool wrote $(ls "$logs" | wc -l) report file(s) (above)" >&2
    [ "$status" -ne 0 ] || status=1
  fi
  return "$status"
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
  sanitizer_verdict "$logs" "$status" "the sanitizers"
}

# CAF 0.17.6 built with ThreadSanitizer, for `tsan` below: Debian's libcaf is
# not instrumented, so TSan cannot see its mailbox, reference counts and
# scheduler, and reports every message handed from one actor to another as a
# race (hundreds per run). The source is the one of the installed libcaf-dev
# (apt-get source, checked against the signed index; ATRAIN_CAF_SOURCE: a
# tarball or directory instead), with Debian's two build fixes for g++ 12.
# Built once into $1 (libcaf_core, _io, _openssl); the same headers as
# /usr/include/caf, so test_actors runs on it through LD_LIBRARY_PATH.
caf_tsan() {
  local dir="$1"
  local version
  version="$(dpkg-query -W -f='${source:Upstream-Version}' libcaf-dev)"
  local lib="$dir/build/lib"
  if [ -f "$lib/libcaf_core.so.$version" ] && [ -f "$lib/libcaf_io.so.$version" ] &&
     [ -f "$lib/libcaf_openssl.so.$version" ]; then
    return 0
  fi
  local src="$dir/actor-framework-$version"
  if [ ! -f "$src/CMakeLists.txt" ]; then
    mkdir -p "$dir"
    local tarball="${ATRAIN_CAF_SOURCE:-}"
    if [ -d "$tarball" ]; then
      rm -rf "$src" && cp -r "$tarball" "$src"
    else
      if [ -z "$tarball" ]; then
        # The machine's own Debian sources, as deb-src, in a private list:
        # nothing in /etc/apt changes.
        local apt="$dir/apt"
        mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/download"
        for f in /etc/apt/sources.list.d/*.sources; do
          [ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" >"$apt/parts/$(basename "$f")"
        done
        [ -f /etc/apt/sources.list ] &&
          sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >"$apt/parts/sources.list"
        local opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/parts"
                    -o "Dir::State::Lists=$apt/lists" -o APT::Sandbox::User=root)
        apt-get "${opts[@]}" update -qq
        # Only the upstream tarball is used: Debian's packaging part may be
        # missing from the mirror, which fails the command after the tarball.
        (cd "$apt/download" &&
           apt-get "${opts[@]}" source --download-only -qq \
             "actor-framework=$(dpkg-query -W -f='${source:Version}' libcaf-dev)") \
          >"$apt/source.log" 2>&1 || true
        tarball="$apt/download/actor-framework_$version.orig.tar.gz"
        if [ ! -f "$tarball" ]; then
          cat "$apt/source.log" >&2
          echo "setup: could not fetch CAF $version's source; set ATRAIN_CAF_SOURCE to its tarball" >&2
          exit 1
        fi
      fi
      rm -rf "$src" && mkdir -p "$src"
      tar -xzf "$tarball" -C "$src" --strip-components=1
    fi
    # Debian's build fixes: C++14 (its CMakeLists says c++11) and <limits>.
    sed -i 's/-std=c++11/-std=c++14/' "$src/CMakeLists.txt"
    grep -q '<limits>' "$src/libcaf_io/caf/io/network/receive_buffer.hpp" ||
      sed -i 's/^#include <cstring>/#include <cstring>\n#include <limits>/' \
        "$src/libcaf_io/caf/io/network/receive_buffer.hpp"
  fi
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if ! cmake -S "$src" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         "-DCMAKE_CXX_FLAGS=-fsanitize=thread -fno-omit-frame-pointer" \
         -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread -DCAF_LOG_LEVEL=QUIET \
         -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_OPENCL=yes -DCAF_NO_PYTHON=yes \
         -DCAF_NO_TOOLS=yes -DCAF_NO_COMPILER_CHECK=yes "${launcher[@]}" \
         >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log" >&2
    echo "setup: configuring CAF with ThreadSanitizer failed (log above)" >&2
    exit 1
  fi
  cmake --build "$dir/build" -j"$jobs" --target libcaf_core_shared libcaf_io_shared \
    libcaf_openssl_shared
}

# test_actors's real-clock cases (CAF's threaded scheduler: the only ones
# with more than one thread; the ctest test actors_real_clock, registered in
# a ThreadSanitizer build only) under ThreadSanitizer, in ${build}-tsan,
# against CAF built with TSan (caf_tsan). Every report goes to a file in
# $dir/sanitizer-logs/ (log_path); any file there fails the step. The named
# suppressions of tests/sanitizers/tsan.supp cover oneDNN only. Extra
# arguments go to ctest (`-R '^actors$'`: the whole of test_actors).
tsan() {
  local dir="${build}-tsan"
  configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATRAIN_SANITIZE=thread \
    -DATRAIN_BUILD_BENCH=OFF
  cmake --build "$dir" -j"$jobs" --target test_actors
  caf_tsan "$dir/caf"
  local logs="$dir/sanitizer-logs"
  rm -rf "$logs" && mkdir -p "$logs"
  local status=0
  (
    cd "$dir"
    export LD_LIBRARY_PATH="$dir/caf/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # history_size=7: the previous access's stack is kept for longer (the
    # default loses it on these runs, "[failed to restore the stack]").
    export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 history_size=7 suppressions=$here/tests/sanitizers/tsan.supp log_path=$logs/tsan"
    ctest --output-on-failure --timeout 1800 -R '^actors_real_clock$' "$@"
  ) || status=$?
  sanitizer_verdict "$logs" "$status" "ThreadSanitizer"
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
  tsan)
    tsan "$@"
    ;;
  test)
    build_all
    cd "$build"
    exec ctest --output-on-failure -j"$jobs" "$@"
    ;;
  *)
    echo "usage: apps/setup.sh {run [SPEC] [flags]|test [ctest flags]|build|configure|bench|sanitize|tsan}" >&2
    exit 2
    ;;
esac
