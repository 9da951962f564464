#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through ctest. The GL tests run
# their own virtual X server (xvfb-run with Mesa llvmpipe), so no display is needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure -j2 --timeout 900
