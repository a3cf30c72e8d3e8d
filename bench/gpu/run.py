#!/usr/bin/env python3
"""The GPU speed benchmark, in one command on the GPU machine (torch,
transformers and onnx there; no compiler). Reads a bundle made by
bench/gpu/prepare.py and writes a Markdown report (bench/RESULTS.md's GPU
section) with the date, GPU, driver and commit:

  copy     device copy bandwidth (torch, 2 GiB), the decode roofline;
  gemm     Lockstep's compiled MatMul against cuBLAS fp32 (torch.mm, TF32
           off) at every projection shape of the model below, T = 1 .. 2048.
           Lockstep's time is its kernels' device time per call from
           LOCKSTEP_CUDA_PROFILE=events (CUDA events around each launch; the
           launches' own cost is not counted, as torch's CUDA-event time
           does not count it either);
  serve    bench/gpu/llama1b.py's 0.94e9-parameter Llama (weights written
           from their seed at the path the artifact references):
           `lockstep-run bench --only batched --warmup 1` at 1, 8 and 64
           concurrent requests (prompt 128, 128 new tokens), and prefill of 8
           prompts of 512: the requests are served once untimed first, so
           that the weights' upload, the kernels' loading and the CUDA
           graphs' capture are not timed (HF's generate is timed after a
           warm-up generate too); the weights read per second in a decode
           step at 1 request (bench's decode phase line) against the copy
           bandwidth;
  nographs the same `bench` at 1 and 64 requests with LOCKSTEP_CUDA_GRAPHS=0
           (every kernel launched by the host, as before CUDA graphs);
  hf       HF transformers LlamaForCausalLM, fp32, eager, on the same
           weights, the same shapes, in the same run;
  hfc      the same with a static KV cache and torch.compile(mode=
           "reduce-overhead") (CUDA graphs), at 1, 8 and 64 requests, in a
           child process given --hfc-timeout seconds (compiling takes
           minutes); what did not finish is reported as such. The tables
           compare with the faster HF configuration measured.

usage: bench/gpu/run.py BUNDLE_DIR --out REPORT.md
                        [--only copy,gemm,serve,nographs,adaptive,hf,hfc]
                        [--json FILE] [--hfc-timeout S]
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama1b  # noqa: E402

GEMM_T = [1, 16, 64, 512, 2048]
CONCURRENCY = [1, 8, 64]
COMPILED_CONCURRENCY = [1, 8, 64]
PROMPT, NEW, PREFILL_PROMPT, PREFILL_REQUESTS = 128, 128, 512, 8
# The invariance cost's controls: result key (bench/gpu/prepare.py builds
# llama1b_KEY.lsa with lockstep-opt FLAGS), column, what the column is.
CONTROL_WIDTHS = [128, 512, 1024]
CONTROLS = [
    ("adaptive", "split16", ["--reduction-policy=adaptive"],
     "`--reduction-policy=adaptive` (chunks of 16 below 4 rows, whole folds above)"),
    ("whole", "whole", ["--reduction-policy=adaptive", "--adaptive-rows=2", "--adaptive-chunk=256"],
     "`--adaptive-rows=2 --adaptive-chunk=256` (one row in the contract's chunks of 256, more "
     "rows folded whole, one kernel a contraction without a combine)"),
] + [(f"c{w}", f"c{w}", ["--reduction-policy=adaptive", f"--adaptive-rows={1 << 40}",
                         f"--adaptive-chunk={w}"],
      f"every reduction but attention's in chunks of {w} at any batch size")
     for w in CONTROL_WIDTHS]


def log(*a):
    print(*a, flush=True)


def sh(cmd, env=None, check=True):
    log("+", " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def cuda_ms(fn, reps):
    import torch
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def copy_bandwidth():
    import torch
    n = 2 ** 31 // 4
    src = torch.empty(n, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    ms = cuda_ms(lambda: dst.copy_(src), 20)
    return 2 * n * 4 / (ms * 1e-3)  # bytes read and written per second


def exec_kernel_ms(run_tool, lsa, inputs, outdir, reps=10, check=True):
    """`lockstep-run exec` of `lsa` on the GPU, `reps` calls, with each
    kernel's device time between two CUDA events (LOCKSTEP_CUDA_PROFILE=events:
    launches do not wait, so a launch's own cost is not counted; module
    loads are counted apart). Returns (milliseconds of kernels a call,
    launches a call); with check=False, None when the run failed or printed
    no kernel times (its output's tail is printed), else that raises."""
    env = dict(os.environ, LOCKSTEP_CUDA_PROFILE="events")
    cmd = [run_tool, "exec", lsa]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    p = sh(cmd + ["--output-dir", outdir, "--device", "cuda", "--repeat", str(reps)], env=env,
           check=check)
    text = p.stdout + p.stderr
    m = re.search(r"kernels ([0-9.]+) s of device time in (\d+) launches of (\d+) kernels", text)
    rows = re.findall(r"^\s+\d+\s+([0-9.]+)\s+[0-9.]+\s+\d+\s+module", text, re.M)
    if p.returncode != 0 or not m or len(rows) != int(m.group(3)):
        if check:
            raise RuntimeError("no kernel times in the profile:\n" + text)
        print(text[-2000:], flush=True)
        return None
    # The rows' total ms (three decimals) are finer than the summary's seconds.
    return sum(float(r) for r in rows) / reps, int(m.group(2)) // reps


def gemm(bundle, shapes, run_tool):
    import numpy as np
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out_rows = []
    tmp = tempfile.mkdtemp()
    for k, n in shapes:
        lsa = os.path.join(bundle, f"gemm_{k}_{n}.lsa")
        w = torch.randn(k, n, device="cuda")
        np.save(os.path.join(tmp, "W.npy"), w.cpu().numpy())
        for t in GEMM_T:
            x = torch.randn(t, k, device="cuda")
            torch_ms = cuda_ms(lambda: torch.mm(x, w), 20)
            np.save(os.path.join(tmp, "X.npy"), x.cpu().numpy())
            ls_ms, launches = exec_kernel_ms(run_tool, lsa, {"X": f"{tmp}/X.npy", "W": f"{tmp}/W.npy"},
                                             os.path.join(tmp, "out"))
            flops = 2.0 * t * k * n
            out_rows.append(dict(k=k, n=n, t=t, torch_ms=torch_ms, lockstep_ms=ls_ms,
                             launches=launches,
                             torch_tflops=flops / torch_ms / 1e9,
                             lockstep_tflops=flops / ls_ms / 1e9))
            log(json.dumps(out_rows[-1]))
    return out_rows


def ensure_model(manifest):
    d = manifest["model_dir"]
    onnx_path, data = llama1b.paths(d)
    if not (os.path.exists(onnx_path) and os.path.exists(data)):
        t0 = time.time()
        llama1b.build(d)
        log(f"wrote {data} in {time.time() - t0:.0f} s")
    return onnx_path


def parse_bench(text):
    m = re.search(r"^batched\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", text, re.M)
    if not m:
        raise RuntimeError("no batched line in:\n" + text)
    steps, wall, gen, fed, ms = m.groups()
    out = dict(steps=int(steps), wall_s=float(wall), generated_per_s=float(gen),
               fed_per_s=float(fed), ms_per_step=float(ms))
    # The phase lines: the decode steps (only generated tokens fed) timed
    # inside the run, and the prefill steps.
    for phase in ("prefill", "decode"):
        p = re.search(rf"^batched {phase}\s+(\d+) steps\s+([0-9.]+) s\s.*?([0-9.]+) ms/step$", text, re.M)
        if p:
            out[f"{phase}_steps"] = int(p.group(1))
            out[f"{phase}_ms_per_step"] = float(p.group(3))
    return out


def serve(bundle, run_tool, artifact="llama1b.lsa", concurrency=CONCURRENCY, prefill=True,
          env=None):
    lsa = os.path.join(bundle, artifact)
    out = {}
    for c in concurrency:
        p = sh([run_tool, "bench", lsa, "--device", "cuda", "--only", "batched", "--warmup", "1",
                "--requests", str(c), "--prompt-len", str(PROMPT), "--max-new-tokens", str(NEW)],
               env=env)
        out[f"gen{c}"] = parse_bench(p.stdout)
        log(artifact, c, json.dumps(out[f"gen{c}"]), launches_line(p.stdout))
    if prefill:
        p = sh([run_tool, "bench", lsa, "--device", "cuda", "--only", "batched", "--warmup", "1",
                "--requests", str(PREFILL_REQUESTS), "--prompt-len", str(PREFILL_PROMPT), "--max-new-tokens", "1",
                "--token-budget", str(PREFILL_PROMPT)], env=env)
        out["prefill"] = parse_bench(p.stdout)
        log(artifact, "prefill", json.dumps(out["prefill"]), launches_line(p.stdout))
    return out


def launches_line(text):
    return next((l for l in text.splitlines() if l.startswith("cuda launches")), "")


def hf(onnx_path):
    import torch
    from transformers import LlamaForCausalLM
    torch.backends.cuda.matmul.allow_tf32 = False
    cfg = llama1b.hf_config()
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg)
    model.load_state_dict(llama1b.hf_state_dict(onnx_path))
    model = model.to("cuda", torch.float32).eval()
    g = torch.Generator().manual_seed(1)
    out = {}
    with torch.no_grad():
        for c in CONCURRENCY:
            ids = torch.randint(0, cfg.vocab_size, (c, PROMPT), generator=g).cuda()
            kw = dict(max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False,
                      pad_token_id=0, eos_token_id=None)
            model.generate(ids, **dict(kw, max_new_tokens=4, min_new_tokens=4))
            torch.cuda.synchronize()
            t0 = time.time()
            model.generate(ids, **kw)
            torch.cuda.synchronize()
            secs = time.time() - t0
            out[f"gen{c}"] = dict(wall_s=secs, generated_per_s=c * NEW / secs)
            log("hf", c, json.dumps(out[f"gen{c}"]))
        ids = torch.randint(0, cfg.vocab_size, (PREFILL_REQUESTS, PREFILL_PROMPT), generator=g).cuda()
        ms = cuda_ms(lambda: model(ids, use_cache=False), 5)
        out["prefill"] = dict(wall_s=ms / 1e3, fed_per_s=PREFILL_REQUESTS * PREFILL_PROMPT / (ms / 1e3))
        log("hf prefill", json.dumps(out["prefill"]))
    del model
    torch.cuda.empty_cache()
    return out


def hf_compiled(onnx_path):
    """HF with a static cache and torch.compile(mode="reduce-overhead"): CUDA
    graphs of the decode step. Run in a child process (see hf_compiled_child)."""
    import torch
    from transformers import LlamaForCausalLM
    torch.backends.cuda.matmul.allow_tf32 = False
    cfg = llama1b.hf_config()
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg)
    model.load_state_dict(llama1b.hf_state_dict(onnx_path))
    model = model.to("cuda", torch.float32).eval()
    model.generation_config.cache_implementation = "static"
    # generate() compiles the decode step itself for a static cache (its
    # compile_config; CUDA graphs with "reduce-overhead"). Compiling
    # model.forward by hand as well made the two capture the same outputs
    # (run 6: "accessing tensor output of CUDAGraphs that has been
    # overwritten by a subsequent run").
    try:
        from transformers import CompileConfig
        model.generation_config.compile_config = CompileConfig(fullgraph=True,
                                                               mode="reduce-overhead")
    except ImportError:  # older transformers: compile the forward by hand
        model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for c in COMPILED_CONCURRENCY:
            ids = torch.randint(0, cfg.vocab_size, (c, PROMPT), generator=g).cuda()
            kw = dict(max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False,
                      pad_token_id=0, eos_token_id=None)
            t0 = time.time()
            for _ in range(2):  # compiles, then captures the graphs
                model.generate(ids, **kw)
            torch.cuda.synchronize()
            warm = time.time() - t0
            t0 = time.time()
            model.generate(ids, **kw)
            torch.cuda.synchronize()
            secs = time.time() - t0
            # One line a concurrency, read by the parent as it comes.
            # Whether generate() did compile (it keeps the compiled step).
            compiled = getattr(model, "_compiled_call", None) is not None or \
                hasattr(model.forward, "_torchdynamo_orig_callable")
            print("HFC " + json.dumps(dict(c=c, wall_s=secs, generated_per_s=c * NEW / secs,
                                           warmup_s=warm, compiled=compiled)), flush=True)


def hf_compiled_child(onnx_path, timeout):
    out = {}
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--hfc-child", onnx_path],
                           capture_output=True, text=True, timeout=timeout)
        text, note = p.stdout, "" if p.returncode == 0 else f"exit {p.returncode}: {p.stderr[-2000:]}"
    except subprocess.TimeoutExpired as e:
        text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        note = f"stopped after {timeout} s"
    for line in text.splitlines():
        if line.startswith("HFC "):
            r = json.loads(line[4:])
            out[f"gen{r['c']}"] = r
    if note:
        out["note"] = note
    log("hf compiled", json.dumps(out)[:3000])
    return out


def report(path, env, res):
    L = [f"## GPU ({env['date']}, {env['gpu']}, driver {env['driver']}, commit {env['commit']})", ""]
    L.append("Measured by `bench/gpu/run.py` on the GPU machine (bundle from `bench/gpu/prepare.py`).")
    L.append("")
    bw = res.get("copy")
    if bw:
        L += [f"Device copy bandwidth (read + write, torch, 2 GiB): **{bw / 1e12:.2f} TB/s**.", ""]
    if res.get("gemm"):
        L += ["### GEMM: Lockstep against cuBLAS fp32 (torch.mm, TF32 off)", "",
              "Lockstep's time is its kernels' device time per call (the chunk partials and their "
              "combine), each between two CUDA events (LOCKSTEP_CUDA_PROFILE=events): the gaps "
              "between its kernels are not counted. cuBLAS's is one torch.mm between two events, "
              "its launch included, which counts at small T.", "",
              "| K x N | T | cuBLAS ms | Lockstep ms | cuBLAS TFLOP/s | Lockstep TFLOP/s | share of cuBLAS |",
              "|---|---:|---:|---:|---:|---:|---:|"]
        for r in res["gemm"]:
            L.append(f"| {r['k']} x {r['n']} | {r['t']} | {r['torch_ms']:.3f} | {r['lockstep_ms']:.3f} | "
                     f"{r['torch_tflops']:.2f} | {r['lockstep_tflops']:.2f} | "
                     f"{r['torch_ms'] / r['lockstep_ms'] * 100:.0f}% |")
        L.append("")
    s, h = res.get("serve"), res.get("hf")
    if s or h:
        c = llama1b.CONFIG
        L += [f"### End to end: Llama of {env.get('params', 0) / 1e9:.2f}e9 parameters "
              f"(hidden {c['hidden']}, {c['layers']} layers, GQA {c['heads']}/{c['kv_heads']}, vocab {c['vocab']}), fp32", "",
              f"Prompt {PROMPT}, {NEW} new tokens, greedy; generated tokens per second over the whole run "
              f"(prefill included), after one untimed run of the same requests on both sides "
              f"(Lockstep: `bench --warmup 1`; runs 1-11 timed Lockstep's first run, the weights' upload "
              f"included). Prefill: {PREFILL_REQUESTS} prompts of {PREFILL_PROMPT}. "
              f"Decode ms/step: Lockstep's decode steps only (bench's phase line).", "",
              "| concurrency | Lockstep tok/s | Lockstep ms/step | Lockstep decode ms/step | HF eager tok/s | HF compiled tok/s | Lockstep / faster HF |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
        hc = res.get("hfc") or {}
        for cc in CONCURRENCY:
            ls = s.get(f"gen{cc}") if s else None
            hh = h.get(f"gen{cc}") if h else None
            cc_ = hc.get(f"gen{cc}")
            comp = f"{cc_['generated_per_s']:.1f}" if cc_ else ("not run" if cc not in COMPILED_CONCURRENCY or not hc else "did not finish")
            best = max([x["generated_per_s"] for x in (hh, cc_) if x] or [0])
            eager = f"{hh['generated_per_s']:.1f}" if hh else "not run"
            dec = f"{ls['decode_ms_per_step']:.2f}" if ls and "decode_ms_per_step" in ls else ""
            ours = f"{ls['generated_per_s']:.1f} | {ls['ms_per_step']:.2f} | {dec}" if ls else "not run | |"
            ratio = f"{ls['generated_per_s'] / best:.2f}x" if ls and best else ""
            L.append(f"| {cc} | {ours} | {eager} | {comp} | {ratio} |")
        if s and h:
            L.append(f"| prefill | {s['prefill']['fed_per_s']:.0f} (fed/s) | {s['prefill']['ms_per_step']:.2f} | | "
                     f"{h['prefill']['fed_per_s']:.0f} | not run | {s['prefill']['fed_per_s'] / h['prefill']['fed_per_s']:.2f}x |")
        L.append("")
        if hc.get("note"):
            L += [f"HF compiled: {hc['note'].splitlines()[0] if hc['note'] else ''}.", ""]
        ng = res.get("nographs")
        if s and ng:
            L += ["CUDA graphs (LaunchGraph.h) against every kernel launched by the host "
                  "(LOCKSTEP_CUDA_GRAPHS=0), same bundle:", "",
                  "| concurrency | with graphs tok/s | without tok/s | ratio |", "|---:|---:|---:|---:|"]
            for cc in CONCURRENCY:
                if f"gen{cc}" in ng:
                    x, y = s[f"gen{cc}"]["generated_per_s"], ng[f"gen{cc}"]["generated_per_s"]
                    L.append(f"| {cc} | {x:.1f} | {y:.1f} | {x / y:.2f}x |")
            L.append("")
        if s and bw:
            weights = env.get("weight_bytes", 0)
            ms = s["gen1"].get("decode_ms_per_step", s["gen1"]["ms_per_step"])
            step = ms * 1e-3
            L += [f"Decode at 1 request: {weights / 2**30:.2f} GiB of weights a decode step in "
                  f"{ms:.2f} ms = {weights / step / 1e12:.3f} TB/s, "
                  f"{weights / step / bw * 100:.1f}% of the copy bandwidth.", ""]
    controls = [(name, res[key], doc) for key, name, _, doc in CONTROLS if res.get(key)]
    if controls and s:
        L += ["### Invariance cost: canonical against the adaptive controls", "",
              "The same model compiled as a negative control, whose reductions split by the "
              "step's rows as ordinary stacks pick split-K (not batch-invariant): " +
              "; ".join(f"{name}: {doc}" for name, _, doc in controls) + ". "
              "A stack that picks its split from the batch would run each case with the "
              "fastest of these splits (canonical's among them): cost = that one's tokens/s "
              "over canonical's, less 1 (0 where canonical's split is the fastest). The "
              "column after it is the fastest control's alone.", "",
              "| case | canonical | " + " | ".join(n for n, _, _ in controls) +
              " | cost | fastest control against canonical |",
              "|---|---:|" + "---:|" * len(controls) + "---:|---:|"]
        rows = [(f"{cc} requests, generated tok/s", f"gen{cc}", "generated_per_s") for cc in CONCURRENCY]
        rows.append((f"prefill {PREFILL_REQUESTS} x {PREFILL_PROMPT}, fed tok/s", "prefill", "fed_per_s"))
        for label, key, field in rows:
            if key not in s or not all(key in c for _, c, _ in controls):
                continue
            x = s[key][field]
            ys = [c[key][field] for _, c, _ in controls]
            L.append(f"| {label} | {x:.1f} | " + " | ".join(f"{y:.1f}" for y in ys) +
                     f" | {(max(ys + [x]) / x - 1) * 100:+.1f}% | {(max(ys) / x - 1) * 100:+.1f}% |")
        L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))
    log("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="copy,gemm,serve,nographs,adaptive,hf,hfc")
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("--hfc-timeout", type=int, default=300)
    if len(sys.argv) == 3 and sys.argv[1] == "--hfc-child":
        hf_compiled(sys.argv[2])
        return
    args = ap.parse_args()
    only = set(args.only.split(","))
    manifest = json.load(open(os.path.join(args.bundle, "manifest.json")))
    run_tool = os.path.join(args.bundle, "lockstep-run")
    smi = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).stdout
    gpu, driver = [x.strip() for x in smi.splitlines()[0].split(",")]
    env = dict(date=datetime.date.today().isoformat(), gpu=gpu, driver=driver,
               commit=manifest["commit"])
    res = {}
    if "copy" in only:
        res["copy"] = copy_bandwidth()
        log(f"copy {res['copy'] / 1e12:.2f} TB/s")
    if "gemm" in only:
        res["gemm"] = gemm(args.bundle, [tuple(s) for s in manifest["gemm"]], run_tool)
    onnx_path = None
    if only & {"serve", "hf", "hfc", "adaptive", "nographs"} and manifest.get("model"):
        onnx_path = ensure_model(manifest)
        c = llama1b.CONFIG
        h, v = c["hidden"], c["vocab"]
        per_layer = h * (c["heads"] * c["head_dim"]) * 2 + h * c["kv_heads"] * c["head_dim"] * 2 \
            + 3 * h * c["inter"] + 2 * h
        env["params"] = c["layers"] * per_layer + 2 * v * h + h
        env["weight_bytes"] = 4 * (c["layers"] * per_layer + v * h + h)  # read a decode step
        if "serve" in only:
            res["serve"] = serve(args.bundle, run_tool)
        for key, _, _, _ in CONTROLS:
            lsa = f"llama1b_{key}.lsa"
            if "adaptive" in only and os.path.exists(os.path.join(args.bundle, lsa)):
                res[key] = serve(args.bundle, run_tool, lsa)
        if "nographs" in only:
            res["nographs"] = serve(args.bundle, run_tool, concurrency=[1, 64], prefill=False,
                                    env=dict(os.environ, LOCKSTEP_CUDA_GRAPHS="0"))
        if "hf" in only:
            res["hf"] = hf(onnx_path)
        if "hfc" in only:
            res["hfc"] = hf_compiled_child(onnx_path, args.hfc_timeout)
    if args.json:
        json.dump(dict(env=env, results=res), open(args.json, "w"), indent=1)
    report(args.out, env, res)


if __name__ == "__main__":
    main()
