#!/usr/bin/env python3
"""Prepares the GPU speed benchmark (bench/gpu/run.py) on a machine with the
compiler. Writes, under OUT (default gpu-bundle/bench):

  lockstep-run           the runtime tool, as built here
  gemm_K_N.lsa           one graph per GEMM shape of the model below:
                         Y[T, N] = X[T, K] . W[K, N], T dynamic, X and W both
                         inputs (so no weights travel), --target=cuda
  llama1b.lsa            bench/gpu/llama1b.py's model as the ragged serving
                         step, --target=cuda, weights referenced at
                         /tmp/lockstep-bench/llama1b.onnx.data (written here
                         first if missing; run.py writes the same bytes there
                         on the GPU machine)
  llama1b_adaptive.lsa   the same with --reduction-policy=adaptive, and
  llama1b_whole.lsa      with --adaptive-rows=2 --adaptive-chunk=256 too (one
                         row split as the contract splits it, more rows
                         folded whole), and
  llama1b_cW.lsa         every reduction (attention's keys aside) in chunks of
                         W = 128, 512 and 1024: the invariance cost's controls
  manifest.json          the commit, the shapes, the model's config

usage: bench/gpu/prepare.py [--out DIR] [--skip-model]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import llama1b  # noqa: E402
from run import CONTROLS  # noqa: E402

BIN = os.path.join(ROOT, "build", "bin")
MODEL_DIR = "/tmp/lockstep-bench"


def gemm_shapes(c):
    """(K, N) of every projection of the model: q/o, k/v, gate/up, down, lm_head."""
    h, i, kv = c["hidden"], c["inter"], c["kv_heads"] * c["head_dim"]
    return [(h, h), (h, kv), (h, i), (i, h), (h, c["vocab"])]


def gemm_model(k, n, path):
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", k])
    w = helper.make_tensor_value_info("W", TensorProto.FLOAT, [k, n])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["T", n])
    node = helper.make_node("MatMul", ["X", "W"], ["Y"], name=f"/gemm_{k}_{n}/MatMul")
    graph = helper.make_graph([node], f"gemm_{k}_{n}", [x, w], [y])
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "gpu-bundle", "bench"))
    ap.add_argument("--skip-model", action="store_true", help="only the GEMM graphs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    opt = os.path.join(BIN, "lockstep-opt")
    shutil.copy2(os.path.join(BIN, "lockstep-run"), os.path.join(args.out, "lockstep-run"))
    shapes = gemm_shapes(llama1b.CONFIG)
    for k, n in shapes:
        src = os.path.join(args.out, f"gemm_{k}_{n}.onnx")
        gemm_model(k, n, src)
        run([opt, src, "--target=cuda", "-o", os.path.join(args.out, f"gemm_{k}_{n}.lsa")])
        os.remove(src)
    if not args.skip_model:
        onnx_path, data = llama1b.paths(MODEL_DIR)
        if not (os.path.exists(onnx_path) and os.path.exists(data)):
            llama1b.build(MODEL_DIR)
        run([opt, onnx_path, "--target=cuda", "--weights=reference",
             "-o", os.path.join(args.out, "llama1b.lsa")])
        # The invariance cost's controls (run.py's CONTROLS): the same model
        # with reductions split otherwise, some by the step's size as other
        # stacks split them.
        for key, _, flags, _ in CONTROLS:
            run([opt, onnx_path, "--target=cuda", "--weights=reference", *flags,
                 "-o", os.path.join(args.out, f"llama1b_{key}.lsa")])
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"commit": commit + ("+changes" if dirty else ""), "gemm": shapes,
                   "model": None if args.skip_model else llama1b.CONFIG,
                   "model_dir": MODEL_DIR}, f, indent=1)
    print(f"prepared {args.out}")


if __name__ == "__main__":
    main()
