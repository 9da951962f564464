#!/usr/bin/env bash
# Exit 0 when every failed test in a ctest log (Testing/Temporary/LastTest.log) printed
# LeakSanitizer's tracer crash ("LeakSanitizer has encountered a fatal error") and there was at
# least one; exit 1 otherwise. Each test's output stands between its "N/M Testing: name" line and
# its "Test Passed." or "Test Failed." line. The names of the crashed tests are printed.
set -euo pipefail
log="$1"
awk '
  /^[0-9]+\/[0-9]+ Testing: / { name = substr($0, index($0, "Testing: ") + 9); crash = 0 }
  /LeakSanitizer has encountered a fatal error/ { crash = 1 }
  /^Test Failed\./ { failed++; if (crash) print "LeakSanitizer tracer crash: " name; else other++ }
  END { exit !(failed > 0 && other == 0) }' "$log"
