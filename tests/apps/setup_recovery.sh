#!/bin/sh
# apps/setup.sh recovers from a failed configure: a build directory whose
# CMakeCache.txt belongs to another source tree makes CMake fail; setup must
# say so, leave no cache behind, and configure cleanly on the next call.
set -u
probe="$1"
rm -rf "$probe" && mkdir -p "$probe/other"
printf 'CMAKE_HOME_DIRECTORY:INTERNAL=%s\n' "$probe/other" > "$probe/CMakeCache.txt"
if BUILD_DIR="$probe" apps/setup.sh configure > "$probe.first" 2>&1; then
  echo "FAIL: a configure against a foreign cache succeeded"; exit 1
fi
grep -q "setup: configuring $probe failed" "$probe.first" || { echo "FAIL: no failure message"; cat "$probe.first"; exit 1; }
[ ! -f "$probe/CMakeCache.txt" ] || { echo "FAIL: the failed cache was left behind"; exit 1; }
BUILD_DIR="$probe" apps/setup.sh configure || { echo "FAIL: second configure failed"; exit 1; }
[ -f "$probe/Makefile" ] || { echo "FAIL: no Makefile after the second configure"; exit 1; }
# A cache without generator files (an interrupted configure) is redone too.
rm -f "$probe/Makefile"
BUILD_DIR="$probe" apps/setup.sh configure && [ -f "$probe/Makefile" ] || { echo "FAIL: interrupted configure not redone"; exit 1; }
rm -rf "$probe" "$probe.first"
echo "setup_recovery OK"
