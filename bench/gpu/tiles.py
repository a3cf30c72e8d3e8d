#!/usr/bin/env python3
"""A sweep of the contractions' GPU tile tables (lockstep-opt --gpu-tiles) at
the GEMM shapes of the speed benchmark's model, against cuBLAS fp32.

  bench/gpu/tiles.py prepare [--out DIR]   here (with the compiler): one
      gemm_K_N.lsa per shape and table under DIR/vI/, lockstep-run, and
      DIR/tiles.json (the tables)
  bench/gpu/tiles.py run DIR [--out R.md]  on the GPU machine: each table's
      kernels' device time (CUDA events, as bench/gpu/run.py's GEMM table)
      at each shape and T, torch.mm's (TF32 off) beside it, and whether each
      table's Y equals table v0's bit for bit (the tables must: a shape never
      changes the order of an output's fold)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

# The rows' entries up to 16 are the compiler's table's; the sweep varies
# the register-blocked ones (17 rows and more). v0 is the compiler's table
# before 8d0c10e, which took v5's 32-row entry and v1's 256-row one.
FEW = "1:64x1/1x1/64/direct;8:64x1/8x1/32/direct;16:64x4/4x1/64"
TABLES = [
    FEW + ";256:16x16/4x8/8/v4;*:16x16/8x8/8/v4",      # v0: the table before 8d0c10e
    FEW + ";256:16x16/4x8/16/v4;*:16x16/8x8/16/v4",    # v1: BK 16
    FEW + ";256:16x16/4x4/8/v4;*:16x16/8x8/8/v4",      # v2: 64x64 tiles
    FEW + ";256:16x16/4x4/16/v4;*:16x16/8x8/16/v4",    # v3: 64x64, BK 16
    FEW + ";256:16x16/4x4/32/v4;*:16x16/8x8/16/v4",    # v4: 64x64, BK 32
    FEW + ";64:16x8/4x4/32/v4;256:16x16/4x8/16/v4;*:16x16/8x8/16/v4",  # v5: 32x64 to 64 rows
]
T_VALUES = [32, 64, 256, 512, 2048]


def prepare(out):
    import llama1b
    import prepare as prep
    os.makedirs(out, exist_ok=True)
    opt = os.path.join(ROOT, "build", "bin", "lockstep-opt")
    shutil.copy2(os.path.join(ROOT, "build", "bin", "lockstep-run"), os.path.join(out, "lockstep-run"))
    shapes = prep.gemm_shapes(llama1b.CONFIG)
    tmp = tempfile.mkdtemp()
    for i, table in enumerate(TABLES):
        d = os.path.join(out, f"v{i}")
        os.makedirs(d, exist_ok=True)
        for k, n in shapes:
            src = os.path.join(tmp, f"gemm_{k}_{n}.onnx")
            prep.gemm_model(k, n, src)
            subprocess.run([opt, src, "--target=cuda", "--gpu-tiles=" + table,
                            "-o", os.path.join(d, f"gemm_{k}_{n}.lsa")], check=True)
    with open(os.path.join(out, "tiles.json"), "w") as f:
        json.dump({"tables": TABLES, "shapes": shapes, "t": T_VALUES}, f, indent=1)
    print(f"prepared {out}")


def run(bundle, report):
    import numpy as np
    import torch
    from run import cuda_ms, exec_kernel_ms
    torch.backends.cuda.matmul.allow_tf32 = False
    meta = json.load(open(os.path.join(bundle, "tiles.json")))
    tool = os.path.join(bundle, "lockstep-run")
    tmp = tempfile.mkdtemp()
    rows = []
    for k, n in meta["shapes"]:
        w = torch.randn(k, n, device="cuda")
        np.save(os.path.join(tmp, "W.npy"), w.cpu().numpy())
        for t in meta["t"]:
            x = torch.randn(t, k, device="cuda")
            np.save(os.path.join(tmp, "X.npy"), x.cpu().numpy())
            row = {"k": k, "n": n, "t": t, "torch_ms": cuda_ms(lambda: torch.mm(x, w), 20), "ms": [],
                   "same_bits": []}
            first = None
            for i in range(len(meta["tables"])):
                outdir = os.path.join(tmp, f"out{i}")
                got = exec_kernel_ms(tool, os.path.join(bundle, f"v{i}", f"gemm_{k}_{n}.lsa"),
                                     {"X": f"{tmp}/X.npy", "W": f"{tmp}/W.npy"}, outdir, check=False)
                if got is None:
                    row["ms"].append(None)
                    row["same_bits"].append(None)
                    continue
                row["ms"].append(got[0])
                y = np.load(os.path.join(outdir, "Y.npy")).view(np.uint32)
                if first is None:
                    first = y
                row["same_bits"].append(bool(np.array_equal(y, first)))
            rows.append(row)
            print(json.dumps(row), flush=True)
    lines = ["| K x N | T | cuBLAS ms | " + " | ".join(f"v{i} ms" for i in range(len(meta["tables"]))) +
             " | best / cuBLAS | bits = v0 |",
             "|---|---:|---:|" + "---:|" * len(meta["tables"]) + "---:|---|"]
    for r in rows:
        ok = [m for m in r["ms"] if m]
        best = min(ok) if ok else None
        lines.append(f"| {r['k']} x {r['n']} | {r['t']} | {r['torch_ms']:.3f} | " +
                     " | ".join("fail" if m is None else f"{m:.3f}" for m in r["ms"]) +
                     (f" | {r['torch_ms'] / best * 100:.0f}% | " if best else " | n/a | ") +
                     ("yes" if all(r["same_bits"]) else "NO") + " |")
    text = "\n".join(["Tables:"] + [f"- v{i}: `{t}`" for i, t in enumerate(meta["tables"])] + [""] + lines)
    with open(report, "w") as f:
        f.write(text + "\n")
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default=os.path.join(ROOT, "gpu-bundle", "tiles"))
    r = sub.add_parser("run")
    r.add_argument("bundle")
    r.add_argument("--out", default="TILES.md")
    a = ap.parse_args()
    prepare(a.out) if a.cmd == "prepare" else run(a.bundle, a.out)


if __name__ == "__main__":
    main()
