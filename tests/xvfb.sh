#!/usr/bin/env bash
# Runs a command with its own virtual X server (Xvfb; Mesa llvmpipe draws, OpenGL 4.5).
# Unlike `xvfb-run -a`, the server picks a free display itself (-displayfd: no race between
# two servers starting at once) and is stopped and waited for before this returns, so the
# next test never meets a server that is still shutting down on the same display. -noreset:
# an X server resets itself each time its last client leaves, and a test that opens window
# after window (one gui::run after another) could connect during that reset and be refused,
# or be dropped by it (Xlib then exits the process); under load on 2 cores that happened.
# Usage: xvfb.sh [-s WxHxD] COMMAND ARGS...   (exit code: the command's)
set -u
screen="1920x1080x24"
if [ "${1:-}" = "-s" ]; then
  screen="$2"
  shift 2
fi
display_file="$(mktemp)"
Xvfb -displayfd 3 -screen 0 "$screen" -nolisten tcp -noreset 3>"$display_file" &  # its messages go to the test log
server=$!
for _ in $(seq 200); do  # up to 20 s for the server to be ready
  [ -s "$display_file" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
display="$(tr -d '[:space:]' < "$display_file")"
rm -f "$display_file"
if [ -z "$display" ]; then
  echo "xvfb.sh: Xvfb did not start" >&2
  kill "$server" 2>/dev/null
  exit 1
fi
DISPLAY=":$display" "$@"
code=$?
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit "$code"
