#!/usr/bin/python3
"""Merges cpu_bench and peers JSON into a Markdown table and a PNG plot (throughput vs n).

Usage: report.py CPU.json PEERS.json OUT.md OUT.png
"""
import json
import sys


def main():
    cpu_path, peers_path, md_path, png_path = sys.argv[1:5]
    cpu = json.load(open(cpu_path))
    peers = json.load(open(peers_path))
    series = {}
    for row in cpu["attnlab"]:
        series.setdefault("attnlab " + row["mode"], {})[row["n"]] = row["gflops"]
    for row in peers["rows"]:
        series.setdefault(row["impl"], {})[row["n"]] = row["gflops"]
    sizes = sorted({n for s in series.values() for n in s})

    gemm = cpu["eigen_gemm_gflops"]
    lines = [
        f"Attention, {cpu['heads']} heads, d_k = {cpu['d_k']}, float32, {cpu['threads']} threads; "
        f"GFLOP/s counts 4·n²·d per head (half for causal). Eigen's GEMM in the same run: "
        f"{gemm:.1f} GFLOP/s; the naive triple loop: {cpu['naive_gflops']:.2f} GFLOP/s.",
        "",
        "| implementation | " + " | ".join(f"n = {n}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for name, values in series.items():
        cells = [f"{values[n]:.1f}" if n in values else "–" for n in sizes]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    best_peer = {n: max((series[p][n] for p in series if not p.startswith("attnlab") and n in series[p]), default=None)
                 for n in sizes}
    lines += ["", "Speed-up of attnlab's output-only mode over the faster peer (same n, same run):", ""]
    for n in sizes:
        ours = series.get("attnlab output-only", {}).get(n)
        if ours and best_peer[n]:
            lines.append(f"- n = {n}: {ours / best_peer[n]:.1f}×")
    full = series.get("attnlab full trace", {})
    lines += ["", "Ratios to Eigen's GEMM: " + ", ".join(
        f"output-only n={n}: {series['attnlab output-only'][n] / gemm:.2f}" for n in sizes
        if n in series.get("attnlab output-only", {})) + "; " + ", ".join(
        f"full trace n={n}: {full[n] / gemm:.2f}" for n in sizes if n in full), "",
        "Edit of one token's embedding, full trace kept up to date (8 heads, d_model = 512): " + "; ".join(
            f"n = {n}: full recompute {cpu[f'edit_one_token_n{n}_full_ms']:.1f} ms, incremental "
            f"{cpu[f'edit_one_token_n{n}_incremental_ms']:.1f} ms" for n in (512, 2048)) + "."]
    open(md_path, "w").write("\n".join(lines) + "\n")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    for name, values in series.items():
        xs = sorted(values)
        ax.plot(xs, [values[x] for x in xs], marker="o", linewidth=2.5 if name.startswith("attnlab") else 1.5,
                label=name)
    ax.axhline(gemm, color="gray", linestyle="--", label="Eigen GEMM (same run)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"Attention throughput, {cpu['heads']} heads, d_k = {cpu['d_k']}, float32")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path)


if __name__ == "__main__":
    main()
