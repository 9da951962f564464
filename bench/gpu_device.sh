#!/bin/sh
# Everything the project measures on a real GPU, in one run on a machine with no X server
# (GL through EGL), each result in a file of OUT:
#   card.txt                   the GPU (nvidia-smi -L, where there is one) and GL_RENDERER
#   test_gpu_gl-*.txt          the GPU suite: the kernel create() keeps, then tiled, then rows
#   test_gpu_compute_gl.txt    the window's compute layer with the real backend
#   gpu_bench.txt, gpu.json    TFLOP/s, % of the FP32 peak, max |GPU − CPU|, unmasked and
#                              causal, n = 1,024 … 65,536
#   frames-N.txt               the window off-screen on N generated tokens, an edit at a time:
#                              frame times, and each edit's time to the new heatmap and outputs
#   65536.png                  the window's picture of 65,536 tokens
#
#   bench/gpu_device.sh BIN OUT
# BIN holds attnlab, gpu_bench, test_gpu_gl and test_gpu_compute_gl (e.g. .device/bin after
# ../shared/gpu/pack-for-device.sh, or a directory of links into a build). Smaller runs for
# a smoke test: GPU_DEVICE_SIZES="1024" GPU_DEVICE_BENCH="--quick" bench/gpu_device.sh BIN OUT.
set -u
if [ $# -ne 2 ]; then
    echo "usage: bench/gpu_device.sh BIN OUT" >&2
    exit 2
fi
BIN=$1
OUT=$2
SIZES=${GPU_DEVICE_SIZES:-"16384 65536"}
BENCH=${GPU_DEVICE_BENCH:-"--from 1024 --to 65536 --mask both --cpu-to 8192"}
mkdir -p "$OUT"
unset DISPLAY WAYLAND_DISPLAY
export ATTNLAB_GL_PLATFORM=egl
failed=0
step() {  # step NAME FILE COMMAND…: runs it, keeps its output, says how it ended
    name=$1
    file=$2
    shift 2
    start=$(date +%s)
    "$@" > "$OUT/$file" 2>&1
    status=$?
    echo "$name: exit $status, $(($(date +%s) - start)) s ($OUT/$file)"
    [ $status -eq 0 ] || failed=1
}

{ nvidia-smi -L 2> /dev/null || echo "no nvidia-smi"; } > "$OUT/card.txt"
step "gpu_bench" gpu_bench.txt "$BIN/gpu_bench" --json "$OUT/gpu.json" $BENCH
grep -E "^GPU:|^kernel:|^variants" "$OUT/gpu_bench.txt" >> "$OUT/card.txt"
step "GPU suite, the kernel kept" test_gpu_gl-auto.txt "$BIN/test_gpu_gl"
step "GPU suite, tiled kernel" test_gpu_gl-tiled.txt env ATTNLAB_GPU_KERNEL=tiled "$BIN/test_gpu_gl"
step "GPU suite, rows kernel" test_gpu_gl-rows.txt env ATTNLAB_GPU_KERNEL=rows "$BIN/test_gpu_gl"
step "compute layer" test_gpu_compute_gl.txt "$BIN/test_gpu_compute_gl"
step "window, 64 tokens" frames-64.txt "$BIN/attnlab" --preset long-64-tokens --backend gpu --bench-frames 300 \
    --size 1600x1000 --no-autosave
for n in $SIZES; do
    step "window, $n tokens" "frames-$n.txt" env ATTNLAB_DEBUG_GENERATE="$n" "$BIN/attnlab" --backend gpu --bench-frames 2000 \
        --size 1600x1000 --no-autosave
done
last=$(echo "$SIZES" | awk '{print $NF}')
step "picture, $last tokens" "picture-$last.txt" env ATTNLAB_DEBUG_GENERATE="$last" "$BIN/attnlab" --backend gpu \
    --screenshot "$OUT/$last.png" --size 1600x1000 --no-autosave
cat "$OUT/card.txt"
exit $failed
