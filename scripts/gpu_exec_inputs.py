#!/usr/bin/env python3
"""Writes inputs for `lockstep-run exec` of a compiled decoder, CPU or CUDA.

Reads the `inputs:` section of `lockstep-opt MODEL --emit=summary` (the
compiled form's inputs and their symbolic dims) and writes one .npy per
input into OUT_DIR, plus OUT_DIR/inputs.txt with one `NAME=FILE` a line:

- an exported graph (`--step=graph`): batch 2, seq 4, past 3; token ids
  drawn below 256, positions past + i, attention masks ones, the past
  drawn from a normal distribution;
- a ragged step: two requests of 3 and 2 new tokens at positions 4..6 and
  0..1, blocks of 4 positions, 2 blocks a request, 4 blocks in the pools
  (drawn from a normal distribution), logits asked for each request's last
  token.

Deterministic (seed 7), so that two machines compare the same inputs.
Usage: gpu_exec_inputs.py SUMMARY.txt OUT_DIR
"""
import os
import re
import sys

import numpy as np


def main():
    summary, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    lines = open(summary).read().splitlines()
    start = lines.index("inputs:") + 1
    specs = []
    for line in lines[start:]:
        m = re.match(r"  (\S+): (\w+) \[(.*)\]$", line)
        if not m:
            break
        specs.append((m.group(1), m.group(2), [d.strip() for d in m.group(3).split(",") if d.strip()]))
    rng = np.random.default_rng(7)
    ragged = any(n == "seq_starts" for n, _, _ in specs)
    sym = ({"seq": 5, "requests": 2, "max_blocks": 2, "blocks": 4, "block_size": 4, "rows": 2}
           if ragged else {"batch": 2, "seq": 4, "past": 3})
    positions = np.array([4, 5, 6, 0, 1], np.int64)

    def size(d):
        return int(eval(d, {}, dict(sym, **{k: 2 for k in re.findall(r"[A-Za-z_]\w*", d)
                                            if k not in sym})))

    lines_out = []
    for name, dtype, dims in specs:
        shape = [size(d) for d in dims]
        if ragged and name == "positions":
            a = positions
        elif ragged and name == "seq_starts":
            a = np.array([0, 3, 5], np.int64)
        elif ragged and name == "block_tables":
            a = np.array([[0, 1], [2, 3]], np.int32)
        elif ragged and name == "logit_rows":
            a = np.array([2, 4], np.int64)
        elif dtype == "f32":
            a = (rng.standard_normal(shape) * 0.5).astype(np.float32)
        elif "mask" in name:
            a = np.ones(shape, np.int64 if dtype == "i64" else np.int32)
        elif "position" in name:
            a = (positions.reshape(shape) if ragged else
                 np.broadcast_to(np.arange(sym["past"], sym["past"] + shape[-1]), shape))
            a = np.ascontiguousarray(a, np.int64 if dtype == "i64" else np.int32)
        elif dtype in ("i64", "i32"):
            a = rng.integers(0, 256, shape).astype(np.int64 if dtype == "i64" else np.int32)
        else:
            sys.exit(f"gpu_exec_inputs: input {name} has dtype {dtype}, which it does not make")
        file = re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"
        np.save(os.path.join(out, file), a)
        lines_out.append(f"{name}={file}")
    with open(os.path.join(out, "inputs.txt"), "w") as f:
        f.write("\n".join(lines_out) + "\n")


if __name__ == "__main__":
    main()
