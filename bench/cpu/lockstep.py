"""Lockstep's side: the prompts `lockstep-run bench` serves (drawn again
here, for onnxruntime), its prefill and decode measurements, greedy
tokens from `lockstep-run generate`, and `lockstep-run exec --repeat`'s
median run time."""
import json
import os
import re
import sys

import numpy as np

from .env import RUN, sh

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


def ls_bench(lsa, requests, prompt, new, threads, budget):
    """One `lockstep-run bench --only batched`: its steps and wall
    seconds. The artifact must be served as the ragged step."""
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
    """Prefill of n prompts of `length`, one a step: the wall time of
    n + 1 prompts less that of 1."""
    one = ls_bench(lsa, 1, length, 1, threads, length)
    more = ls_bench(lsa, n + 1, length, 1, threads, length)
    secs = more["wall_s"] - one["wall_s"]
    # None: below the timer's resolution (bench prints milliseconds).
    return dict(seconds=secs, tok_s=n * length / secs if secs > 0 else None,
                steps=more["steps"], first_s=one["wall_s"], wall_s=more["wall_s"])


def ls_decode(lsa, c, prompt, steps, threads):
    """Decode of c requests (their prefill one step): the wall time with
    steps + 1 new tokens less that with 1."""
    a = ls_bench(lsa, c, prompt, 1, threads, c * prompt)
    b = ls_bench(lsa, c, prompt, steps + 1, threads, c * prompt)
    secs = b["wall_s"] - a["wall_s"]
    return dict(seconds=secs, tok_s=c * steps / secs if secs > 0 else None,
                ms_per_step=1e3 * secs / steps if secs > 0 else None, steps=b["steps"] - a["steps"],
                prefill_wall_s=a["wall_s"], wall_s=b["wall_s"])


def ls_generate(lsa, prompts, new, threads, work):
    """The greedy tokens `lockstep-run generate` gives the prompts
    (written as JSON lines in `work`), [prompts, new]."""
    path = os.path.join(work, "prompts.jsonl")
    with open(path, "w") as f:
        for p in prompts:
            f.write(json.dumps([int(x) for x in p]) + "\n")
    r = sh([RUN, "generate", lsa, "--prompts", path, "--max-new-tokens", str(new),
            "--threads", str(threads)])
    return np.array([json.loads(l)["generated"] for l in r.stdout.splitlines() if l.strip()])


def ls_exec_seconds(lsa, x_path, threads, repeat, work):
    """The median run time of `lockstep-run exec --repeat` on the input
    X saved at `x_path`."""
    r = sh([RUN, "exec", lsa, "--input", f"X={x_path}", "--output-dir", os.path.join(work, "out"),
            "--threads", str(threads), "--repeat", str(repeat)])
    m = re.search(r"median ([0-9.]+) s", r.stderr)
    if not m:
        sys.exit(f"serve_vs_ort: no median from exec:\n{r.stderr}")
    return float(m.group(1))
