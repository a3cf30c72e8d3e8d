#!/usr/bin/env python3
"""Runs the speed benchmarks that README.md and docs/serving.md quote, each
against its reference measured in the same run, and writes one log of JSON
lines (one a measurement, the first describing the machine) to
docs/bench-runs/<date>/run<N>.log. bench/summary.py turns the logs into the
sentences and table rows that the docs quote; test/Docs/bench-numbers.test
checks that they do.

  bench/run_all.py [--only exec,serve,compile,import] [--quick] [--out DIR]

Measured (build/ must be built; onnxruntime from .venv):
  exec     bench/exec_vs_ort.py: lockstep-run exec against onnxruntime's run
           (llama_tiny prefill; llama_dynamo18 one decode token over a past),
           with lockstep.attention and with --attention=decomposed;
  serve    lockstep-run bench on llama_dynamo18 (ragged step and --step=graph,
           1 and 2 threads): each request alone against all of them batched,
           logits compared bit for bit; plus a decode-bound case;
  compile  bench/compile_large.py: a 1.25e8-parameter decoder compiled, weights
           embedded and referenced (wall time, peak memory);
  import   bench/import_large.py: import of a 1e8-parameter graph against
           onnx.load of the same file.
--quick runs fewer repeats (for trying the driver; the docs quote full runs).
A serving case runs 5 times (the runs are short), its medians logged.
Each measurement records the load average before it: on a shared machine,
read the spread with it."""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.join(ROOT, "build", "bin")
MODELS = os.path.join(ROOT, "models")
PY = sys.executable

# What the docs quote: (model, seq, past, compile flags) for exec.
EXEC_CASES = [
    ("llama_tiny.onnx", 64, 0, []),
    ("llama_tiny.onnx", 64, 0, ["--attention=decomposed"]),
    ("torch/llama_dynamo18.onnx", 1, 256, []),
    ("torch/llama_dynamo18.onnx", 1, 256, ["--attention=decomposed"]),
]
EXEC_THREADS = 2
EXEC_REPEAT = 50  # timed runs a case, the median kept (a decode step is under 1 ms)
# Serving: (requests, prompt_len, max_new, threads, forms).
SERVE_MODEL = "torch/llama_dynamo18.onnx"
SERVE_CASES = [
    (32, 64, 32, 1, ("ragged", "graph")),
    (32, 64, 32, 2, ("ragged", "graph")),
    (32, 4, 64, 1, ("ragged", "graph")),
]
SERVE_REPEAT = 5  # bench runs a case, the median of each figure kept


def loadavg():
    return [float(x) for x in open("/proc/loadavg").read().split()[:3]]


def machine():
    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    git = lambda *a: subprocess.run(["git", "-C", ROOT] + list(a), capture_output=True,
                                    text=True).stdout.strip()
    # Uncommitted changes to anything but the docs make the run "dirty".
    dirty = [l for l in git("status", "--porcelain").splitlines()
             if not (l[3:].startswith("docs/") or l[3:].endswith(".md"))]
    import onnxruntime
    return {"bench": "machine", "date": datetime.date.today().isoformat(),
            "time": datetime.datetime.now().isoformat(timespec="seconds"),
            "commit": git("rev-parse", "HEAD"), "dirty": bool(dirty),
            "cpu": cpu, "cores": len(os.sched_getaffinity(0)),
            "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "os": platform.platform(), "onnxruntime": onnxruntime.__version__,
            "loadavg": loadavg()}


def run(cmd, ok=(0,)):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in ok:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r


def need(pattern, text, what):
    m = re.search(pattern, text, re.M)
    if not m:
        sys.exit(f"run_all: cannot read {what} from:\n{text}")
    return m


def bench_exec(quick):
    for model, seq, past, flags in EXEC_CASES:
        repeat = 3 if quick else EXEC_REPEAT
        load = loadavg()
        cmd = [PY, os.path.join(HERE, "exec_vs_ort.py"), os.path.join(MODELS, model),
               "--seq", str(seq), "--past", str(past), "--threads", str(EXEC_THREADS),
               "--repeat", str(repeat)] + [f"--compile-flag={f}" for f in flags]
        out = run(cmd).stdout
        ort_ms = float(need(r"^onnxruntime run: median\s+([0-9.]+) ms", out, "ort").group(1))
        ls_ms = float(need(r"^lockstep exec:\s+median\s+([0-9.]+) ms", out, "lockstep").group(1))
        yield {"bench": "exec", "model": model, "batch": 1, "seq": seq, "past": past,
               "threads": EXEC_THREADS, "repeat": repeat, "flags": flags,
               "lockstep_ms": ls_ms, "ort_ms": ort_ms, "ratio": ls_ms / ort_ms, "loadavg": load}


def bench_serve(quick):
    with tempfile.TemporaryDirectory() as d:
        yield from serve_in(d, quick)


def serve_in(d, quick):
    src = os.path.join(MODELS, SERVE_MODEL)
    lsa = {}
    for form in ("ragged", "graph"):
        lsa[form] = os.path.join(d, form + ".lsa")
        run([os.path.join(BIN, "lockstep-opt"), src, "-o", lsa[form], f"--step={form}"])
    row = r"^{}\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)$"
    reps = 1 if quick else SERVE_REPEAT
    for requests, prompt, new, threads, forms in SERVE_CASES:
        for form in forms:
            load = loadavg()
            runs = []
            for _ in range(reps):
                r = run([os.path.join(BIN, "lockstep-run"), "bench", lsa[form],
                         "--requests", str(requests), "--prompt-len", str(prompt),
                         "--max-new-tokens", str(new), "--threads", str(threads)], ok=(0, 1))
                out = r.stdout
                printed = need(r"^step\s+(.+)$", out, "step").group(1)
                if printed.startswith("ragged") != (form == "ragged"):
                    sys.exit(f"run_all: compiled as {form}, bench served it as '{printed}'")
                one = {"identical": "identical bit for bit" in out and r.returncode == 0}
                for mode in ("alone", "batched"):
                    steps, wall, gen, fed, ms = need(row.format(mode), out, mode).groups()
                    one[mode] = {"steps": int(steps), "wall_s": float(wall),
                                 "generated_per_s": float(gen), "fed_per_s": float(fed),
                                 "ms_per_step": float(ms)}
                runs.append(one)
            med = lambda xs: sorted(xs)[len(xs) // 2]
            rec = {"bench": "serve", "model": SERVE_MODEL, "step": form, "step_printed": printed,
                   "requests": requests, "prompt_len": prompt, "max_new_tokens": new,
                   "threads": threads, "repeat": reps,
                   "identical": all(o["identical"] for o in runs)}
            for mode in ("alone", "batched"):
                rec[mode] = {k: med([o[mode][k] for o in runs]) for k in runs[0][mode]}
            rec["batched_over_alone"] = med([o["batched"]["generated_per_s"] /
                                             o["alone"]["generated_per_s"] for o in runs])
            rec["runs"] = runs
            rec["loadavg"] = load
            yield rec


def bench_compile(quick):
    load = loadavg()
    with tempfile.TemporaryDirectory() as d:  # the models and artifacts: about 2 GB
        out = run([PY, os.path.join(HERE, "compile_large.py"), "--keep", d]).stdout
    m = need(r"^model: ([\d,]+) parameters, (\d+) MiB, (\d+) nodes", out, "model")
    c = need(r"^config: (\d+) layers, hidden (\d+), vocab (\d+)", out, "config")
    for label in ("weights embedded", "weights referenced"):
        wall, peak, above = need(r"\(" + label + r"\)\s+([0-9.]+)\s+(\d+)\s+(-?\d+)$",
                                 out, label).groups()
        yield {"bench": "compile", "case": label, "params": int(m.group(1).replace(",", "")),
               "weights_mib": int(m.group(2)), "nodes": int(m.group(3)),
               "layers": int(c.group(1)), "hidden": int(c.group(2)), "vocab": int(c.group(3)),
               "wall_s": float(wall), "peak_mib": float(peak),
               "above_weights_mib": float(above), "loadavg": load}


def bench_import(quick):
    load = loadavg()
    with tempfile.TemporaryDirectory() as d:  # the models: about 800 MB
        out = run([PY, os.path.join(HERE, "import_large.py"), "--keep", d]).stdout
    m = need(r"^model: ([\d,]+) parameters, (\d+) MiB", out, "model")
    for case, label in (("external data", r"lockstep-opt --emit=summary \(external data\)"),
                        ("inline", r"lockstep-opt --emit=summary \(inline\)"),
                        ("onnx.load", r"reference: onnx.load \(inline\)")):
        wall, peak = need("^" + label + r"\s+([0-9.]+)\s+(\d+)$", out, case).groups()
        yield {"bench": "import", "case": case, "params": int(m.group(1).replace(",", "")),
               "size_mib": int(m.group(2)), "wall_s": float(wall), "peak_mib": float(peak),
               "loadavg": load}


BENCHES = {"exec": bench_exec, "serve": bench_serve, "compile": bench_compile,
           "import": bench_import}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(BENCHES), help="comma-separated: " + ",".join(BENCHES))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", help="the log (default docs/bench-runs/DATE/runN.log)")
    a = ap.parse_args()
    only = a.only.split(",")
    for b in only:
        if b not in BENCHES:
            sys.exit(f"run_all: unknown benchmark '{b}'")
    m = machine()
    m["quick"] = a.quick
    m["benches"] = only
    out = a.out
    if not out:
        d = os.path.join(ROOT, "docs", "bench-runs", m["date"])
        os.makedirs(d, exist_ok=True)
        n = 1
        while os.path.exists(os.path.join(d, f"run{n}.log")):
            n += 1
        out = os.path.join(d, f"run{n}.log")
    with open(out, "w") as f:
        f.write(json.dumps(m) + "\n")
        f.flush()
        for b in only:
            for rec in BENCHES[b](a.quick):
                line = json.dumps(rec)
                f.write(line + "\n")
                f.flush()
                print(line, flush=True)
        f.write(json.dumps({"bench": "end", "loadavg": loadavg(),
                            "time": datetime.datetime.now().isoformat(timespec="seconds")}) + "\n")
    print(f"run_all: wrote {out}")


if __name__ == "__main__":
    main()
