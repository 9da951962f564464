#!/usr/bin/env bash
# scripts/only-tracer-crashes.sh on three ctest logs: a failure that is LeakSanitizer's tracer
# crash alone (rerun: 0), that crash beside a real failure (1), and no failure at all (1).
set -uo pipefail
check="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
crash='2/3 Testing: b
All tests passed (3 assertions in 1 test case)
Tracer caught signal 11: addr=0x1720 pc=0x7fa5d3ce80f0 sp=0x7fa5c1d46d10
==1==LeakSanitizer has encountered a fatal error.
Test Failed.'
printf '1/3 Testing: a\nTest Passed.\n%s\n3/3 Testing: c\nTest Passed.\n' "$crash" > "$dir/crash.log"
printf '1/3 Testing: a\nTest Passed.\n%s\n3/3 Testing: c\nFAILED: CHECK( x == 1 )\nTest Failed.\n' "$crash" > "$dir/mixed.log"
printf '1/1 Testing: a\nTest Passed.\n' > "$dir/passed.log"
status=0
"$check" "$dir/crash.log" | grep -qx "LeakSanitizer tracer crash: b" || { echo "a tracer crash alone was not taken for one"; status=1; }
"$check" "$dir/mixed.log" > /dev/null && { echo "a real failure beside a tracer crash was taken for a crash"; status=1; }
"$check" "$dir/passed.log" > /dev/null && { echo "a log without a failure was taken for a crash"; status=1; }
exit $status
