"""Lockstep's side: the prompts `lockstep-run bench` serves (drawn again
here, for onnxruntime), its prefill and decode measurements (the phase
lines of one bench process, each step timed inside it), greedy tokens from
`lockstep-run generate`, and `lockstep-run exec --repeat`'s median run
time."""
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


# bench's phase lines (tools/lockstep-run/Bench.cpp's header): the steps of
# the timed run that fed a prompt token (prefill) or only generated tokens
# (decode), each step timed inside the one process.
PHASE = re.compile(r"^batched (prefill|decode) +(\d+) steps  ([0-9.]+) s  (\d+) (fed|generated) tokens  ",
                   re.M)


def ls_bench(lsa, requests, prompt, new, threads, budget, warmup=1):
    """One `lockstep-run bench --only batched --warmup 1` process (the
    requests served once untimed, then timed): its steps and wall seconds,
    and its phases' steps, seconds and tokens (fed for prefill, generated
    for decode). The artifact must be served as the ragged step."""
    r = sh([RUN, "bench", lsa, "--only", "batched", "--requests", str(requests), "--prompt-len",
            str(prompt), "--max-new-tokens", str(new), "--threads", str(threads),
            "--token-budget", str(budget), "--warmup", str(warmup)])
    m = re.search(r"^batched\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", r.stdout, re.M)
    if not m:
        sys.exit(f"serve_vs_ort: no batched line from bench:\n{r.stdout}")
    if not re.search(r"^step\s+ragged", r.stdout, re.M):
        sys.exit(f"serve_vs_ort: {lsa} is not served as a ragged step:\n{r.stdout}")
    phases = {p: dict(steps=int(s), seconds=float(x), tokens=int(t))
              for p, s, x, t, _ in PHASE.findall(r.stdout)}
    if set(phases) != {"prefill", "decode"}:
        sys.exit(f"serve_vs_ort: no prefill and decode lines from bench:\n{r.stdout}")
    return dict(steps=int(m.group(1)), wall_s=float(m.group(2)), **phases)


def ls_prefill(lsa, n, length, threads):
    """Prefill of n prompts of `length`, one a step (token budget
    `length`, one new token each): the prefill steps' time, measured in
    one process after the same prompts served once untimed."""
    b = ls_bench(lsa, n, length, 1, threads, length)
    pre = b["prefill"]
    if pre["steps"] != n or pre["tokens"] != n * length or b["decode"]["steps"]:
        sys.exit(f"serve_vs_ort: bench took {pre['steps']} prefill steps of {pre['tokens']} tokens "
                 f"and {b['decode']['steps']} decode steps, not {n} of {n * length} and none")
    secs = pre["seconds"]
    return dict(seconds=secs, tok_s=pre["tokens"] / secs if secs > 0 else None, steps=pre["steps"],
                wall_s=b["wall_s"])


def ls_decode(lsa, c, prompt, steps, threads):
    """Decode of c requests: their prefill one step (token budget
    c * prompt), then `steps` decode steps (steps + 1 new tokens, the first
    sampled by the prefill): the decode steps' time, measured in one
    process after the same requests served once untimed."""
    b = ls_bench(lsa, c, prompt, steps + 1, threads, c * prompt)
    dec = b["decode"]
    if b["prefill"]["steps"] != 1 or dec["steps"] != steps or dec["tokens"] != c * steps:
        sys.exit(f"serve_vs_ort: bench took {b['prefill']['steps']} prefill steps and "
                 f"{dec['steps']} decode steps of {dec['tokens']} tokens, not 1 and {steps} of "
                 f"{c * steps}")
    secs = dec["seconds"]
    return dict(seconds=secs, tok_s=dec["tokens"] / secs if secs > 0 else None,
                ms_per_step=1e3 * secs / steps if secs > 0 else None, steps=dec["steps"],
                prefill_s=b["prefill"]["seconds"], wall_s=b["wall_s"])


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
