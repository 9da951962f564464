#!/bin/sh
# Frame times of the desktop app while one embedding is edited every frame:
# median and 95th percentile of the frame time, and the median recompute, for the
# 3-token article example and the 64-token preset (d_model 64, 8 heads).
#   bench/frame_bench.sh [build dir] [frames] [xvfb|offscreen] [attnlab options…]
# xvfb: the window under a virtual X server (the default where xvfb-run exists);
# offscreen: no X server at all, drawn through a headless EGL context into a framebuffer
# object — a GPU server's case, e.g. `bench/frame_bench.sh build 300 offscreen --backend gpu`.
set -eu
BUILD=${1:-build}
FRAMES=${2:-300}
if command -v xvfb-run > /dev/null; then MODE=${3:-xvfb}; else MODE=${3:-offscreen}; fi
[ $# -gt 3 ] && shift 3 || shift $#
APP="$BUILD/app/attnlab"
if [ ! -x "$APP" ]; then
    echo "frame_bench: $APP not found (build first, or pass the build directory)" >&2
    exit 1
fi
for preset in dot-product-3-tokens long-64-tokens; do
    echo "== $preset, $FRAMES frames, $MODE"
    case "$MODE" in
        xvfb) xvfb-run -a -s "-screen 0 1920x1080x24" "$APP" --preset "$preset" --bench-frames "$FRAMES" --size 1600x1000 --no-autosave "$@" ;;
        offscreen) env -u DISPLAY -u WAYLAND_DISPLAY "$APP" --preset "$preset" --bench-frames "$FRAMES" --size 1600x1000 --no-autosave "$@" ;;
        *) echo "frame_bench: mode $MODE: expected xvfb or offscreen" >&2; exit 2 ;;
    esac
done
