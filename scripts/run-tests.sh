#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test:
#   1. the whole suite through ctest (the GL tests start their own virtual X server with
#      tests/xvfb.sh — Xvfb and Mesa llvmpipe — so no display is needed);
#   2. the whole suite again — engine, command line, window, GL and GPU tests — built with
#      AddressSanitizer (and LeakSanitizer) and UndefinedBehaviorSanitizer;
#   3. libFuzzer (clang) on the scenario and lesson loaders (30 s each), and on the
#      safetensors reader, the BPE tokenizer, the tokenizer.json reader, the model-file reader
#      and sessions with the models they reference (20 s each), seeded with the shipped files, after replaying
#      every input that ever crashed them (every CI run fuzzes again, from the seeds).
# Set ATTNLAB_QUICK=1 to run only stage 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# node and npm for the tokenizer tests' reference (tests/tokenizers/reference.cmake). Debian's npm
# conflicts with a NodeSource nodejs, which carries its own npm: it is asked for only when
# there is no npm.
node_packages=(nodejs)
command -v npm > /dev/null || node_packages+=(npm)
# lintian and desktop-file-utils check the Debian package (tests/package).
"$root/scripts/install-deps.sh" clang libclang-rt-14-dev python3 procps glslang-tools lintian desktop-file-utils "${node_packages[@]}"
jobs="$(nproc)"
# Each stage says how long it took: the whole run must stay well inside CI's limit.
stage_start=$SECONDS
took() { echo "== $1 took $(((SECONDS - stage_start) / 60)) min $(((SECONDS - stage_start) % 60)) s"; stage_start=$SECONDS; }

echo "== 1. build and test"
"$root/scripts/build.sh"
(cd "$root/build" && ctest --output-on-failure -j"$jobs" --timeout 900)
took "stage 1"
[ "${ATTNLAB_QUICK:-0}" = 1 ] && exit 0

echo "== 2. the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer"
# -O1 -g1 and no -march=native: the sanitized build compiles in half the time of -O2 -g. The
# code under test is instrumented, the tests' own code is not (tests/CMakeLists.txt).
cmake -S "$root" -B "$root/build-sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" -DATTNLAB_NATIVE=OFF -DATTNLAB_SANITIZE=ON -DATTNLAB_BUILD_BENCH=OFF > /dev/null
cmake --build "$root/build-sanitize" -j"$jobs"
# intercept_tls_get_addr=0: the runtime of GCC 12 (as of LLVM 16) reads a dynamic TLS block that a
# malloc put at a certain offset as a glibc 2.19 TLS header, and LeakSanitizer's tracer then
# crashes as the process exits ("Tracer caught signal 11"): it struck the window's tests, whose GL
# libraries hold dynamic TLS, on both attempts of the rerun below (Mudlet/Mudlet#9809, #9930;
# google/sanitizers#1322).
sanitized_ctest() {
  (cd "$root/build-sanitize" && \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:intercept_tls_get_addr=0 \
    LSAN_OPTIONS="suppressions=$root/tests/sanitizer/lsan.supp:print_suppressions=0" \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --output-on-failure -j"$jobs" --timeout 1800 "$@")
}
if ! sanitized_ctest; then
  # LeakSanitizer's own stop-the-world tracer now and then crashes as a process exits ("Tracer
  # caught signal 11 … LeakSanitizer has encountered a fatal error", google/sanitizers#1353):
  # no leak is reported and the test's own checks have passed. When that is what every failed
  # test printed, those tests run once more; any other failure fails the stage.
  if "$root/scripts/only-tracer-crashes.sh" "$root/build-sanitize/Testing/Temporary/LastTest.log"; then
    echo "== LeakSanitizer's tracer crashed at exit in the tests above; they run once more"
    sanitized_ctest --rerun-failed
  else
    exit 1
  fi
fi
took "stage 2"

echo "== 3. fuzzing the scenario, lesson, model-file and session loaders, the safetensors reader and the BPE and tokenizer.json tokenizers"
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNLAB_FUZZ=ON \
  -DATTNLAB_NATIVE=OFF -DATTNLAB_BUILD_APP=OFF -DATTNLAB_BUILD_TESTS=OFF -DATTNLAB_BUILD_BENCH=OFF > /dev/null
cmake --build "$root/build-fuzz" -j"$jobs" --target fuzz_scenario fuzz_lesson fuzz_safetensors fuzz_bpe fuzz_tokenizer fuzz_model fuzz_session
corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/scenario" "$corpus/lesson" "$corpus/safetensors" "$corpus/bpe" "$corpus/tokenizer" "$corpus/model" "$corpus/session"
cp "$root"/tests/data/*.json "$root"/tests/fuzz/regressions/scenario/* "$corpus/scenario/"
"$root/build/app/attnlab" --list-presets | while read -r preset; do
  "$root/build/app/attnlab" --preset "$preset" --export-scenario "$corpus/scenario/$preset.json" 2>/dev/null || true
done
cp "$root"/assets/lessons/*.json "$root"/tests/fuzz/regressions/lesson/* "$corpus/lesson/"
cp "$root"/tests/fuzz/regressions/safetensors/* "$corpus/safetensors/"
cp "$root"/tests/fuzz/regressions/bpe/* "$corpus/bpe/"
cp "$root"/tests/fuzz/regressions/tokenizer/* "$corpus/tokenizer/"
for file in "$root"/tests/data/tokenizers/*.json; do   # each hand-written tokenizer.json with a text
  { cat "$file"; printf '\036Hello  world, I\047m caf\303\251 12345 [CLS] <s>'; } > "$corpus/tokenizer/$(basename "$file")"
done
cp "$root"/tests/fuzz/regressions/model/* "$corpus/model/"
cp "$root"/tests/fuzz/regressions/session/* "$corpus/session/"
"$root/build/app/attnlab" --train reverse --d-model 8 --heads 1 --steps 5 --save-model "$corpus/model/tiny.json" 2>/dev/null
for target in scenario lesson safetensors bpe tokenizer model session; do
  fuzzer="$root/build-fuzz/tests/fuzz/fuzz_$target"
  regressions="$root/tests/fuzz/regressions/$target"
  case "$target" in scenario | lesson) seconds=30 ;; *) seconds=20 ;; esac
  # A session that carries a trained run is about 100 KB: its seeds are not cut short.
  case "$target" in session) max_len=131072 ;; tokenizer) max_len=32768 ;; *) max_len=8192 ;; esac
  "$fuzzer" "$regressions"/*
  log="$corpus/$target.log"
  if ! "$fuzzer" -max_total_time=$seconds -max_len=$max_len -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$corpus/artifact-$target-" "$corpus/$target" > "$log" 2>&1; then
    # The log's end holds the stack; the input itself goes to the regressions and, base64,
    # into this output, so a crash on a machine that is gone can still be replayed.
    tail -n 80 "$log"
    for artifact in "$corpus"/artifact-"$target"-*; do
      [ -f "$artifact" ] || continue
      cp "$artifact" "$regressions/"
      echo "== the input, base64 ($(basename "$artifact")):"
      base64 -w 0 "$artifact"
      echo
    done
    exit 1
  fi
  tail -n 3 "$log"
done
took "stage 3"
echo "all test stages passed in $((SECONDS / 60)) min"
