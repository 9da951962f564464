#!/usr/bin/env python3
"""Peak memory and time of the command line refusing hostile files (not a test: a report).

Each file is the worst of its kind the loaders accept to read: the largest allowed size in
the shape that costs the most per byte (nested brackets, empty arrays and objects, empty
strings, one-character numbers), a safetensors header of a million tensors, a vocabulary
with one absurd id, a FIFO. The app reads each with --print and is measured from outside:
peak resident memory (getrusage of the child) and wall time.

    python3 bench/hostile_files.py [build/app/attnlab]
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

MiB = 1 << 20


def run(app, args):
    """(exit code, peak resident MiB, seconds, last line of stderr) of one run."""
    with tempfile.TemporaryFile() as err:
        start = time.monotonic()
        p = subprocess.Popen([app] + args, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.monotonic() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    vocab = [line for line in lines if "vocab.json" in line]
    return p.returncode, usage.ru_maxrss / 1024, seconds, (vocab or lines or [""])[0]


def repeated(path, head, unit, tail, size):
    """Written a megabyte at a time: this script stays small, so its children's peak
    memory (which a child inherits from the process it was forked from) is their own."""
    count = (size - len(head) - len(tail)) // len(unit)
    chunk = unit * (MiB // len(unit))
    with open(path, "w") as f:
        f.write(head)
        for _ in range(count // (MiB // len(unit))):
            f.write(chunk)
        f.write(unit * (count % (MiB // len(unit))))
        f.write(tail)


def tiny_checkpoint(app, folder):
    """A GPT-2 checkpoint folder's config and tokenizer written by hand: 1 layer, d = 8, a
    byte-level vocabulary (the weights are each case's own)."""
    os.makedirs(folder, exist_ok=True)
    config = {"model_type": "gpt2", "n_layer": 1, "n_head": 1, "n_embd": 8, "n_positions": 16, "vocab_size": 256}
    json.dump(config, open(os.path.join(folder, "config.json"), "w"))
    # GPT-2's byte symbols: printable bytes stand for themselves, the rest are shifted to 256+.
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    symbols, shift = {}, 0
    for b in range(256):
        symbols[b] = chr(b) if b in printable else chr(256 + shift)
        shift += b not in printable
    json.dump({symbols[b]: i for i, b in enumerate(range(256))}, open(os.path.join(folder, "vocab.json"), "w"), ensure_ascii=False)
    open(os.path.join(folder, "merges.txt"), "w").write("#version: 0.2\n")
    shapes = {"wte.weight": [256, 8], "wpe.weight": [16, 8], "ln_f.weight": [8], "ln_f.bias": [8]}
    for name, shape in {"ln_1.weight": [8], "ln_1.bias": [8], "attn.c_attn.weight": [8, 24], "attn.c_attn.bias": [24],
                        "attn.c_proj.weight": [8, 8], "attn.c_proj.bias": [8], "ln_2.weight": [8], "ln_2.bias": [8],
                        "mlp.c_fc.weight": [8, 32], "mlp.c_fc.bias": [32], "mlp.c_proj.weight": [32, 8],
                        "mlp.c_proj.bias": [8]}.items():
        shapes["h.0." + name] = shape
    return shapes


def safetensors(path, header, data_size):
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + data_size)


def generate(app, work):
    """Writes every hostile file under work and returns [(name, arguments)]."""
    cases = []
    limit = 64 * MiB  # the scenario and session files' size limit
    for name, head, unit, tail, size in [
        ("scenario: 60 MB of '['", "", "[", "", 60 * MiB),
        ("scenario: 64 MiB of []", "[", "[],", "[]]", limit),
        ("scenario: 64 MiB of {}", "[", "{},", "{}]", limit),
        ("scenario: 64 MiB of \"\"", "[", "\"\",", "\"\"]", limit),
        ("scenario: 64 MiB of 0", "[", "0,", "0]", limit),
        ("scenario: 64 MiB of {\"k\":0}", "[", "{\"k\":0},", "{}]", limit),
    ]:
        path = os.path.join(work, "s%d.json" % len(cases))
        repeated(path, head, unit, tail, size)
        cases.append((name, ["--scenario", path, "--print"]))
    for name, unit in [("trained model: 250 MB of '['", "["), ("trained model: 250 MB of []", "[],")]:
        path = os.path.join(work, "m%d.json" % len(cases))
        repeated(path, "[" if unit != "[" else "", unit, "[]]" if unit != "[" else "", 250 * MiB)
        cases.append((name, ["--model", path, "--text", "a", "--print"]))

    # Checkpoints.
    folder = os.path.join(work, "million-tensors")
    tiny_checkpoint(app, folder)
    entries = ",".join('"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}' % i for i in range(1_000_000))
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(entries) + 2) + b"{" + entries.encode() + b"}")
    del entries
    cases.append(("safetensors: a header of 1,000,000 tensors", ["--model", folder, "--text", "a", "--print"]))

    folder = os.path.join(work, "overlap")
    tiny_checkpoint(app, folder)
    config = json.load(open(os.path.join(folder, "config.json")))
    config.update(n_layer=1024, n_embd=1024, n_head=16, vocab_size=256, n_positions=1024)
    json.dump(config, open(os.path.join(folder, "config.json"), "w"))
    header, region = {}, 8 * MiB
    for layer in range(1024):
        for name in ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                     "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                     "mlp.c_proj.weight", "mlp.c_proj.bias"]:
            header["h.%d.%s" % (layer, name)] = {"dtype": "F16", "shape": [region // 2], "data_offsets": [0, region]}
    safetensors(os.path.join(folder, "model.safetensors"), header, region)
    cases.append(("safetensors: 12,288 tensors on one 8 MiB region", ["--model", folder, "--text", "a", "--print"]))

    folder = os.path.join(work, "absurd-id")
    tiny_checkpoint(app, folder)
    vocab = json.load(open(os.path.join(folder, "vocab.json")))
    vocab["absurd"] = (1 << 24) - 1
    json.dump({"model_type": "gpt2"}, open(os.path.join(folder, "config.json"), "w"))   # no vocab_size to check it against
    json.dump(vocab, open(os.path.join(folder, "vocab.json"), "w"), ensure_ascii=False)
    cases.append(("vocab.json: one id of 2^24 - 1", ["--model", folder, "--text", "a", "--print"]))

    fifo = os.path.join(work, "pipe.json")
    os.mkfifo(fifo)
    cases.append(("scenario: a FIFO", ["--scenario", fifo, "--print"]))

    return cases


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--generate":
        json.dump(generate(sys.argv[2], sys.argv[3]), open(os.path.join(sys.argv[3], "cases.json"), "w"))
        return
    app = sys.argv[1] if len(sys.argv) > 1 else "build/app/attnlab"
    work = tempfile.mkdtemp(prefix="attnlab-hostile-")
    try:
        # Written by another process: a child inherits the peak memory of the process it was
        # forked from, so this one stays small and its children's peaks are their own.
        subprocess.run([sys.executable, __file__, "--generate", app, work], check=True)
        cases = json.load(open(os.path.join(work, "cases.json")))
        print("%-48s %5s %10s %8s  %s" % ("file", "exit", "peak MiB", "seconds", "message"))
        for name, args in [("(the app reading a preset, for scale)", ["--preset", "dot-product-3-tokens", "--print"])] + cases:
            code, peak, seconds, message = run(app, args)
            print("%-48s %5d %10.0f %8.2f  %s" % (name, code, peak, seconds, message[-110:]))
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
