"""lockstep-run generate against onnxruntime's greedy loop.

For every KV-cache decoder under MODELS (the fixtures name their inputs
input_ids, position_ids, past.<i>.key/value and outputs logits,
present.<i>.key/value), compiles it, generates greedily for a few prompts of
different lengths in one run (the requests share steps), and checks each
request against onnxruntime running that prompt alone: a prefill of the whole
prompt, then one token per step with the present fed back as the past. The
whole-sequence decoders of models/nocache (input_ids, maybe attention_mask,
and logits only), to which Lockstep adds a KV cache, are checked against
onnxruntime running the whole sequence at every step.

- the generated ids must be identical;
- the logits that produced each token must agree within 1e-4 relative
  (max abs error / max abs value over the request's rows): onnxruntime and
  Lockstep order their sums differently and Lockstep computes exp, tanh and
  erf its own way, which moves fp32 results by a few ulps, far below 1e-4.

Usage: check_generate.py WORK_DIR DIR... [--max-new-tokens N]

Checks the .onnx files directly in each DIR (not in its subfolders), so that
the suite can check the folders of models/ in separate tests that run side
by side. A model's prompts are drawn from a seed made from its name, the
same whichever tests it is checked in.
"""
import json
import os
import subprocess
import sys
import zlib

import numpy as np
import onnxruntime as ort

TOL = 1e-4


def ort_greedy(path, prompt, new_tokens):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    ins = {i.name: i for i in sess.get_inputs()}
    outs = [o.name for o in sess.get_outputs()]
    past = {}
    for name, i in ins.items():
        if name.startswith("past."):
            shape = [1 if isinstance(d, str) and d == i.shape[0] else d for d in i.shape]
            shape = [1] + [0 if isinstance(d, str) else d for d in i.shape[1:]]
            past[name] = np.zeros(shape, np.float32)
    ids = list(prompt)
    fed = 0
    tokens, rows = [], []
    for _ in range(new_tokens):
        if not past:  # a whole-sequence decoder: the whole sequence each step
            fed = 0
        new = np.array([ids[fed:]], np.int64)
        feed = {"input_ids": new}
        if "attention_mask" in ins:
            feed["attention_mask"] = np.ones_like(new)
        if "position_ids" in ins:
            feed["position_ids"] = np.arange(fed, len(ids), dtype=np.int64)[None]
        feed.update(past)
        res = dict(zip(outs, sess.run(None, feed)))
        row = res["logits"][0, -1]
        tok = int(np.argmax(row))
        tokens.append(tok)
        rows.append(row)
        for name in past:
            past[name] = res["present." + name[len("past."):]]
        fed = len(ids)
        ids.append(tok)
    return tokens, np.stack(rows)


def main():
    args = [a for a in sys.argv[1:]]
    n_new = 6
    if "--max-new-tokens" in args:
        i = args.index("--max-new-tokens")
        n_new = int(args[i + 1])
        del args[i:i + 2]
    work, dirs = args[0], args[1:]
    os.makedirs(work, exist_ok=True)
    paths = []
    for d in dirs:
        paths += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".onnx")]
    failures = 0
    for path in paths:
        name = os.path.basename(os.path.dirname(os.path.abspath(path))) + "_" + os.path.basename(path)[:-5]
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        lsa = os.path.join(work, name + ".lsa")
        r = subprocess.run(["lockstep-opt", path, "-o", lsa], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {name}: compile: {r.stderr.strip()}")
            failures += 1
            continue
        vocab = 256
        prompts = [rng.integers(0, vocab, n).tolist() for n in (1, 7, 23, 70)]
        pfile = os.path.join(work, name + ".jsonl")
        with open(pfile, "w") as f:
            for p in prompts:
                f.write(json.dumps({"ids": p, "max_new_tokens": n_new}) + "\n")
        logdir = os.path.join(work, name + ".logits")
        r = subprocess.run(["lockstep-run", "generate", lsa, "--prompts", pfile,
                            "--logits-out", logdir], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {name}: generate: {r.stderr.strip()}")
            failures += 1
            continue
        results = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        worst = 0.0
        ok = True
        for i, p in enumerate(prompts):
            want_ids, want_rows = ort_greedy(path, p, n_new)
            got = results[i]
            got_rows = np.load(os.path.join(logdir, f"req{i}.npy"))
            if got["status"] != "ok" or got["generated"] != want_ids:
                print(f"FAIL {name} req{i}: ids {got.get('generated')} != onnxruntime {want_ids}")
                ok = False
                continue
            err = np.max(np.abs(got_rows - want_rows)) / np.max(np.abs(want_rows))
            worst = max(worst, err)
            if not err <= TOL:
                print(f"FAIL {name} req{i}: logits relative error {err:.2e} > {TOL}")
                ok = False
        if ok:
            print(f"ok   {name}: {len(prompts)} requests, greedy ids identical, "
                  f"logits max relative error {worst:.2e}")
        failures += not ok
    print(f"{len(paths)} models, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
