"""The GEMM microbenchmark: one MatMul graph per projection shape of the
generated models, compiled by lockstep-opt and timed by `lockstep-run exec
--repeat`, against numpy's matmul (OpenBLAS at the same thread count) in
this process, alternating."""
import glob
import os
import statistics
import time

import numpy as np

from .env import blas_threads, loadavg
from .lockstep import ls_exec_seconds
from .models import compile_model, save_external


def gemm_shapes(spec):
    """(what, K, N, MatMuls of that shape a layer; the lm_head's count is
    per model)."""
    c = spec["config"]
    h = c["hidden"]
    if spec["kind"] == "llama":
        kv = c["kv_heads"] * c["head_dim"]
        return [("q, o", h, c["heads"] * c["head_dim"], 2), ("k, v", h, kv, 2),
                ("gate, up", h, c["inter"], 2), ("down", c["inter"], h, 1),
                ("lm_head", h, c["vocab"], 1)]
    return [("qkv", h, 3 * h, 1), ("attn proj", h, h, 1), ("fc", h, c["inter"], 1),
            ("mlp proj", c["inter"], h, 1), ("lm_head", h, c["vocab"], 1)]


def gemm_model(k, n, w, path):
    """Y[T, N] = X[T, K] . W[K, N] at `path`, W (the array `w`) an
    initializer as in the models, T dynamic."""
    from onnx import TensorProto, helper, numpy_helper
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", k])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["T", n])
    node = helper.make_node("MatMul", ["X", "W"], ["Y"], name=f"/gemm_{k}_{n}/MatMul")
    graph = helper.make_graph([node], f"gemm_{k}_{n}", [x], [y],
                              initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    save_external(model, path)


def np_seconds(x, w, repeat):
    """The median seconds of `repeat` x @ w, after one untimed."""
    x @ w
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        x @ w
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def gemm(specs, threads_list, cfg, work, adaptive, record):
    """Measures each distinct projection shape of the generated models at
    each T and thread count; each measurement is passed to `record` and
    returned. `adaptive`: the adaptive build's time too."""
    shapes = []  # (K, N) -> the projections that have it
    names = {}
    for spec in specs:
        if not spec["large"]:
            continue
        for what, k, n, _ in gemm_shapes(spec):
            if (k, n) not in names:
                shapes.append((k, n))
                names[(k, n)] = []
            names[(k, n)].append(f"{spec['name']} {what}")
    rng = np.random.default_rng(0)
    out = []
    have_blas = blas_threads(1)
    for k, n in shapes:
        lm_head = any("lm_head" in s for s in names[(k, n)])
        w = (rng.standard_normal((k, n), dtype=np.float32) / np.float32(np.sqrt(k)))
        src = os.path.join(work, f"gemm_{k}_{n}.onnx")
        gemm_model(k, n, w, src)
        lsa = os.path.join(work, f"gemm_{k}_{n}.lsa")
        compile_model(src, lsa)
        ad = None
        if adaptive:
            ad = os.path.join(work, f"gemm_{k}_{n}_adaptive.lsa")
            compile_model(src, ad, ["--reduction-policy=adaptive"])
        for t in cfg["gemm_t"]:
            # The lm_head runs on one row a request in a serving step
            # (prefill included): its prefill sizes are not Lockstep's work.
            if lm_head and t > max(cfg["concurrency"]):
                continue
            x = rng.standard_normal((t, k), dtype=np.float32)
            x_path = os.path.join(work, "X.npy")
            np.save(x_path, x)
            flops = 2.0 * t * k * n
            for threads in threads_list:
                blas_threads(threads)
                load = loadavg()
                np_s = np_seconds(x, w, 3)
                # At least 48 runs: exec's first ten or so runs fault in the
                # heap that later runs reuse (768 x 768 at T = 512: a median of
                # 4.2 ms over 16 runs, 3.45 ms over 32 to 200, the min 3.35).
                repeat = int(min(200, max(48, cfg["gemm_seconds"] / max(np_s * 3, 1e-6))))
                # Rounds of the two (three) back to back; the medians kept.
                rounds = {"numpy": [], "lockstep": [], "adaptive": []}
                for _ in range(cfg["gemm_rounds"]):
                    rounds["numpy"].append(np_seconds(x, w, repeat))
                    rounds["lockstep"].append(ls_exec_seconds(lsa, x_path, threads, repeat, work))
                    if ad:
                        rounds["adaptive"].append(ls_exec_seconds(ad, x_path, threads, repeat, work))
                np_s, ls_s = statistics.median(rounds["numpy"]), statistics.median(rounds["lockstep"])
                rec = dict(bench="gemm", k=k, n=n, t=t, threads=threads, uses=names[(k, n)],
                           repeat=repeat, numpy_s=np_s, lockstep_s=ls_s, rounds=rounds,
                           numpy_gflops=flops / np_s / 1e9, lockstep_gflops=flops / ls_s / 1e9,
                           share=np_s / ls_s, blas_threads_set=have_blas, loadavg=load)
                if ad:
                    rec["adaptive_s"] = statistics.median(rounds["adaptive"])
                record(rec)
                out.append(rec)
        for p in glob.glob(os.path.join(work, f"gemm_{k}_{n}*")):
            os.remove(p)
    return out
