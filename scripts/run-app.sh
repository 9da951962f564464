#!/usr/bin/env bash
# Installs what is missing, builds, and opens Attention Lab on the default preset.
# Extra arguments go to attnlab, e.g. --preset dog-bites-man.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "No display: running under a virtual X server (xvfb-run). Use --screenshot OUT.png to see a frame." >&2
  exec xvfb-run -a -s "-screen 0 1920x1080x24 -noreset" "$root/build/app/attnlab" "$@"
fi
exec "$root/build/app/attnlab" "$@"
