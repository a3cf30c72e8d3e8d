#!/usr/bin/env python3
"""CPU speed against onnxruntime (issue 18), in one command. Builds what it
needs (lockstep-opt and lockstep-run, if ninja says they are stale), writes
and compiles the models into a work directory, measures both systems in the
same run, and writes a Markdown report (date, CPU, cores, load average,
commit) whose ratios are Lockstep over onnxruntime, measured back to back:

  serve    per model and thread count (1 and 2): prefill tokens/s (prompts
           of 128 and 512) and decode tokens/s at 1, 8 and 32 concurrent
           requests. Lockstep: `lockstep-run bench --only batched` on the
           ragged step. onnxruntime: an InferenceSession on the same ONNX
           file (intra_op_num_threads = the thread count), its own greedy
           loop over past/present, on the same prompts (bench's, redrawn
           here from its seed).
  gemm     one MatMul graph per projection shape of the two large models
           (X[T, K] . W[K, N], W an initializer as in the models), compiled
           by lockstep-opt and timed by `lockstep-run exec --repeat`,
           against numpy's matmul (OpenBLAS, its thread count set to the
           same) in this process: the share of OpenBLAS's speed;
  adaptive the invariance cost: the same Lockstep cases and GEMMs compiled
           with --reduction-policy=adaptive (split chosen from the rows, as
           ordinary stacks do) against the canonical (invariant) build.

How each figure is taken (both systems get a warm-up that is not timed):
  prefill  N prompts of L tokens, one prompt a step (Lockstep: --token-budget
           L, --max-new-tokens 1; onnxruntime: batch 1, seq L, past 0).
           Lockstep: the wall time of N + 1 prompts less that of 1 prompt
           (the first step of a process pays for first touches).
           onnxruntime computes the logits of every position, as the graph
           says; Lockstep only the last (the serving step). A second
           onnxruntime column runs the same graph with the lm_head applied
           to the last position only (a Slice inserted before it), which is
           the same work as Lockstep's.
  decode   C requests of P prompt tokens, the whole prefill in one step
           (Lockstep: --token-budget C*P; onnxruntime: one batch of C equal
           prompts, so no padding and no attention mask), then D greedy
           steps of C tokens. onnxruntime: the D steps timed. Lockstep: the
           wall time with --max-new-tokens D + 1 less that with 1.

usage: bench/serve_vs_ort.py [--quick] [--out REPORT.md] [--results bench/RESULTS.md]
                             [--work DIR] [--log FILE] [--only serve,gemm,adaptive]
                             [--threads 1,2] [--models NAME,...] [--no-build]
--quick is a smoke run (small models, small sizes, a minute or two); a full run
writes its report into --results (bench/RESULTS.md by default, between the
markers of its CPU section) unless --results is empty."""
import argparse
import copy
import ctypes
import datetime
import glob
import importlib.util
import json
import os
import platform
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.join(ROOT, "build", "bin")
OPT = os.path.join(BIN, "lockstep-opt")
RUN = os.path.join(BIN, "lockstep-run")
BEGIN = "<!-- bench/serve_vs_ort.py: begin report -->"
END = "<!-- bench/serve_vs_ort.py: end report -->"

# The models. `gen` builds one with models/gen_decoders.py at that size.
LLAMA_125M = dict(layers=12, hidden=768, heads=12, kv_heads=4, head_dim=64, inter=2048,
                  vocab=32000, max_pos=2048)  # bench/compile_large.py's
GPT2_124M = dict(layers=12, hidden=768, heads=12, head_dim=64, inter=3072, vocab=50257,
                 max_pos=1024)  # GPT-2 small's shape
LLAMA_QUICK = dict(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, inter=512,
                   vocab=4000, max_pos=512)
GPT2_QUICK = dict(layers=2, hidden=256, heads=4, head_dim=64, inter=1024, vocab=4000,
                  max_pos=512)


def model_specs(quick):
    large = [("llama_125m", "llama", LLAMA_QUICK if quick else LLAMA_125M),
             ("gpt2_124m", "gpt2", GPT2_QUICK if quick else GPT2_124M)]
    if quick:
        large = [(n.split("_")[0] + "_quick", k, c) for n, k, c in large]
    return [dict(name="llama_dynamo18", file="models/torch/llama_dynamo18.onnx", large=False)] + \
        [dict(name=n, kind=k, config=c, large=True) for n, k, c in large]


# What is measured (capped to a model's positions, said in the report).
FULL = dict(prefill=[128, 512], prefill_tokens=1024, concurrency=[1, 8, 32], decode_prompt=32,
            decode_steps=64, gemm_t=[1, 8, 32, 128, 512], gemm_seconds=0.15, gemm_rounds=3, repeat=3,
            fixture_scale=4, fixture_repeat=3)
QUICK = dict(prefill=[32, 128], prefill_tokens=128, concurrency=[1, 8], decode_prompt=16,
             decode_steps=8, gemm_t=[8, 128], gemm_seconds=0.05, gemm_rounds=1, repeat=1,
             fixture_scale=4, fixture_repeat=1)


def log(*a):
    print(*a, flush=True)


def loadavg():
    return [float(x) for x in open("/proc/loadavg").read().split()[:3]]


def sh(cmd, ok=(0,)):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in ok:
        sys.exit(f"serve_vs_ort: failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r


def git(*a):
    return subprocess.run(["git", "-C", ROOT] + list(a), capture_output=True, text=True).stdout.strip()


def machine():
    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    flags = open("/proc/cpuinfo").read()
    fam = re.search(r"^cpu family\s*:\s*(\d+)", flags, re.M)
    mod = re.search(r"^model\s*:\s*(\d+)", flags, re.M)
    dirty = [l for l in git("status", "--porcelain", "--untracked-files=no").splitlines()
             if not (l[3:].startswith("docs/") or l[3:].endswith(".md"))]
    import onnxruntime
    return {"date": datetime.date.today().isoformat(),
            "time": datetime.datetime.now().isoformat(timespec="seconds"),
            "commit": git("rev-parse", "--short", "HEAD"), "dirty": bool(dirty),
            "cpu": cpu, "cpu_family_model": f"{fam and fam.group(1)}/{mod and mod.group(1)}",
            "cores": len(os.sched_getaffinity(0)), "online_cpus": os.cpu_count(),
            "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "os": platform.platform(), "onnxruntime": onnxruntime.__version__,
            "numpy": np.__version__, "blas": blas_name(), "loadavg": loadavg()}


# ---------------------------------------------------------------------------------
# numpy's OpenBLAS: its thread count, set in this process
# ---------------------------------------------------------------------------------

def _openblas():
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*openblas*"))
    for lib in libs:
        try:
            return ctypes.CDLL(lib)
        except OSError:
            pass
    return None


BLAS = _openblas()


def _blas_fn(*names):
    for n in names:
        if BLAS is not None and hasattr(BLAS, n):
            return getattr(BLAS, n)
    return None


def blas_name():
    f = _blas_fn("openblas_get_config64_", "openblas_get_config")
    c = _blas_fn("openblas_get_corename64_", "openblas_get_corename")
    if not f:
        return "unknown BLAS (no OpenBLAS found beside numpy)"
    f.restype = ctypes.c_char_p
    name = f().decode()
    if c:
        c.restype = ctypes.c_char_p
        name += f", kernels for {c().decode()}"
    return name


def blas_threads(n):
    f = _blas_fn("openblas_set_num_threads64_", "openblas_set_num_threads")
    if not f:
        return False
    f(ctypes.c_int(n))
    return True


# ---------------------------------------------------------------------------------
# Building, models, artifacts
# ---------------------------------------------------------------------------------

def build():
    if os.path.exists(os.path.join(ROOT, "build", "build.ninja")):
        jobs = str(max(1, min(2, os.cpu_count() or 1)))
        env = dict(os.environ, CCACHE_BASEDIR=ROOT)
        r = subprocess.run(["ninja", "-j", jobs, "-C", os.path.join(ROOT, "build"),
                            "lockstep-opt", "lockstep-run"], capture_output=True, text=True, env=env)
    else:
        r = subprocess.run([os.path.join(ROOT, "scripts", "build")], capture_output=True, text=True,
                           env=dict(os.environ, NINJA_FLAGS="lockstep-opt lockstep-run"))
    if r.returncode != 0:
        sys.exit(f"serve_vs_ort: the build failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_decoders",
                                                  os.path.join(ROOT, "models", "gen_decoders.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def write_model(spec, work):
    """The ONNX file of a model (generated ones: weights as external data,
    kept in `work` and rewritten only when their config changes)."""
    if not spec["large"]:
        return os.path.join(ROOT, spec["file"])
    import onnx
    path = os.path.join(work, spec["name"] + ".onnx")
    stamp = path + ".config.json"
    want = json.dumps({"kind": spec["kind"], "config": spec["config"]}, sort_keys=True)
    if os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == want:
        return path
    gen = load_generator()
    table = gen.LLAMA if spec["kind"] == "llama" else gen.GPT2
    saved = copy.deepcopy(table)
    table.update(spec["config"])
    try:
        model = gen.build_llama() if spec["kind"] == "llama" else gen.build_gpt2()
    finally:
        table.clear()
        table.update(saved)
    data = spec["name"] + ".onnx.data"
    if os.path.exists(os.path.join(work, data)):
        os.remove(os.path.join(work, data))  # save_model appends to an existing file
    onnx.save_model(model, path, save_as_external_data=True, location=data)
    open(stamp, "w").write(want)
    return path


def model_facts(path):
    """Parameters, bytes of weights read by a decode step (all but the
    embedding tables' unread rows: every MatMul weight), vocab, positions."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer if t.data_type == 1)
    matmul_inputs = set()
    inits = {t.name: t for t in m.graph.initializer}
    producers = {o: n for n in m.graph.node for o in n.output}
    for n in m.graph.node:
        if n.op_type in ("MatMul", "Gemm"):
            for i in n.input[1:2]:
                # Through a Transpose of an initializer (a tied lm_head).
                src = producers.get(i)
                if src is not None and src.op_type == "Transpose":
                    i = src.input[0]
                if i in inits:
                    matmul_inputs.add(i)
    mm_bytes = sum(4 * int(np.prod(inits[i].dims)) for i in matmul_inputs)
    logits = [o for o in m.graph.output if o.name == "logits"][0]
    vocab = logits.type.tensor_type.shape.dim[2].dim_value
    return dict(params=params, matmul_weight_bytes=mm_bytes, vocab=vocab)


def compile_model(src, lsa, flags=()):
    t = time.perf_counter()
    sh([OPT, src, "-o", lsa] + list(flags))
    return time.perf_counter() - t


def max_context(spec):
    """Positions a request may use: the generated models' tables; the
    torch export computes its rotary tables from the positions (no limit)."""
    return spec["config"]["max_pos"] if spec.get("config") else None


def last_position_variant(src, dst):
    """The same graph with the lm_head MatMul applied to the last position
    only (a Slice of its input), for onnxruntime's prefill: the work that
    a serving step does. None when the graph's logits do not come from a
    MatMul."""
    import onnx
    from onnx import helper
    m = onnx.load(src)
    producers = {o: n for n in m.graph.node for o in n.output}
    name = "logits"
    node = producers.get(name)
    while node is not None and node.op_type == "Identity":
        node = producers.get(node.input[0])
    if node is None or node.op_type != "MatMul":
        return None
    consts = [helper.make_node("Constant", [], [f"lastpos/{k}"], name=f"lastpos/{k}",
                               value=helper.make_tensor(f"lastpos/{k}", onnx.TensorProto.INT64, [1], [v]))
              for k, v in (("starts", -1), ("ends", 2**62), ("axes", -2))]
    sliced = "lastpos/sliced"
    slice_node = helper.make_node("Slice", [node.input[0], "lastpos/starts", "lastpos/ends",
                                           "lastpos/axes"], [sliced], name="lastpos/Slice")
    node.input[0] = sliced
    nodes = list(m.graph.node)
    at = nodes.index(node)
    del m.graph.node[:]
    m.graph.node.extend(nodes[:at] + consts + [slice_node] + nodes[at:])
    for o in m.graph.output:
        if o.name == "logits":
            o.type.tensor_type.shape.dim[1].ClearField("dim_param")
            o.type.tensor_type.shape.dim[1].dim_value = 1
    del m.graph.value_info[:]
    base = os.path.basename(dst) + ".data"
    if os.path.exists(os.path.join(os.path.dirname(dst), base)):
        os.remove(os.path.join(os.path.dirname(dst), base))
    onnx.save_model(m, dst, save_as_external_data=True, location=base)
    return dst


# ---------------------------------------------------------------------------------
# The prompts: lockstep-run bench's, drawn again here
# ---------------------------------------------------------------------------------

M64 = (1 << 64) - 1


def bench_prompts(n, length, vocab, seed=1):
    """The prompts `lockstep-run bench --requests n --prompt-len length
    --seed seed` serves: tools/lockstep-run/Bench.cpp draws them with
    Policy::uniform(0, vocab - 1) (runtime/serving/Scheduler.cpp: SplitMix64
    from the state seed ^ 0x62656e6368, then a modulo), request by request."""
    state = (seed ^ 0x62656e6368) & M64
    out = np.empty((n, length), np.int64)
    for r in range(n):
        for t in range(length):
            state = (state + 0x9e3779b97f4a7c15) & M64
            z = state
            z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
            z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
            z ^= z >> 31
            out[r, t] = z % vocab
    return out


# ---------------------------------------------------------------------------------
# onnxruntime: its own greedy loop over past/present
# ---------------------------------------------------------------------------------

class Ort:
    def __init__(self, path, threads, spin=True):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if not spin:
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.inputs = self.sess.get_inputs()
        self.outputs = [o.name for o in self.sess.get_outputs()]
        self.past = [i for i in self.inputs if i.name.startswith("past")]

    def empty_past(self, batch):
        return {i.name: np.zeros((batch, i.shape[1], 0, i.shape[3]), np.float32) for i in self.past}

    def step(self, ids, start, past):
        b, s = ids.shape
        feed = {"input_ids": ids, "position_ids": np.tile(np.arange(start, start + s, dtype=np.int64), (b, 1))}
        feed.update(past)
        out = self.sess.run(None, feed)
        new_past = {}
        for name, v in zip(self.outputs[1:], out[1:]):
            new_past[name.replace("present", "past", 1)] = v
        return out[0][:, -1, :].argmax(-1).astype(np.int64), new_past

    def prefill(self, prompts):
        """Seconds for each prompt (batch 1, past 0), after one untimed."""
        self.step(prompts[:1], 0, self.empty_past(1))
        secs = []
        for p in prompts[1:]:
            t = time.perf_counter()
            self.step(p[None, :], 0, self.empty_past(1))
            secs.append(time.perf_counter() - t)
        return secs

    def decode(self, prompts, steps):
        """Seconds of `steps` greedy steps over one batch of the prompts
        (prefill untimed), after one untimed run of two steps; and the
        tokens generated."""
        for n in (2, steps):
            tok, past = self.step(prompts, 0, self.empty_past(len(prompts)))
            generated = [tok]
            t = time.perf_counter()
            for k in range(n - 1):
                tok, past = self.step(tok[:, None], prompts.shape[1] + k, past)
                generated.append(tok)
            secs = time.perf_counter() - t
        return secs, np.stack(generated, 1)


# ---------------------------------------------------------------------------------
# Lockstep: lockstep-run bench
# ---------------------------------------------------------------------------------

def ls_bench(lsa, requests, prompt, new, threads, budget):
    r = sh([RUN, "bench", lsa, "--only", "batched", "--requests", str(requests), "--prompt-len",
            str(prompt), "--max-new-tokens", str(new), "--threads", str(threads),
            "--token-budget", str(budget)])
    m = re.search(r"^batched\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", r.stdout, re.M)
    if not m:
        sys.exit(f"serve_vs_ort: no batched line from bench:\n{r.stdout}")
    if not re.search(r"^step\s+ragged", r.stdout, re.M):
        sys.exit(f"serve_vs_ort: {lsa} is not served as a ragged step:\n{r.stdout}")
    return dict(steps=int(m.group(1)), wall_s=float(m.group(2)))


def ls_prefill(lsa, n, length, threads):
    one = ls_bench(lsa, 1, length, 1, threads, length)
    more = ls_bench(lsa, n + 1, length, 1, threads, length)
    secs = more["wall_s"] - one["wall_s"]
    # None: below the timer's resolution (bench prints milliseconds).
    return dict(seconds=secs, tok_s=n * length / secs if secs > 0 else None,
                steps=more["steps"], first_s=one["wall_s"], wall_s=more["wall_s"])


def ls_decode(lsa, c, prompt, steps, threads):
    a = ls_bench(lsa, c, prompt, 1, threads, c * prompt)
    b = ls_bench(lsa, c, prompt, steps + 1, threads, c * prompt)
    secs = b["wall_s"] - a["wall_s"]
    return dict(seconds=secs, tok_s=c * steps / secs if secs > 0 else None,
                ms_per_step=1e3 * secs / steps if secs > 0 else None, steps=b["steps"] - a["steps"],
                prefill_wall_s=a["wall_s"], wall_s=b["wall_s"])


def ls_generate(lsa, prompts, new, threads, work):
    path = os.path.join(work, "prompts.jsonl")
    with open(path, "w") as f:
        for p in prompts:
            f.write(json.dumps([int(x) for x in p]) + "\n")
    r = sh([RUN, "generate", lsa, "--prompts", path, "--max-new-tokens", str(new),
            "--threads", str(threads)])
    return np.array([json.loads(l)["generated"] for l in r.stdout.splitlines() if l.strip()])


# ---------------------------------------------------------------------------------
# The benchmarks
# ---------------------------------------------------------------------------------

def serve(specs, threads_list, cfg, work, adaptive, record):
    out = []
    for spec in specs:
        src = write_model(spec, work)
        facts = model_facts(src)
        lsa = os.path.join(work, spec["name"] + ".lsa")
        facts["compile_s"] = compile_model(src, lsa)
        ad = None
        if adaptive and spec["large"]:
            ad = os.path.join(work, spec["name"] + "_adaptive.lsa")
            compile_model(src, ad, ["--reduction-policy=adaptive"])
        ctx = max_context(spec) or 1 << 30
        last = last_position_variant(src, os.path.join(work, spec["name"] + "_lastpos.onnx"))
        record(dict(bench="model", model=spec["name"], kind=spec.get("kind"), source=os.path.relpath(src, ROOT)
                    if src.startswith(ROOT) else src, max_context=ctx, **facts,
                    config=spec.get("config")))
        vocab = facts["vocab"]
        # The fixture's steps take well under a millisecond: more of them,
        # and repeats, so that bench's millisecond clock resolves them.
        scale = 1 if spec["large"] else cfg["fixture_scale"]
        repeat = cfg["repeat"] if spec["large"] else cfg["fixture_repeat"]
        # The sanity check that both systems run the same model: greedy tokens.
        check_p = bench_prompts(2, min(16, ctx // 4), vocab)
        for threads in threads_list:
            # onnxruntime's pool threads spin between ops by default; on a
            # shared machine that can cost it more than it gains, so with
            # several threads it runs both ways and the faster counts.
            ort_s = Ort(src, threads)
            ort_ns = Ort(src, threads, spin=False) if threads > 1 else None
            ort_last = Ort(last, threads, spin=threads == 1) if last else None
            if threads == threads_list[0]:
                new = min(8, ctx // 4)
                _, ort_tok = ort_s.decode(check_p, new)
                ls_tok = ls_generate(lsa, check_p, new, threads, work)
                same = int((ort_tok == ls_tok).sum()) if ls_tok.shape == ort_tok.shape else 0
                record(dict(bench="tokens", model=spec["name"], compared=int(ort_tok.size),
                            equal=same))
            for length in cfg["prefill"]:
                L = min(length, ctx - 1)
                n = max(1, scale * cfg["prefill_tokens"] // L)
                for rep in range(repeat):
                    prompts = bench_prompts(n + 1, L, vocab)
                    load = loadavg()
                    o = n * L / sum(ort_s.prefill(prompts))
                    ons = ort_ns and n * L / sum(ort_ns.prefill(prompts))
                    ol = ort_last and n * L / sum(ort_last.prefill(prompts))
                    ls = ls_prefill(lsa, n, L, threads)
                    rec = dict(bench="prefill", model=spec["name"], threads=threads, length=L,
                               asked=length, prompts=n, rep=rep, loadavg=load,
                               ort_tok_s=max(o, ons or 0), ort_spin_tok_s=o, ort_nospin_tok_s=ons,
                               ort_last_tok_s=ol,
                               lockstep=ls, lockstep_tok_s=ls["tok_s"])
                    if ad and threads == min(threads_list):
                        rec["adaptive"] = ls_prefill(ad, n, L, threads)
                    record(rec)
                    out.append(rec)
            for c in cfg["concurrency"]:
                P = min(cfg["decode_prompt"], ctx // 2)
                D = min(scale * cfg["decode_steps"], ctx - P - 1)
                for rep in range(repeat):
                    prompts = bench_prompts(c, P, vocab)
                    load = loadavg()
                    spin, _ = ort_s.decode(prompts, D)
                    nospin = ort_ns.decode(prompts, D)[0] if ort_ns else None
                    secs = min(spin, nospin or spin)
                    ls = ls_decode(lsa, c, P, D, threads)
                    rec = dict(bench="decode", model=spec["name"], threads=threads, concurrency=c,
                               prompt=P, steps=D, rep=rep, loadavg=load,
                               ort_tok_s=c * D / secs, ort_ms_per_step=1e3 * secs / D,
                               ort_spin_tok_s=c * D / spin, ort_nospin_tok_s=nospin and c * D / nospin,
                               lockstep=ls, lockstep_tok_s=ls["tok_s"])
                    if ad and threads == min(threads_list):
                        rec["adaptive"] = ls_decode(ad, c, P, D, threads)
                    record(rec)
                    out.append(rec)
            del ort_s, ort_ns, ort_last
    return out


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
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", k])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["T", n])
    node = helper.make_node("MatMul", ["X", "W"], ["Y"], name=f"/gemm_{k}_{n}/MatMul")
    graph = helper.make_graph([node], f"gemm_{k}_{n}", [x], [y],
                              initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    data = os.path.basename(path) + ".data"
    if os.path.exists(os.path.join(os.path.dirname(path), data)):
        os.remove(os.path.join(os.path.dirname(path), data))
    onnx.save_model(model, path, save_as_external_data=True, location=data)


def ls_exec_seconds(lsa, x_path, threads, repeat, work):
    r = sh([RUN, "exec", lsa, "--input", f"X={x_path}", "--output-dir", os.path.join(work, "out"),
            "--threads", str(threads), "--repeat", str(repeat)])
    m = re.search(r"median ([0-9.]+) s", r.stderr)
    if not m:
        sys.exit(f"serve_vs_ort: no median from exec:\n{r.stderr}")
    return float(m.group(1))


def np_seconds(x, w, repeat):
    x @ w
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        x @ w
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def gemm(specs, threads_list, cfg, work, adaptive, record):
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
                repeat = int(min(200, max(5, cfg["gemm_seconds"] / max(np_s * 3, 1e-6))))
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


def copy_bandwidth():
    """Bytes read and written per second by numpy's copy of 256 MiB (one
    thread): the memory roofline of a decode step."""
    a = np.ones(2**26, np.float32)
    b = np.empty_like(a)
    np.copyto(b, a)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        times.append(time.perf_counter() - t)
    return 2 * a.nbytes / min(times)


# ---------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------

def med(recs, key):
    vals = [key(r) for r in recs]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fx(a, b):
    return "n/a" if a is None or b is None else f"{a / b:.2f}x"


def pair_range(rs):
    """The range of Lockstep / onnxruntime over the back-to-back pairs."""
    v = [r["lockstep_tok_s"] / r["ort_tok_s"] for r in rs if r["lockstep_tok_s"]]
    return f"{min(v):.2f}-{max(v):.2f}" if len(v) > 1 else ""


def took(s):
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"


def fr(v):
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def report(env, models, res, quick, cfg):
    L = []
    title = (f"Run of {env['date']} ({env['cpu']}, {env['cores']} cores, load average "
             f"{' '.join(f'{x:.2f}' for x in env['loadavg'])} at start, commit {env['commit']}"
             f"{' with uncommitted changes' if env['dirty'] else ''}){' (--quick)' if quick else ''}")
    L += [title, ""]
    busy = env["loadavg"][0] > 0.5 * env["cores"]
    L.append(f"Measured by `bench/serve_vs_ort.py{' --quick' if quick else ''}` in one run of "
             f"{took(env['took_s'])}; onnxruntime {env['onnxruntime']}, numpy {env['numpy']} "
             f"({env['blas']}). The 1-minute load average was {env['load_min']:.1f}-{env['load_max']:.1f} "
             f"over the measurements" +
             (": the machine was shared with other work, so every time includes contention; each "
              "ratio compares two measurements taken back to back." if busy or env['load_max'] > 0.5 * env['cores']
              else "."))
    if env.get("copy_gbs"):
        L.append(f"Memory copy bandwidth (numpy, one thread, read + write): {env['copy_gbs']:.1f} GB/s.")
    L.append("")
    L += ["| model | parameters | MatMul weights read a decode step |", "|---|---:|---:|"]
    for m in models:
        L.append(f"| `{m['model']}`{' (' + m['source'] + ')' if not m.get('config') else ''} | "
                 f"{m['params'] / 1e6:.1f}M | {m['matmul_weight_bytes'] / 2**20:.1f} MiB |")
    L.append("")
    configs = [m for m in models if m.get("config")]
    if configs:
        L.append("Generated by `models/gen_decoders.py` at these sizes (random weights from its seeds): " +
                 "; ".join(f"`{m['model']}`: " + ", ".join(f"{k} {v}" for k, v in m["config"].items())
                           for m in configs) + ".")
        L.append("")
    toks = res.get("tokens", [])
    if toks:
        L.append("Same model on both sides: greedy tokens of 2 of bench's prompts, Lockstep "
                 "(`lockstep-run generate`) against onnxruntime's loop: " +
                 "; ".join(f"`{t['model']}` {t['equal']} of {t['compared']} equal" for t in toks) + ".")
        L.append("")
    pre, dec = res.get("prefill", []), res.get("decode", [])
    if pre or dec:
        L += ["### Serving: Lockstep against onnxruntime (tokens per second; ratio above 1: Lockstep faster)", "",
              f"Prefill: {cfg['prefill_tokens']} prompt tokens a case ({cfg['fixture_scale']}x for the "
              f"fixture `llama_dynamo18`, the median of {cfg['fixture_repeat']} measurements) in prompts of the length given, "
              "one prompt a step, after one untimed. onnxruntime runs the graph as exported, with logits at "
              "every position (what the ratio compares with, as the issue asks); the column after it runs "
              "the same graph with the lm_head on the last position only, Lockstep's work. "
              f"Decode: C requests of {cfg['decode_prompt']} prompt tokens, then {cfg['decode_steps']} "
              "greedy steps of C tokens each (one batch of C equal-length prompts in onnxruntime, no padding "
              "needed; `lockstep-run bench --only batched` in Lockstep), the steps only. "
              f"Each figure is the median of {cfg['repeat']} measurements. With 2 threads onnxruntime runs "
              "twice, with its pool threads spinning between ops (its default) and not "
              "(`session.intra_op.allow_spinning=0`), and the faster counts: on a shared machine spinning "
              "threads compete with the other work for the cores. The ratio is of the medians; `pairs` is "
              "its range over the back-to-back pairs of measurements.", "",
              "| model | case | threads | onnxruntime tok/s | onnxruntime, last-position lm_head | "
              "Lockstep tok/s | Lockstep / onnxruntime | pairs |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
        for m in models:
            for threads in sorted({r["threads"] for r in pre + dec}):
                for length in sorted({r["length"] for r in pre if r["model"] == m["model"]}):
                    rs = [r for r in pre if r["model"] == m["model"] and r["threads"] == threads
                          and r["length"] == length]
                    if not rs:
                        continue
                    o, ol, ls = (med(rs, lambda r: r["ort_tok_s"]), med(rs, lambda r: r["ort_last_tok_s"]),
                                 med(rs, lambda r: r["lockstep_tok_s"]))
                    asked = rs[0]["asked"]
                    what = f"prefill {length}" + (f" (asked {asked}; {m['max_context']} positions)"
                                                  if asked != length else "")
                    L.append(f"| `{m['model']}` | {what} | {threads} | {fr(o)} | {fr(ol)} | {fr(ls)} | "
                             f"**{fx(ls, o)}** | {pair_range(rs)} |")
                for c in sorted({r["concurrency"] for r in dec if r["model"] == m["model"]}):
                    rs = [r for r in dec if r["model"] == m["model"] and r["threads"] == threads
                          and r["concurrency"] == c]
                    if not rs:
                        continue
                    o, ls = med(rs, lambda r: r["ort_tok_s"]), med(rs, lambda r: r["lockstep_tok_s"])
                    what = f"decode x{c}" + (f" (prompt {rs[0]['prompt']}, {rs[0]['steps']} steps)"
                                             if rs[0]["prompt"] != cfg["decode_prompt"] or
                                             rs[0]["steps"] != cfg["decode_steps"] else "")
                    L.append(f"| `{m['model']}` | {what} | {threads} | {fr(o)} | | {fr(ls)} | **{fx(ls, o)}** | {pair_range(rs)} |")
        L.append("")
        L += ["Decode step times (ms a step, the steps only):", "",
              "| model | threads | " + " | ".join(f"x{c} onnxruntime | x{c} Lockstep"
                                                 for c in cfg["concurrency"]) + " |",
              "|---|---:|" + "---:|---:|" * len(cfg["concurrency"])]
        for m in models:
            for threads in sorted({r["threads"] for r in dec}):
                cells = []
                for c in cfg["concurrency"]:
                    rs = [r for r in dec if r["model"] == m["model"] and r["threads"] == threads
                          and r["concurrency"] == c]
                    o = med(rs, lambda r: r["ort_ms_per_step"]) if rs else None
                    ls = med(rs, lambda r: r["lockstep"]["ms_per_step"]) if rs else None
                    cells += [f"{o:.2f}" if o else "n/a", f"{ls:.2f}" if ls else "n/a"]
                if any(cells):
                    L.append(f"| `{m['model']}` | {threads} | " + " | ".join(cells) + " |")
        L.append("")
    g = res.get("gemm", [])
    if g:
        L += ["### GEMM: Lockstep's compiled MatMul against numpy (OpenBLAS)", "",
              "Y[T, N] = X[T, K] . W[K, N], W an initializer as in the models; Lockstep's time is the median "
              "of `lockstep-run exec --repeat` (the run only), numpy's the median of as many `X @ W` in this "
              f"process, its OpenBLAS set to the same thread count; the two alternate {cfg.get('gemm_rounds', 1)} "
              "times and the medians count. Share = OpenBLAS time / Lockstep time "
              "(the target: 80% at prefill shapes, T = 128 and 512). The lm_head runs at the decode sizes "
              "only: a serving step applies it to one row a request, prefill included. At small T the "
              "weights stay in the cache between repeats, unlike in a model.", "",
              "| K x N | used by | T | threads | OpenBLAS GFLOP/s | Lockstep GFLOP/s | share of OpenBLAS |"
              + (" adaptive / canonical time |" if any("adaptive_s" in r for r in g) else ""),
              "|---|---|---:|---:|---:|---:|---:|" + ("---:|" if any("adaptive_s" in r for r in g) else "")]
        for r in g:
            row = (f"| {r['k']} x {r['n']} | {', '.join(r['uses'])} | {r['t']} | {r['threads']} | "
                   f"{r['numpy_gflops']:.1f} | {r['lockstep_gflops']:.1f} | {r['share'] * 100:.0f}% |")
            if "adaptive_s" in r:
                row += f" {r['adaptive_s'] / r['lockstep_s']:.2f} |"
            L.append(row)
        L.append("")
    L += breakdown(models, res)
    inv = [r for r in pre + dec if "adaptive" in r]
    if inv:
        L += ["### Invariance cost: canonical against `--reduction-policy=adaptive`", "",
              "The same Lockstep cases, compiled with the adaptive negative control (reductions folded "
              "whole at 4 rows or more, split in chunks of 16 below: the split chosen from the batch, as "
              "ordinary stacks do; not batch-invariant). Cost = adaptive tokens/s over canonical tokens/s "
              "less 1: what the invariant form costs (negative: the control is slower); medians of the "
              "measurements, and the range of the back-to-back pairs' costs. At the lowest thread count "
              "only: the control's loops are not split over threads (with 2 it runs as with 1), which "
              "would measure that instead.", "",
              "| model | case | threads | canonical tok/s | adaptive tok/s | cost | pairs |",
              "|---|---|---:|---:|---:|---:|---:|"]
        for (model, what, threads), rs in grouped(inv).items():
            c = med(rs, lambda r: r["lockstep_tok_s"])
            a = med(rs, lambda r: r["adaptive"]["tok_s"])
            pairs = [r["adaptive"]["tok_s"] / r["lockstep_tok_s"] - 1 for r in rs
                     if r["adaptive"]["tok_s"] and r["lockstep_tok_s"]]
            spread = (f"{min(pairs) * 100:+.0f}% to {max(pairs) * 100:+.0f}%" if len(pairs) > 1 else "")
            L.append(f"| `{model}` | {what} | {threads} | {fr(c)} | {fr(a)} | "
                     + (f"{(a / c - 1) * 100:+.1f}% |" if a and c else "n/a |") + f" {spread} |")
        L.append("")
    ga = [r for r in g if "adaptive_s" in r]
    if ga:
        L += ["The same comparison on the GEMMs alone (the table's last column): the median of adaptive / "
              "canonical time over the shapes: 0.95 means that the control's whole fold takes 5% less time "
              "than the canonical chunks (the partials, then their combine).", "",
              "| rows T | threads | GEMMs | median adaptive / canonical time | range |", "|---|---:|---:|---:|---:|"]
        for label, sel in (("1 (the control splits in chunks of 16)", lambda t: t == 1),
                           ("8 to 32", lambda t: 1 < t < 128), ("128 and more", lambda t: t >= 128)):
            for threads in sorted({r["threads"] for r in ga}):
                v = [r["adaptive_s"] / r["lockstep_s"] for r in ga if sel(r["t"]) and r["threads"] == threads]
                if v:
                    L.append(f"| {label} | {threads} | {len(v)} | {statistics.median(v):.2f} | "
                             f"{min(v):.2f}-{max(v):.2f} |")
        L.append("")
    return "\n".join(L)


def grouped(recs):
    """Serving records by (model, case, threads), in their order."""
    out = {}
    for r in recs:
        what = f"prefill {r['length']}" if r["bench"] == "prefill" else f"decode x{r['concurrency']}"
        out.setdefault((r["model"], what, r["threads"]), []).append(r)
    return out


def breakdown(models, res):
    """A step's time against the sum of its MatMuls' times in this run's
    GEMM table (the same shapes, rows and threads): what is left is
    attention, norms, elementwise ops, copies and the runtime."""
    g = {(r["k"], r["n"], r["t"], r["threads"]): r for r in res.get("gemm", [])}
    rows = []
    for m in models:
        if not m.get("config"):
            continue
        spec = dict(kind=m["kind"], config=m["config"])
        shapes = gemm_shapes(spec)
        recs = [r for r in res.get("prefill", []) + res.get("decode", []) if r["model"] == m["model"]]
        for (_, what, threads), rs in grouped(recs).items():
            r = rs[0]
            if r["bench"] == "prefill":
                t, head_rows = r["length"], 1
                ls = med(rs, lambda x: x["lockstep_tok_s"])
                ls_ms = 1e3 * t / ls if ls else None
                ort_ms = 1e3 * t / med(rs, lambda x: x["ort_tok_s"])
            else:
                t = head_rows = r["concurrency"]
                ls_ms = med(rs, lambda x: x["lockstep"]["ms_per_step"])
                ort_ms = med(rs, lambda x: x["ort_ms_per_step"])
            if ls_ms is None:
                continue
            ls_mm = blas_mm = 0.0
            ok = True
            for name, k, n, count in shapes:
                rows_ = head_rows if name == "lm_head" else t
                times = count * (1 if name == "lm_head" else m["config"]["layers"])
                rec = g.get((k, n, rows_, r["threads"]))
                if not rec:
                    ok = False
                    break
                ls_mm += times * rec["lockstep_s"] * 1e3
                blas_mm += times * rec["numpy_s"] * 1e3
            if ok:
                rows.append((m["model"], what, r["threads"], ls_ms, ls_mm, blas_mm, ort_ms))
    if not rows:
        return []
    L = ["### Where a step's time goes: its MatMuls, timed alone", "",
         "Each step's MatMuls (every projection of every layer at the step's rows, and the lm_head at "
         "one row a request) summed from the GEMM table above, against the step's time. The rest is "
         "attention, norms, elementwise ops, copies and the runtime. At decode sizes the GEMM table's "
         "weights stay in the cache between repeats, so the MatMul share of a decode step is "
         "underestimated there.", "",
         "| model | case | threads | Lockstep ms a step | its MatMuls alone | MatMul share | "
         "the same MatMuls in OpenBLAS | onnxruntime ms a step |",
         "|---|---|---:|---:|---:|---:|---:|---:|"]
    for model, what, threads, ls_ms, ls_mm, blas_mm, ort_ms in rows:
        L.append(f"| `{model}` | {what} | {threads} | {ls_ms:.1f} | {ls_mm:.1f} | {ls_mm / ls_ms * 100:.0f}% | "
                 f"{blas_mm:.1f} | {ort_ms:.1f} |")
    L.append("")
    return L


def update_results(path, text):
    """Replaces the report between the markers of bench/RESULTS.md's CPU
    section (the section and markers are made when missing)."""
    doc = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Benchmark results\n"
    block = f"{BEGIN}\n{text.rstrip()}\n{END}"
    if BEGIN in doc and END in doc:
        a, b = doc.index(BEGIN), doc.index(END) + len(END)
        doc = doc[:a] + block + doc[b:]
    else:
        head = ("## CPU speed (issue 18): `bench/serve_vs_ort.py`\n\n"
                "What the script wrote, between the markers (rewritten by each full run); the notes "
                "after them are ours.\n\n")
        at = doc.find("\n## GPU")
        section = head + block + "\n\n"
        doc = doc[:at + 1] + section + doc[at + 1:] if at >= 0 else doc.rstrip() + "\n\n" + section
    open(path, "w", encoding="utf-8").write(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run: small models and sizes")
    ap.add_argument("--out", help="also write the report here")
    ap.add_argument("--results", default=None,
                    help="the RESULTS.md to update (default bench/RESULTS.md for a full run, none "
                         "for --quick; '' for none)")
    ap.add_argument("--work", help="models and artifacts (default: a temporary directory; "
                                   "generated models are kept there and reused)")
    ap.add_argument("--log", help="one JSON line a measurement")
    ap.add_argument("--only", default="serve,gemm,adaptive")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", help="comma-separated names (default all)")
    ap.add_argument("--repeat", type=int, help="measurements of each serving case (median kept)")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--from-log", help="measure nothing: write the report of this --log")
    a = ap.parse_args()
    if a.from_log:
        return from_log(a)
    only = set(a.only.split(","))
    cfg = dict(QUICK if a.quick else FULL)
    if a.repeat:
        cfg["repeat"] = a.repeat
    threads_list = [int(t) for t in a.threads.split(",")]
    if not a.no_build:
        build()
    for tool in (OPT, RUN):
        if not os.access(tool, os.X_OK):
            sys.exit(f"serve_vs_ort: {tool} is missing (run scripts/build)")
    work = a.work or tempfile.mkdtemp(prefix="lockstep-cpubench-")
    os.makedirs(work, exist_ok=True)
    specs = model_specs(a.quick)
    if a.models:
        specs = [s for s in specs if s["name"] in a.models.split(",")]
    env = machine()
    t0 = time.time()
    logf = open(a.log, "w") if a.log else None
    loads = [env["loadavg"][0]]
    res, models = {}, []

    def record(rec):
        rec["elapsed_s"] = round(time.time() - t0, 1)
        if "loadavg" in rec:
            loads.append(rec["loadavg"][0])
        if rec["bench"] == "model":
            models.append(rec)
        elif rec["bench"] == "tokens":
            res.setdefault("tokens", []).append(rec)
        line = json.dumps(rec)
        log(line)
        if logf:
            logf.write(line + "\n")
            logf.flush()

    record(dict(bench="machine", quick=a.quick, cfg=cfg, threads=threads_list, **env))
    env["copy_gbs"] = copy_bandwidth() / 1e9
    record(dict(bench="copy", gbs=env["copy_gbs"]))
    if "serve" in only:
        rs = serve(specs, threads_list, cfg, work, "adaptive" in only, record)
        res["prefill"] = [r for r in rs if r["bench"] == "prefill"]
        res["decode"] = [r for r in rs if r["bench"] == "decode"]
    elif "gemm" in only:
        for s in specs:
            if s["large"]:
                models.append(dict(model=s["name"], kind=s["kind"], config=s["config"], params=0,
                                   matmul_weight_bytes=0))
    if "gemm" in only:
        res["gemm"] = gemm(specs, threads_list, cfg, work, "adaptive" in only, record)
    env["took_s"] = time.time() - t0
    env["load_min"], env["load_max"] = min(loads), max(loads)
    record(dict(bench="end", loadavg=loadavg(), took_s=env["took_s"],
                time=datetime.datetime.now().isoformat(timespec="seconds")))
    text = report(env, models, res, a.quick, cfg)
    write_report(a, text)
    if not a.work:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


def write_report(a, text):
    log("")
    log(text)
    if a.out:
        open(a.out, "w").write(text + "\n")
    results = a.results if a.results is not None else (None if a.quick else
                                                       os.path.join(HERE, "RESULTS.md"))
    if results:
        update_results(results, text)
        log(f"serve_vs_ort: wrote the report into {results}")


def from_log(a):
    recs = [json.loads(l) for l in open(a.from_log) if l.strip()]
    env = dict(recs[0])
    if env.get("bench") != "machine":
        sys.exit(f"serve_vs_ort: {a.from_log} is not a log of this script")
    quick = env["quick"]
    cfg = dict(QUICK if quick else FULL, **env["cfg"])
    models, res, loads = [], {}, [env["loadavg"][0]]
    for r in recs[1:]:
        if "loadavg" in r and r["bench"] != "end":
            loads.append(r["loadavg"][0])
        b = r["bench"]
        if b == "model":
            r.setdefault("kind", "gpt2" if "gpt2" in r["model"] else "llama")
            models.append(r)
        elif b == "copy":
            env["copy_gbs"] = r["gbs"]
        elif b == "end":
            env["took_s"] = r["took_s"]
        elif b in ("tokens", "prefill", "decode", "gemm"):
            res.setdefault(b, []).append(r)
    if not models and res.get("gemm"):
        for s in model_specs(quick):
            if s["large"]:
                models.append(dict(model=s["name"], kind=s["kind"], config=s["config"], params=0,
                                   matmul_weight_bytes=0))
    env.setdefault("took_s", 0)
    env["load_min"], env["load_max"] = min(loads), max(loads)
    a.quick = quick  # a full run's log updates RESULTS.md by default, as the run would have
    write_report(a, report(env, models, res, quick, cfg))


if __name__ == "__main__":
    main()
