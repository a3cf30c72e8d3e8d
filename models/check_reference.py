#!/usr/bin/env python3
"""Checks the fixtures written by gen_decoders.py against onnxruntime and numpy.

    .venv/bin/python models/check_reference.py [--models-dir models]

For each of llama_tiny, llama_tiny_ext and gpt2_tiny:

1. onnx.checker.check_model(full_check=True) (strict shape inference) passes;
2. onnxruntime runs it with batch 2, seq 5 and past 3 (random past KV), and with
   past 0 (an empty cache: a zero-sized dimension); every output has the expected
   shape and only finite values;
3. the logits and present KV agree with an independent float64 numpy implementation
   of the same decoder, within 1e-4 absolute (float32 vs float64 rounding over a
   2-layer, width-64 network is about 1e-6; 1e-4 leaves room and still catches any
   wrong mask, RoPE or head layout, which move values by 1e-2 or more);
4. the KV cache is consistent: prefill of 8 tokens equals prefill of 3 then 5 more
   tokens with the first call's present as past (same 1e-4 bound: the two runs
   reduce in different orders);
5. llama_tiny_ext gives bit-identical outputs to llama_tiny.

Exits 1 with a message per problem, 0 when everything passes.
"""

import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

BATCH, SEQ, PAST = 2, 5, 3
TOL = 1e-4

MODELS = {
    # name: (kind, layers, kv_heads, head_dim, vocab)
    "llama_tiny": ("llama", 2, 2, 16, 256),
    "llama_tiny_ext": ("llama", 2, 2, 16, 256),
    "gpt2_tiny": ("gpt2", 2, 4, 16, 256),
}

problems = []


def fail(msg):
    problems.append(msg)
    print("FAIL:", msg)


# ---------------------------------------------------------------------------------
# numpy references (float64)
# ---------------------------------------------------------------------------------

def softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def causal_attention(q, k, v, past):
    """q [b, h, s, d]; k, v [b, h, past + s, d]; query j sits at position past + j."""
    s, t = q.shape[2], k.shape[2]
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    allowed = np.arange(t)[None, :] <= (past + np.arange(s))[:, None]
    scores = np.where(allowed, scores, -np.inf)
    return softmax(scores) @ v


def llama_ref(W, ids, pos, pasts, layers=2, nh=4, nkv=2, hd=16, eps=1e-5):
    def rms(x, w):
        return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))

    def rot(x):
        return np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], -1)

    b, s = ids.shape
    past = pasts[0][0].shape[2]
    h = W["model.embed_tokens.weight"][ids]
    cos = W["model.rotary_emb.cos_cached"][pos][:, None]
    sin = W["model.rotary_emb.sin_cached"][pos][:, None]
    presents = []
    for i in range(layers):
        p = f"model.layers.{i}"
        x = rms(h, W[f"{p}.input_layernorm.weight"])
        q = (x @ W[f"{p}.self_attn.q_proj.weight"]).reshape(b, s, nh, hd).transpose(0, 2, 1, 3)
        k = (x @ W[f"{p}.self_attn.k_proj.weight"]).reshape(b, s, nkv, hd).transpose(0, 2, 1, 3)
        v = (x @ W[f"{p}.self_attn.v_proj.weight"]).reshape(b, s, nkv, hd).transpose(0, 2, 1, 3)
        q = q * cos + rot(q) * sin
        k = k * cos + rot(k) * sin
        k = np.concatenate([pasts[i][0], k], 2)
        v = np.concatenate([pasts[i][1], v], 2)
        presents += [k, v]
        rep = nh // nkv
        o = causal_attention(q, np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1), past)
        o = o.transpose(0, 2, 1, 3).reshape(b, s, nh * hd)
        h = h + o @ W[f"{p}.self_attn.o_proj.weight"]
        x = rms(h, W[f"{p}.post_attention_layernorm.weight"])
        g = x @ W[f"{p}.mlp.gate_proj.weight"]
        u = x @ W[f"{p}.mlp.up_proj.weight"]
        h = h + (g / (1 + np.exp(-g)) * u) @ W[f"{p}.mlp.down_proj.weight"]
    logits = rms(h, W["model.norm.weight"]) @ W["lm_head.weight"]
    return [logits] + presents


def gpt2_ref(W, ids, pos, pasts, layers=2, nh=4, hd=16, eps=1e-5):
    def ln(x, w, bias):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w + bias

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))

    b, s = ids.shape
    H = nh * hd
    past = pasts[0][0].shape[2]
    h = W["transformer.wte.weight"][ids] + W["transformer.wpe.weight"][pos]
    presents = []
    for i in range(layers):
        p = f"transformer.h.{i}"
        x = ln(h, W[f"{p}.ln_1.weight"], W[f"{p}.ln_1.bias"])
        qkv = x @ W[f"{p}.attn.c_attn.weight"] + W[f"{p}.attn.c_attn.bias"]
        q, k, v = (qkv[..., j * H:(j + 1) * H].reshape(b, s, nh, hd).transpose(0, 2, 1, 3)
                   for j in range(3))
        k = np.concatenate([pasts[i][0], k], 2)
        v = np.concatenate([pasts[i][1], v], 2)
        presents += [k, v]
        o = causal_attention(q, k, v, past).transpose(0, 2, 1, 3).reshape(b, s, H)
        h = h + o @ W[f"{p}.attn.c_proj.weight"] + W[f"{p}.attn.c_proj.bias"]
        x = ln(h, W[f"{p}.ln_2.weight"], W[f"{p}.ln_2.bias"])
        f = gelu(x @ W[f"{p}.mlp.c_fc.weight"] + W[f"{p}.mlp.c_fc.bias"])
        h = h + f @ W[f"{p}.mlp.c_proj.weight"] + W[f"{p}.mlp.c_proj.bias"]
    x = ln(h, W["transformer.ln_f.weight"], W["transformer.ln_f.bias"])
    return [x @ W["transformer.wte.weight"].T] + presents


# ---------------------------------------------------------------------------------

def make_feeds(rng, layers, kv_heads, head_dim, vocab, past, seq=SEQ, ids=None):
    if ids is None:
        ids = rng.integers(0, vocab, size=(BATCH, seq), dtype=np.int64)
    pos = np.broadcast_to(np.arange(past, past + seq, dtype=np.int64), (BATCH, seq)).copy()
    feeds = {"input_ids": ids, "position_ids": pos}
    for i in range(layers):
        for kind in ("key", "value"):
            feeds[f"past.{i}.{kind}"] = rng.standard_normal(
                (BATCH, kv_heads, past, head_dim), dtype=np.float32)
    return feeds


def check_model(path, name, kind, layers, kv_heads, head_dim, vocab, results):
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as e:  # noqa: BLE001 - report any checker failure
        fail(f"{name}: onnx.checker (full_check) failed: {e}")

    model = onnx.load(path)  # loads external data too
    W = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    ref = llama_ref if kind == "llama" else gpt2_ref
    try:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        fail(f"{name}: onnxruntime cannot load it: {e}")
        return
    out_names = [o.name for o in sess.get_outputs()]
    want_names = ["logits"] + [f"present.{i}.{k}" for i in range(layers) for k in ("key", "value")]
    if out_names != want_names:
        fail(f"{name}: outputs are {out_names}, expected {want_names}")
        return

    rng = np.random.default_rng(1234)  # the same feeds for every model of a kind
    for past in (PAST, 0):
        feeds = make_feeds(rng, layers, kv_heads, head_dim, vocab, past)
        tag = f"{name} (batch {BATCH}, seq {SEQ}, past {past})"
        try:
            outs = sess.run(None, feeds)
        except Exception as e:  # noqa: BLE001
            fail(f"{tag}: onnxruntime failed: {e}")
            continue
        results[(name, past)] = outs
        before = len(problems)
        want_shapes = [(BATCH, SEQ, vocab)] + [(BATCH, kv_heads, past + SEQ, head_dim)] * (2 * layers)
        for n, o, ws in zip(out_names, outs, want_shapes):
            if o.shape != ws:
                fail(f"{tag}: {n} has shape {o.shape}, expected {ws}")
            if o.dtype != np.float32:
                fail(f"{tag}: {n} has dtype {o.dtype}, expected float32")
            if not np.all(np.isfinite(o)):
                fail(f"{tag}: {n} has non-finite values")
        pasts = [(feeds[f"past.{i}.key"].astype(np.float64), feeds[f"past.{i}.value"].astype(np.float64))
                 for i in range(layers)]
        expect = ref(W, feeds["input_ids"], feeds["position_ids"], pasts)
        for n, o, e in zip(out_names, outs, expect):
            if o.shape == e.shape:
                err = float(np.max(np.abs(o - e))) if o.size else 0.0
                if not err <= TOL:
                    fail(f"{tag}: {n} differs from the numpy reference by {err:.3g} (> {TOL})")
        lg = outs[0]
        if float(lg.std()) < 0.1:
            fail(f"{tag}: logits look degenerate (std {lg.std():.3g})")
        if len(problems) == before:
            print(f"ok   {tag}: logits std {lg.std():.3f}, max |ort - numpy| "
                  f"{max(float(np.max(np.abs(o - e))) for o, e in zip(outs, expect)):.2e}")

    # KV cache consistency: 8 tokens at once == 3 tokens, then 5 with the cache.
    ids = rng.integers(0, vocab, size=(BATCH, 8), dtype=np.int64)
    try:
        full = sess.run(None, make_feeds(rng, layers, kv_heads, head_dim, vocab, 0, 8, ids))
        first = sess.run(None, make_feeds(rng, layers, kv_heads, head_dim, vocab, 0, 3, ids[:, :3]))
        feeds = make_feeds(rng, layers, kv_heads, head_dim, vocab, 3, 5, ids[:, 3:])
        for j, n in enumerate(out_names[1:]):
            feeds[n.replace("present", "past")] = first[1 + j]
        second = sess.run(None, feeds)
    except Exception as e:  # noqa: BLE001
        fail(f"{name}: onnxruntime failed in the KV cache consistency run: {e}")
        return
    err = float(np.max(np.abs(full[0][:, 3:] - second[0])))
    err = max(err, float(np.max(np.abs(full[0][:, :3] - first[0]))))
    for j in range(1, len(full)):
        err = max(err, float(np.max(np.abs(full[j] - second[j]))))
    if not err <= TOL:
        fail(f"{name}: prefill 8 vs prefill 3 + 5 with cache differ by {err:.3g} (> {TOL})")
    else:
        print(f"ok   {name}: prefill 8 == prefill 3 + 5 with cache (max diff {err:.2e})")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models-dir", default=here)
    args = ap.parse_args()

    results = {}
    for name, spec in MODELS.items():
        path = os.path.join(args.models_dir, name + ".onnx")
        if not os.path.exists(path):
            fail(f"{path} is missing (run models/gen_decoders.py)")
            continue
        check_model(path, name, *spec, results)

    for past in (PAST, 0):
        a, b = results.get(("llama_tiny", past)), results.get(("llama_tiny_ext", past))
        if a is not None and b is not None:
            if not all(np.array_equal(x, y) for x, y in zip(a, b)):
                fail(f"llama_tiny_ext differs from llama_tiny at past {past}")
            else:
                print(f"ok   llama_tiny_ext == llama_tiny bit for bit (past {past})")

    if problems:
        print(f"check_reference: {len(problems)} problem(s)")
        sys.exit(1)
    print("check_reference: all checks passed")


if __name__ == "__main__":
    main()
