#!/usr/bin/env bash
# The CPU benchmark in one command: builds, runs the engine's benchmark and the articles'
# NumPy and PyTorch code on the same inputs, then writes bench/results/cpu.md (table) and
# bench/results/cpu.png (plot). Every figure is the median of several runs in one process.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh" python3-numpy python3-torch libopenblas0 python3-matplotlib
"$root/scripts/build.sh"
out="$root/bench/results"
mkdir -p "$out"
"$root/build/bench/cpu_bench" --json "$out/cpu.json" "$@"
/usr/bin/python3 "$root/bench/peers.py" --json "$out/peers.json" "$@"
/usr/bin/python3 "$root/bench/report.py" "$out/cpu.json" "$out/peers.json" "$out/cpu.md" "$out/cpu.png"
"$root/build/bench/cpu_bench" --memory 65536 | tee "$out/memory.txt"
cat "$out/cpu.md"
