#!/usr/bin/env python3
"""Run-time benchmark: one forward pass of a decoder through lockstep-run exec
(compiled artifact, --repeat to time the run alone, without loading) against
onnxruntime's InferenceSession.run on the same inputs, in the same run, with
the same thread count. Prints the median times and their ratio.

usage: bench/exec_vs_ort.py [MODEL.onnx] [--batch B] [--seq S] [--past P] [--threads N]
                           [--compile-flag FLAG ...]  (passed to lockstep-opt)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.join(ROOT, "build", "bin")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=os.path.join(ROOT, "models", "llama_tiny.onnx"))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--past", type=int, default=0)
    ap.add_argument("--compile-flag", action="append", default=[],
                    help="a lockstep-opt flag, e.g. --attention=decomposed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args()
    d = tempfile.mkdtemp()
    lsa = os.path.join(d, "m.lsa")
    # The exported graph, with its own inputs (not the ragged serving step).
    subprocess.run([os.path.join(BIN, "lockstep-opt"), a.model, "-o", lsa, "--step=graph"] +
                   a.compile_flag, check=True)
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed, args = {}, []
    for i in sess.get_inputs():
        if i.name == "input_ids":
            v = rng.integers(0, 256, (a.batch, a.seq)).astype(np.int64)
        elif i.name == "position_ids":
            v = np.tile(np.arange(a.past, a.past + a.seq), (a.batch, 1)).astype(np.int64)
        else:
            shape = [a.batch if s == "batch" else a.past if isinstance(s, str) else s for s in i.shape]
            v = rng.standard_normal(shape).astype(np.float32)
        feed[i.name] = v
        p = os.path.join(d, i.name + ".npy")
        np.save(p, v)
        args += ["--input", f"{i.name}={p}"]
    times = []
    for _ in range(a.repeat + 1):
        t = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - t)
    ort_median = sorted(times[1:])[a.repeat // 2]
    r = subprocess.run([os.path.join(BIN, "lockstep-run"), "exec", lsa, "--output-dir",
                        os.path.join(d, "out"), "--threads", str(a.threads),
                        "--repeat", str(a.repeat)] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr)
    ls_median = float(re.search(r"median ([0-9.]+) s", r.stderr).group(1))
    print(f"model {os.path.basename(a.model)}, batch {a.batch}, seq {a.seq}, past {a.past}, "
          f"{a.threads} threads")
    print(f"onnxruntime run: median {ort_median * 1e3:9.3f} ms")
    print(f"lockstep exec:   median {ls_median * 1e3:9.3f} ms")
    print(f"ratio lockstep / onnxruntime: {ls_median / ort_median:.1f}x")


if __name__ == "__main__":
    main()
