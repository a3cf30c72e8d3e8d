#!/usr/bin/env python3
"""Compiles every model under models/ (every subdirectory) for the CPU, runs
it with lockstep-run exec, and compares every output with onnxruntime on the
same inputs: batch 2, seq 5, and a past of 3 and of 0 (an empty cache; for a
model without a cache, two draws of ids). An attention mask input gets
ones. A model without a cache is compiled as exported, attention op by op
(--attention=decomposed): recognized, it would get a KV cache, whose inputs
onnxruntime does not have.

Tolerance: max |lockstep - onnxruntime| / max |onnxruntime| <= 1e-4 per
output. The two differ in reduction order and in libm versus onnxruntime's
own exp/tanh/erf, both of which move fp32 results by a few ulps; 1e-4 is the
bound the issue sets, far above that and far below any real error.

usage: check_models.py MODELS_DIR WORK_DIR [NAME ...]   (NAME: only these models)
"""
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import onnxruntime as ort

TOLERANCE = 1e-4


def make_inputs(sess, past, rng, batch=2, seq=5):
    feed = {}
    for i in sess.get_inputs():
        if i.name == "input_ids":
            feed[i.name] = rng.integers(0, 256, (batch, seq)).astype(np.int64)
        elif i.name == "position_ids":
            feed[i.name] = np.tile(np.arange(past, past + seq), (batch, 1)).astype(np.int64)
        elif i.name == "attention_mask":
            feed[i.name] = np.ones((batch, seq), np.int64)
        else:
            shape = [batch if d == "batch" else past if isinstance(d, str) else d
                     for d in i.shape]
            feed[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feed


def model_name(models_dir, model):
    """The model's path under models/, without .onnx, '/' as '_'."""
    return os.path.splitext(os.path.relpath(model, models_dir))[0].replace(os.sep, "_")


def check(model, name, work, opt, run):
    lsa = os.path.join(work, name + ".lsa")
    # The exported graph (past/present inputs and outputs), as onnxruntime runs it.
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    cached = any(i.name.startswith("past") for i in sess.get_inputs())
    flags = ["--step=graph"] + ([] if cached else ["--attention=decomposed"])
    r = subprocess.run([opt, model, "-o", lsa, *flags], capture_output=True, text=True)
    if r.returncode != 0:
        return [f"FAIL {name}: compile: {r.stderr.strip()[:500]}"]
    lines = []
    for past in (3, 0):
        rng = np.random.default_rng(past)
        feed = make_inputs(sess, past, rng)
        want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))
        d = os.path.join(work, f"{name}.past{past}")
        os.makedirs(d, exist_ok=True)
        args = [run, "exec", lsa, "--output-dir", os.path.join(d, "out")]
        for k, v in feed.items():
            p = os.path.join(d, k + ".npy")
            np.save(p, v)
            args += ["--input", f"{k}={p}"]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            lines.append(f"FAIL {name} past={past}: exec: {r.stderr.strip()[:500]}")
            continue
        worst = 0.0
        for k, w in want.items():
            g = np.load(os.path.join(d, "out", k + ".npy"))
            if g.shape != w.shape or g.dtype != w.dtype:
                lines.append(f"FAIL {name} past={past}: {k} is {g.dtype}{list(g.shape)}, "
                             f"onnxruntime gives {w.dtype}{list(w.shape)}")
                break
            scale = float(np.abs(w).max()) if w.size else 0.0
            err = float(np.abs(g.astype(np.float64) - w).max()) if w.size else 0.0
            rel = err / scale if scale > 0 else err
            worst = max(worst, rel)
        else:
            ok = worst <= TOLERANCE
            lines.append(f"{'ok  ' if ok else 'FAIL'} {name} past={past}: "
                         f"max relative error {worst:.2e}")
    return lines


def main():
    models_dir, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    opt, run = shutil.which("lockstep-opt"), shutil.which("lockstep-run")
    models = sorted(glob.glob(os.path.join(models_dir, "**", "*.onnx"), recursive=True))
    only = set(sys.argv[3:])
    if only:
        models = [m for m in models if model_name(models_dir, m) in only]
    failed = 0
    worst = 0.0
    for m in models:
        for line in check(m, model_name(models_dir, m), work, opt, run):
            print(line, flush=True)
            failed += line.startswith("FAIL")
            if "max relative error" in line:
                worst = max(worst, float(line.rsplit(" ", 1)[1]))
    print(f"{len(models)} models, {failed} failures, largest relative error {worst:.1e} "
          f"(tolerance {TOLERANCE:.0e})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
