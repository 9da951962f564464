#!/bin/sh
# Frame times of the desktop app while one embedding is edited every frame (issue 6):
# median and 95th percentile of the frame time, and the median recompute, for the
# 3-token article example and the 64-token preset (d_model 64, 8 heads).
#   bench/frame_bench.sh [build dir] [frames]
set -eu
BUILD=${1:-build}
FRAMES=${2:-300}
APP="$BUILD/app/attnlab"
if [ ! -x "$APP" ]; then
    echo "frame_bench: $APP not found (build first, or pass the build directory)" >&2
    exit 1
fi
for preset in dot-product-3-tokens long-64-tokens; do
    echo "== $preset, $FRAMES frames"
    xvfb-run -a -s "-screen 0 1920x1080x24" "$APP" --preset "$preset" --bench-frames "$FRAMES" --size 1600x1000 --no-autosave
done
