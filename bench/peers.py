#!/usr/bin/python3
"""The articles' own attention code, timed on the same inputs as cpu_bench.

numpy: the NumPy implementation of "Understanding Transformer Networks and the
Self-Attention Mechanism" (stabilised softmax, np.where mask), run on Debian's
python3-numpy with OpenBLAS. torch: the PyTorch implementation of "The Transformer
Breakdown" / "Transformer Architecture" (torch.matmul, masked_fill, F.softmax), on
Debian's python3-torch. Both get float32 inputs (the engine's type) and every core.

Usage: peers.py [--json FILE] [--quick]
"""
import argparse
import json
import math
import os
import statistics
import time

import numpy as np


def numpy_attention(Q, K, V, mask=None):
    # As printed in the article, batched over heads: [heads, n, d_k].
    def softmax(x):
        exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return exp_x / np.sum(exp_x, axis=-1, keepdims=True)

    d_k = Q.shape[-1]
    scores = np.matmul(Q, K.swapaxes(-2, -1)) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask == 0, -1e9, scores)
    attention_weights = softmax(scores)
    output = np.matmul(attention_weights, V)
    return output, attention_weights


def torch_attention(torch, F, query, key, value, mask=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1))
    scores = scores / (d_k ** 0.5)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    attention_weights = F.softmax(scores, dim=-1)
    output = torch.matmul(attention_weights, value)
    return output, attention_weights


def median_seconds(body, runs, min_total=0.3):
    body()
    times = []
    begin = time.perf_counter()
    while len(times) < runs or (time.perf_counter() - begin < min_total and len(times) < 50):
        t0 = time.perf_counter()
        body()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    heads, d_k = 8, 64
    sizes = [256, 1024] if args.quick else [256, 512, 1024, 2048, 4096]
    runs = 3 if args.quick else 7
    rows = []
    rng = np.random.default_rng(1)

    try:
        import torch
        import torch.nn.functional as F
        torch.set_num_threads(os.cpu_count())
    except ImportError:
        torch = None

    for n in sizes:
        flops = 4.0 * n * n * d_k * heads
        Q, K, V = (rng.standard_normal((heads, n, d_k), dtype=np.float32) for _ in range(3))
        t = median_seconds(lambda: numpy_attention(Q, K, V), runs)
        rows.append({"n": n, "impl": "numpy (article code)", "ms": t * 1e3, "gflops": flops / t * 1e-9})
        print(f"numpy  n={n}: {t * 1e3:.2f} ms, {flops / t * 1e-9:.1f} GFLOP/s", flush=True)
        if torch is not None:
            q, k, v = (torch.from_numpy(x) for x in (Q, K, V))
            with torch.no_grad():
                t = median_seconds(lambda: torch_attention(torch, F, q, k, v), runs)
            rows.append({"n": n, "impl": "torch (article code)", "ms": t * 1e3, "gflops": flops / t * 1e-9})
            print(f"torch  n={n}: {t * 1e3:.2f} ms, {flops / t * 1e-9:.1f} GFLOP/s", flush=True)
    report = {"numpy": np.__version__, "torch": torch.__version__ if torch else None,
              "threads": os.cpu_count(), "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
