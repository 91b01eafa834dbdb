#!/usr/bin/env bash
# atrain set-up: installs what is missing, builds (Release), then runs or tests.
#
#   apps/setup.sh run  [SPEC] [atrain run flags...]   default experiment (config/quickstart.textproto)
#   apps/setup.sh test [ctest flags...]               the whole test suite through CTest
#   apps/setup.sh build                               install + build only
#   apps/setup.sh configure                           install + configure only
#   apps/setup.sh bench                               + the benchmarks' peers (gloo), run bench/
#   apps/setup.sh sanitize                            unit suites under ASan + UBSan (build-asan/)
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

# The unit suites under AddressSanitizer + UndefinedBehaviorSanitizer, in
# their own build directory (${build}-asan): the libraries CAF-free code lives
# in (kernels, topology, messages) and their tests.
sanitize() {
  local dir="${build}-asan" suites=(test_kernels test_topology test_messages)
  configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DATRAIN_SANITIZE=address;undefined" \
    -DATRAIN_BUILD_BENCH=OFF
  cmake --build "$dir" -j"$jobs" --target "${suites[@]}"
  cd "$here"
  for t in "${suites[@]}"; do
    echo "setup: $t under ASan + UBSan" >&2
    ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$dir/tests/$t" --log_level=nothing --report_level=short
  done
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
    sanitize
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
