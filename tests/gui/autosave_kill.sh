#!/usr/bin/env bash
# kill -9 in the middle of editing loses at most the last few seconds, and the next start
# offers the autosave and restores it. The app runs the frame benchmark's edit loop (one
# embedding cell changed every frame) in a virtual X server, is killed with SIGKILL, and
#   1. its autosave is at most 4 s older than the kill (written every 2 s while editing;
#      the rest is slack for a loaded machine or a sanitizer build);
#   2. while it ran, its autosave was its own: `--restore` found nothing to restore;
#   3. `attnlab --restore` afterwards reads the edited scenario, not the preset;
#   4. a window opened afterwards asks whether to restore it (and a screenshot shows it).
# Usage: autosave_kill.sh ATTNLAB WORK_DIR
set -euo pipefail
attnlab="$1"
work="$2"
xvfb="$(cd "$(dirname "$0")/.." && pwd)/xvfb.sh"
rm -rf "$work"
mkdir -p "$work"
export XDG_STATE_HOME="$work/state"
state="$XDG_STATE_HOME/attnlab"
fail() { echo "FAIL: $*"; cat "$work/run.log" 2>/dev/null || true; exit 1; }

"$xvfb" "$attnlab" --preset long-64-tokens --size 800x600 --bench-frames 100000000 \
  > "$work/run.log" 2>&1 &
runner=$!
app=""
for _ in $(seq 600); do  # up to 60 s for the window and the first autosave
  app="$(pgrep -P "$runner" -x attnlab || true)"
  [ -n "$app" ] && compgen -G "$state/autosave-*.json" > /dev/null && break
  sleep 0.1
done
[ -n "$app" ] || fail "the app did not start"
compgen -G "$state/autosave-*.json" > /dev/null || fail "no autosave after 60 s of editing"

if "$attnlab" --restore --print > /dev/null 2> "$work/restore-while-running.log"; then
  fail "--restore took the autosave of a running app"
fi
grep -q "no autosave left by a run that did not close normally" "$work/restore-while-running.log" ||
  fail "unexpected message: $(cat "$work/restore-while-running.log")"

sleep 5  # editing goes on
kill -9 "$app"
killed="$(date +%s.%N)"
wait "$runner" || true
file="$(ls "$state"/autosave-*.json)"
written="$(stat -c %.9Y "$file")"
age="$(awk -v k="$killed" -v w="$written" 'BEGIN { printf "%.2f", k - w }')"
echo "autosave written ${age} s before the kill"
awk -v a="$age" 'BEGIN { exit !(a <= 4.0) }' || fail "the autosave was ${age} s old at the kill (more than 4 s lost)"

"$attnlab" --restore --export-scenario "$work/restored.json" 2> "$work/restore.log" || fail "--restore: $(cat "$work/restore.log")"
"$attnlab" --preset long-64-tokens --export-scenario "$work/preset.json"
python3 - "$work/restored.json" "$work/preset.json" <<'PY' || fail "the restored scenario is not the edited one"
import json, sys
restored, preset = (json.load(open(p)) for p in sys.argv[1:3])
x = restored.get("embeddings")
assert x is not None, "no edited embeddings in the autosave"
edits = {0.5 + 0.25 * k for k in range(7)}  # the values the edit loop writes into X[0][0]
assert x[0][0] in edits, x[0][0]
assert restored["tokens"] == preset["tokens"]
print("restored X[0][0] =", x[0][0])
PY

"$xvfb" "$attnlab" --size 1000x700 --screenshot "$work/offer.png" 2> "$work/offer.log" ||
  fail "screenshot: $(cat "$work/offer.log")"
grep -q "asking whether to restore it" "$work/offer.log" || fail "no restore offer: $(cat "$work/offer.log")"
[ -s "$work/offer.png" ] || fail "no screenshot"
"$xvfb" "$attnlab" --restore --size 1000x700 --screenshot "$work/restored.png" 2> "$work/restored.log" ||
  fail "screenshot: $(cat "$work/restored.log")"
grep -q "Restored the session autosaved at" "$work/restored.log" || fail "not restored: $(cat "$work/restored.log")"
compgen -G "$state/autosave-*.json" > /dev/null || fail "a screenshot removed the autosave it only looked at"
echo "autosave survived kill -9 and was restored"
