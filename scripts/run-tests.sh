#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test:
#   1. the whole suite through ctest (the GL tests start their own virtual X server with
#      xvfb-run and Mesa llvmpipe, so no display is needed);
#   2. the engine's suite (core/ and its tests) again, built with AddressSanitizer and
#      UndefinedBehaviorSanitizer (the window and GL tests are not part of this stage);
#   3. a 60-second libFuzzer run on the scenario loader (clang), seeded with the shipped
#      scenario files, after replaying every input that ever crashed it.
# Set ATTNLAB_QUICK=1 to run only stage 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh" clang libclang-rt-14-dev
jobs="$(nproc)"

echo "== 1. build and test"
"$root/scripts/build.sh"
(cd "$root/build" && ctest --output-on-failure -j"$jobs" --timeout 900)
[ "${ATTNLAB_QUICK:-0}" = 1 ] && exit 0

echo "== 2. the engine's suite under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S "$root" -B "$root/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNLAB_SANITIZE=ON \
  -DATTNLAB_BUILD_BENCH=OFF -DATTNLAB_BUILD_APP=OFF > /dev/null
cmake --build "$root/build-asan" -j"$jobs"
(cd "$root/build-asan" && \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  LSAN_OPTIONS="suppressions=$root/tests/sanitizer/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j"$jobs" --timeout 1800)

echo "== 3. fuzzing the scenario loader for 60 s"
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNLAB_FUZZ=ON \
  -DATTNLAB_NATIVE=OFF -DATTNLAB_BUILD_APP=OFF -DATTNLAB_BUILD_TESTS=OFF -DATTNLAB_BUILD_BENCH=OFF > /dev/null
cmake --build "$root/build-fuzz" -j"$jobs" --target fuzz_scenario
corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
cp "$root"/tests/data/*.json "$root"/tests/fuzz/regressions/* "$root"/assets/lessons/*.json "$corpus"/
"$root/build/app/attnlab" --list-presets | while read -r preset; do
  "$root/build/app/attnlab" --preset "$preset" --export-scenario "$corpus/$preset.json" 2>/dev/null || true
done
fuzzer="$root/build-fuzz/tests/fuzz/fuzz_scenario"
"$fuzzer" "$root"/tests/fuzz/regressions/*
"$fuzzer" -max_total_time=60 -max_len=8192 -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix="$root/tests/fuzz/regressions/" "$corpus" 2>&1 | tail -n 3
echo "all test stages passed"
