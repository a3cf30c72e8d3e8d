#!/usr/bin/env python3
"""Generates small decoder ONNX fixtures with random weights from fixed seeds.

    .venv/bin/python models/gen_decoders.py [--out-dir models]

writes

    llama_tiny.onnx           Llama-style decoder, opset 18, weights inside the file
    llama_tiny_ext.onnx       the same graph and weights, weights as external data in
    llama_tiny_ext.onnx.data  (one file, tensors of 1024 bytes or more)
    gpt2_tiny.onnx            GPT-2-style decoder, opset 17

Both models take `input_ids` and `position_ids` (int64 [batch, seq]) and an explicit
KV cache, `past.{i}.key` / `past.{i}.value` (float32 [batch, kv_heads, past, head_dim]),
and return `logits` (float32 [batch, seq, vocab]) and `present.{i}.key` /
`present.{i}.value` ([batch, kv_heads, past + seq, head_dim]).

The graphs are spelled the way exporters (torch.onnx, optimum) spell them: shapes
for Reshape/Expand are built at run time from Shape/Gather/Unsqueeze/Concat, the
causal mask from Range or from a Slice of a mask buffer, RMSNorm and GELU are
decomposed into elementwise ops. Node and value names follow torch.onnx's
"/model/layers.0/self_attn/q_proj/MatMul" style.

Only onnx.helper and numpy are used. The output is deterministic: running the
script twice gives byte-identical files.
"""

import argparse
import copy
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT_MIN = float(np.finfo(np.float32).min)  # the mask value torch exporters use


class GraphBuilder:
    """Accumulates nodes and initializers; names values after their node."""

    def __init__(self):
        self.nodes = []
        self.initializers = []
        self._used = set()

    def _unique(self, name):
        base, n = name, 0
        while name in self._used:
            n += 1
            name = f"{base}_{n}"
        self._used.add(name)
        return name

    def op(self, op_type, inputs, name, num_outputs=1, **attrs):
        """Adds node `name` (made unique); returns its output name(s)."""
        name = self._unique(name)
        outputs = [f"{name}_output_{k}" for k in range(num_outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=name, **attrs))
        return outputs[0] if num_outputs == 1 else outputs

    def const(self, value, name, dtype=np.int64):
        """A Constant node, as torch.onnx emits for literals."""
        arr = np.asarray(value, dtype=dtype)
        name = self._unique(name)
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(
            "Constant", [], [out], name=name,
            value=numpy_helper.from_array(arr, name="")))
        return out

    def init(self, name, arr):
        self.initializers.append(numpy_helper.from_array(arr, name=name))
        return name


# ---------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------

def dim_of(g, x, axis, prefix):
    """Scalar int64: the size of `x` along `axis` (Shape + Gather)."""
    shape = g.op("Shape", [x], f"{prefix}/Shape")
    return g.op("Gather", [shape, g.const(axis, f"{prefix}/Constant")], f"{prefix}/Gather", axis=0)


def unsq0(g, scalar, prefix, opset):
    """Scalar -> [1], as exporters do before a Concat of shape pieces."""
    if opset >= 13:
        return g.op("Unsqueeze", [scalar, g.const([0], f"{prefix}/Constant")], f"{prefix}/Unsqueeze")
    return g.op("Unsqueeze", [scalar], f"{prefix}/Unsqueeze", axes=[0])


def unsqueeze(g, x, axes, prefix):
    return g.op("Unsqueeze", [x, g.const(axes, f"{prefix}/Constant")], f"{prefix}/Unsqueeze")


def shape_vec(g, pieces, prefix):
    """Concat of [1]-shaped int64 pieces (value names) and literal ints."""
    parts = [p if isinstance(p, str) else g.const([p], f"{prefix}/Constant") for p in pieces]
    return g.op("Concat", parts, f"{prefix}/Concat", axis=0)


def kv_io(n_layers, kv_heads, head_dim):
    inputs, outputs = [], []
    for i in range(n_layers):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(
                f"past.{i}.{kind}", TensorProto.FLOAT, ["batch", kv_heads, "past", head_dim]))
            outputs.append(helper.make_tensor_value_info(
                f"present.{i}.{kind}", TensorProto.FLOAT,
                ["batch", kv_heads, "past + seq", head_dim]))
    return inputs, outputs


def token_io():
    return [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"]),
    ]


def finish(g, name, inputs, outputs, opset, doc):
    graph = helper.make_graph(g.nodes, name, inputs, outputs, initializer=g.initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)],
        producer_name="lockstep/models/gen_decoders.py", producer_version="1",
        doc_string=doc)
    model.ir_version = 8  # onnxruntime 1.20 reads up to 10; 8 is what opset 17/18 exports carry
    return model


def normal(rng, shape, scale):
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)).astype(np.float32)


# ---------------------------------------------------------------------------------
# Llama
# ---------------------------------------------------------------------------------

LLAMA = dict(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, inter=128, vocab=256,
             max_pos=128, eps=1e-5, rope_theta=10000.0, seed=20240601)


def rms_norm(g, x, weight, eps, prefix, use_div):
    """HF LlamaRMSNorm as exported: x * rsqrt(mean(x^2) + eps) * w."""
    sq = g.op("Pow", [x, g.const(2.0, f"{prefix}/Constant", np.float32)], f"{prefix}/Pow")
    mean = g.op("ReduceMean", [sq, g.const([-1], f"{prefix}/Constant")], f"{prefix}/ReduceMean",
                keepdims=1)
    var = g.op("Add", [mean, g.const(eps, f"{prefix}/Constant", np.float32)], f"{prefix}/Add")
    std = g.op("Sqrt", [var], f"{prefix}/Sqrt")
    if use_div:
        inv = g.op("Div", [g.const(1.0, f"{prefix}/Constant", np.float32), std], f"{prefix}/Div")
    else:
        inv = g.op("Reciprocal", [std], f"{prefix}/Reciprocal")
    normed = g.op("Mul", [x, inv], f"{prefix}/Mul")
    return g.op("Mul", [weight, normed], f"{prefix}/Mul")


def rotate_half(g, x, half, prefix):
    x1 = g.op("Slice", [x, g.const([0], f"{prefix}/Constant"), g.const([half], f"{prefix}/Constant"),
                        g.const([3], f"{prefix}/Constant"), g.const([1], f"{prefix}/Constant")],
              f"{prefix}/Slice")
    x2 = g.op("Slice", [x, g.const([half], f"{prefix}/Constant"),
                        g.const([np.iinfo(np.int64).max], f"{prefix}/Constant"),
                        g.const([3], f"{prefix}/Constant"), g.const([1], f"{prefix}/Constant")],
              f"{prefix}/Slice")
    neg = g.op("Neg", [x2], f"{prefix}/Neg")
    return g.op("Concat", [neg, x1], f"{prefix}/Concat", axis=-1)


def apply_rope(g, x, cos, sin, half, prefix):
    a = g.op("Mul", [x, cos], f"{prefix}/Mul")
    b = g.op("Mul", [rotate_half(g, x, half, prefix), sin], f"{prefix}/Mul")
    return g.op("Add", [a, b], f"{prefix}/Add")


def rope_tables(c):
    inv_freq = 1.0 / (c["rope_theta"] ** (np.arange(0, c["head_dim"], 2, dtype=np.float64)
                                          / c["head_dim"]))
    freqs = np.outer(np.arange(c["max_pos"], dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def build_llama():
    c = LLAMA
    H, nh, nkv, hd, I, V = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"], c["inter"], c["vocab"]
    rep = nh // nkv
    rng = np.random.default_rng(c["seed"])
    g = GraphBuilder()

    embed = g.init("model.embed_tokens.weight", normal(rng, (V, H), 0.5))
    cos_t, sin_t = rope_tables(c)
    cos_w = g.init("model.rotary_emb.cos_cached", cos_t)
    sin_w = g.init("model.rotary_emb.sin_cached", sin_t)

    h = g.op("Gather", [embed, "input_ids"], "/model/embed_tokens/Gather", axis=0)

    # Sizes, as HF computes them: batch and seq from input_ids, past from the cache.
    ids_shape = g.op("Shape", ["input_ids"], "/model/Shape")
    seq = g.op("Gather", [ids_shape, g.const(1, "/model/Constant")], "/model/Gather", axis=0)
    past_len = dim_of(g, "past.0.key", 2, "/model/past")
    total = g.op("Add", [past_len, seq], "/model/Add")

    # Causal mask [1, 1, seq, past + seq]: key position <= query position.
    k_pos = g.op("Range", [g.const(0, "/model/mask/Constant"), total,
                           g.const(1, "/model/mask/Constant")], "/model/mask/Range")
    q_pos = g.op("Range", [past_len, total, g.const(1, "/model/mask/Constant")],
                 "/model/mask/Range")
    allowed = g.op("LessOrEqual", [unsqueeze(g, k_pos, [0], "/model/mask"),
                                   unsqueeze(g, q_pos, [1], "/model/mask")],
                   "/model/mask/LessOrEqual")
    mask = unsqueeze(g, allowed, [0, 1], "/model/mask")

    # RoPE tables gathered by position: [batch, 1, seq, head_dim].
    cos = unsqueeze(g, g.op("Gather", [cos_w, "position_ids"], "/model/rotary_emb/Gather", axis=0),
                    [1], "/model/rotary_emb")
    sin = unsqueeze(g, g.op("Gather", [sin_w, "position_ids"], "/model/rotary_emb/Gather", axis=0),
                    [1], "/model/rotary_emb")

    proj_scale = 1.0 / np.sqrt(H)
    for i in range(c["layers"]):
        p = f"/model/layers.{i}"
        w = f"model.layers.{i}"
        ln1 = g.init(f"{w}.input_layernorm.weight", 1.0 + normal(rng, (H,), 0.1))
        wq = g.init(f"{w}.self_attn.q_proj.weight", normal(rng, (H, nh * hd), proj_scale))
        wk = g.init(f"{w}.self_attn.k_proj.weight", normal(rng, (H, nkv * hd), proj_scale))
        wv = g.init(f"{w}.self_attn.v_proj.weight", normal(rng, (H, nkv * hd), proj_scale))
        wo = g.init(f"{w}.self_attn.o_proj.weight", normal(rng, (nh * hd, H), proj_scale))
        ln2 = g.init(f"{w}.post_attention_layernorm.weight", 1.0 + normal(rng, (H,), 0.1))
        wg = g.init(f"{w}.mlp.gate_proj.weight", normal(rng, (H, I), proj_scale))
        wu = g.init(f"{w}.mlp.up_proj.weight", normal(rng, (H, I), proj_scale))
        wd = g.init(f"{w}.mlp.down_proj.weight", normal(rng, (I, H), 1.0 / np.sqrt(I)))

        x = rms_norm(g, h, ln1, c["eps"], f"{p}/input_layernorm", use_div=False)
        a = f"{p}/self_attn"
        q = g.op("MatMul", [x, wq], f"{a}/q_proj/MatMul")
        k = g.op("MatMul", [x, wk], f"{a}/k_proj/MatMul")
        v = g.op("MatMul", [x, wv], f"{a}/v_proj/MatMul")

        # view(bsz, q_len, -1 | kv_heads, head_dim).transpose(1, 2)
        b1 = unsq0(g, dim_of(g, x, 0, a), a, 18)
        s1 = unsq0(g, dim_of(g, x, 1, a), a, 18)
        q = g.op("Reshape", [q, shape_vec(g, [b1, s1, -1, hd], a)], f"{a}/Reshape")
        k = g.op("Reshape", [k, shape_vec(g, [b1, s1, nkv, hd], a)], f"{a}/Reshape")
        v = g.op("Reshape", [v, shape_vec(g, [b1, s1, nkv, hd], a)], f"{a}/Reshape")
        q = g.op("Transpose", [q], f"{a}/Transpose", perm=[0, 2, 1, 3])
        k = g.op("Transpose", [k], f"{a}/Transpose", perm=[0, 2, 1, 3])
        v = g.op("Transpose", [v], f"{a}/Transpose", perm=[0, 2, 1, 3])

        q = apply_rope(g, q, cos, sin, hd // 2, f"{a}/rope_q")
        k = apply_rope(g, k, cos, sin, hd // 2, f"{a}/rope_k")

        k = g.op("Concat", [f"past.{i}.key", k], f"{a}/Concat", axis=2)
        v = g.op("Concat", [f"past.{i}.value", v], f"{a}/Concat", axis=2)
        g.nodes.append(helper.make_node("Identity", [k], [f"present.{i}.key"],
                                        name=g._unique(f"{a}/present_key/Identity")))
        g.nodes.append(helper.make_node("Identity", [v], [f"present.{i}.value"],
                                        name=g._unique(f"{a}/present_value/Identity")))

        # repeat_kv: [b, kv, T, d] -> [b, kv, 1, T, d] -> expand [b, kv, rep, T, d]
        #            -> reshape [b, kv * rep, T, d]
        t1 = unsq0(g, dim_of(g, k, 2, f"{a}/repeat_kv"), f"{a}/repeat_kv", 18)
        kb1 = unsq0(g, dim_of(g, k, 0, f"{a}/repeat_kv"), f"{a}/repeat_kv", 18)
        expand_shape = shape_vec(g, [kb1, nkv, rep, t1, hd], f"{a}/repeat_kv")
        heads_shape = shape_vec(g, [kb1, nh, t1, hd], f"{a}/repeat_kv")
        reps = []
        for kv in (k, v):
            e = g.op("Expand", [unsqueeze(g, kv, [2], f"{a}/repeat_kv"), expand_shape],
                     f"{a}/repeat_kv/Expand")
            reps.append(g.op("Reshape", [e, heads_shape], f"{a}/repeat_kv/Reshape"))
        k_rep, v_rep = reps

        kt = g.op("Transpose", [k_rep], f"{a}/Transpose", perm=[0, 1, 3, 2])
        scores = g.op("MatMul", [q, kt], f"{a}/MatMul")
        scores = g.op("Mul", [scores, g.const(1.0 / np.sqrt(hd), f"{a}/Constant", np.float32)],
                      f"{a}/Mul")
        scores = g.op("Where", [mask, scores, g.const(FLOAT_MIN, f"{a}/Constant", np.float32)],
                      f"{a}/Where")
        probs = g.op("Softmax", [scores], f"{a}/Softmax", axis=-1)
        o = g.op("MatMul", [probs, v_rep], f"{a}/MatMul")
        o = g.op("Transpose", [o], f"{a}/Transpose", perm=[0, 2, 1, 3])
        o = g.op("Reshape", [o, shape_vec(g, [b1, s1, nh * hd], a)], f"{a}/Reshape")
        o = g.op("MatMul", [o, wo], f"{a}/o_proj/MatMul")
        h = g.op("Add", [h, o], f"{p}/Add")

        x = rms_norm(g, h, ln2, c["eps"], f"{p}/post_attention_layernorm", use_div=False)
        m = f"{p}/mlp"
        gate = g.op("MatMul", [x, wg], f"{m}/gate_proj/MatMul")
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate], f"{m}/act_fn/Sigmoid")], f"{m}/act_fn/Mul")
        up = g.op("MatMul", [x, wu], f"{m}/up_proj/MatMul")
        down = g.op("MatMul", [g.op("Mul", [act, up], f"{m}/Mul"), wd], f"{m}/down_proj/MatMul")
        h = g.op("Add", [h, down], f"{p}/Add")

    norm_w = g.init("model.norm.weight", 1.0 + normal(rng, (H,), 0.1))
    lm_w = g.init("lm_head.weight", normal(rng, (H, V), 0.1))
    x = rms_norm(g, h, norm_w, c["eps"], "/model/norm", use_div=True)
    logits = g.op("MatMul", [x, lm_w], "/lm_head/MatMul")
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/lm_head/Identity"))

    kv_in, kv_out = kv_io(c["layers"], nkv, hd)
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", V])]
    return finish(g, "llama_tiny", token_io() + kv_in, outputs + kv_out, 18,
                  "Tiny Llama-style decoder (random weights) for Lockstep tests.")


# ---------------------------------------------------------------------------------
# GPT-2
# ---------------------------------------------------------------------------------

GPT2 = dict(layers=2, hidden=64, heads=4, head_dim=16, inter=256, vocab=256, max_pos=128,
            eps=1e-5, seed=20240602)


def gelu_tanh(g, x, prefix):
    """HF NewGELUActivation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    cube = g.op("Pow", [x, g.const(3.0, f"{prefix}/Constant", np.float32)], f"{prefix}/Pow")
    t = g.op("Mul", [g.const(0.044715, f"{prefix}/Constant", np.float32), cube], f"{prefix}/Mul")
    t = g.op("Add", [x, t], f"{prefix}/Add")
    t = g.op("Mul", [g.const(np.sqrt(2.0 / np.pi), f"{prefix}/Constant", np.float32), t],
             f"{prefix}/Mul")
    t = g.op("Tanh", [t], f"{prefix}/Tanh")
    t = g.op("Add", [g.const(1.0, f"{prefix}/Constant", np.float32), t], f"{prefix}/Add")
    hx = g.op("Mul", [g.const(0.5, f"{prefix}/Constant", np.float32), x], f"{prefix}/Mul")
    return g.op("Mul", [hx, t], f"{prefix}/Mul")


def build_gpt2():
    c = GPT2
    H, nh, hd, I, V, P = c["hidden"], c["heads"], c["head_dim"], c["inter"], c["vocab"], c["max_pos"]
    rng = np.random.default_rng(c["seed"])
    g = GraphBuilder()

    wte = g.init("transformer.wte.weight", normal(rng, (V, H), 0.2))
    wpe = g.init("transformer.wpe.weight", normal(rng, (P, H), 0.1))
    tok = g.op("Gather", [wte, "input_ids"], "/transformer/wte/Gather", axis=0)
    pos = g.op("Gather", [wpe, "position_ids"], "/transformer/wpe/Gather", axis=0)
    h = g.op("Add", [tok, pos], "/transformer/Add")

    # GPT2Attention's registered buffer: a lower-triangular bool mask [1, 1, P, P].
    bias = g.init("transformer.h.attn.bias",
                  np.tril(np.ones((P, P), dtype=bool)).reshape(1, 1, P, P))

    for i in range(c["layers"]):
        p = f"/transformer/h.{i}"
        w = f"transformer.h.{i}"
        ln1_s = g.init(f"{w}.ln_1.weight", 1.0 + normal(rng, (H,), 0.1))
        ln1_b = g.init(f"{w}.ln_1.bias", normal(rng, (H,), 0.02))
        w_qkv = g.init(f"{w}.attn.c_attn.weight", normal(rng, (H, 3 * H), 1.0 / np.sqrt(H)))
        b_qkv = g.init(f"{w}.attn.c_attn.bias", normal(rng, (3 * H,), 0.02))
        w_o = g.init(f"{w}.attn.c_proj.weight", normal(rng, (H, H), 1.0 / np.sqrt(H)))
        b_o = g.init(f"{w}.attn.c_proj.bias", normal(rng, (H,), 0.02))
        ln2_s = g.init(f"{w}.ln_2.weight", 1.0 + normal(rng, (H,), 0.1))
        ln2_b = g.init(f"{w}.ln_2.bias", normal(rng, (H,), 0.02))
        w_fc = g.init(f"{w}.mlp.c_fc.weight", normal(rng, (H, I), 1.0 / np.sqrt(H)))
        b_fc = g.init(f"{w}.mlp.c_fc.bias", normal(rng, (I,), 0.02))
        w_pr = g.init(f"{w}.mlp.c_proj.weight", normal(rng, (I, H), 1.0 / np.sqrt(I)))
        b_pr = g.init(f"{w}.mlp.c_proj.bias", normal(rng, (H,), 0.02))

        x = g.op("LayerNormalization", [h, ln1_s, ln1_b], f"{p}/ln_1/LayerNormalization",
                 axis=-1, epsilon=c["eps"])
        a = f"{p}/attn"
        qkv = g.op("MatMul", [x, w_qkv], f"{a}/c_attn/MatMul")
        qkv = g.op("Add", [b_qkv, qkv], f"{a}/c_attn/Add")
        q, k, v = g.op("Split", [qkv, g.const([H, H, H], f"{a}/Constant")], f"{a}/Split",
                       num_outputs=3, axis=2)

        # _split_heads: view(b, s, heads, head_dim).permute(0, 2, 1, 3)
        b1 = unsq0(g, dim_of(g, x, 0, a), a, 17)
        s1 = unsq0(g, dim_of(g, x, 1, a), a, 17)
        heads = []
        for t in (q, k, v):
            t = g.op("Reshape", [t, shape_vec(g, [b1, s1, nh, hd], a)], f"{a}/Reshape")
            heads.append(g.op("Transpose", [t], f"{a}/Transpose", perm=[0, 2, 1, 3]))
        q, k, v = heads

        k = g.op("Concat", [f"past.{i}.key", k], f"{a}/Concat", axis=-2)
        v = g.op("Concat", [f"past.{i}.value", v], f"{a}/Concat", axis=-2)
        g.nodes.append(helper.make_node("Identity", [k], [f"present.{i}.key"],
                                        name=g._unique(f"{a}/present_key/Identity")))
        g.nodes.append(helper.make_node("Identity", [v], [f"present.{i}.value"],
                                        name=g._unique(f"{a}/present_value/Identity")))

        kt = g.op("Transpose", [k], f"{a}/Transpose", perm=[0, 1, 3, 2])
        scores = g.op("MatMul", [q, kt], f"{a}/MatMul")
        scores = g.op("Div", [scores, g.const(np.sqrt(hd), f"{a}/Constant", np.float32)],
                      f"{a}/Div")

        # causal_mask = bias[:, :, key_len - query_len : key_len, :key_len]
        q_len = dim_of(g, q, 2, f"{a}/mask")
        k_len = dim_of(g, k, 2, f"{a}/mask")
        start = g.op("Sub", [k_len, q_len], f"{a}/mask/Sub")
        k_len1 = unsq0(g, k_len, f"{a}/mask", 17)
        m = g.op("Slice", [bias, unsq0(g, start, f"{a}/mask", 17), k_len1,
                           g.const([2], f"{a}/mask/Constant"), g.const([1], f"{a}/mask/Constant")],
                 f"{a}/mask/Slice")
        m = g.op("Slice", [m, g.const([0], f"{a}/mask/Constant"), k_len1,
                           g.const([3], f"{a}/mask/Constant"), g.const([1], f"{a}/mask/Constant")],
                 f"{a}/mask/Slice")
        scores = g.op("Where", [m, scores, g.const(FLOAT_MIN, f"{a}/Constant", np.float32)],
                      f"{a}/Where")
        probs = g.op("Softmax", [scores], f"{a}/Softmax", axis=-1)
        o = g.op("MatMul", [probs, v], f"{a}/MatMul")

        # _merge_heads: permute(0, 2, 1, 3).view(b, s, hidden)
        o = g.op("Transpose", [o], f"{a}/Transpose", perm=[0, 2, 1, 3])
        o = g.op("Reshape", [o, shape_vec(g, [b1, s1, H], a)], f"{a}/Reshape")
        o = g.op("MatMul", [o, w_o], f"{a}/c_proj/MatMul")
        o = g.op("Add", [b_o, o], f"{a}/c_proj/Add")
        h = g.op("Add", [o, h], f"{p}/Add")

        x = g.op("LayerNormalization", [h, ln2_s, ln2_b], f"{p}/ln_2/LayerNormalization",
                 axis=-1, epsilon=c["eps"])
        mp = f"{p}/mlp"
        f = g.op("Add", [b_fc, g.op("MatMul", [x, w_fc], f"{mp}/c_fc/MatMul")], f"{mp}/c_fc/Add")
        f = gelu_tanh(g, f, f"{mp}/act")
        f = g.op("Add", [b_pr, g.op("MatMul", [f, w_pr], f"{mp}/c_proj/MatMul")], f"{mp}/c_proj/Add")
        h = g.op("Add", [h, f], f"{p}/Add")

    lnf_s = g.init("transformer.ln_f.weight", 1.0 + normal(rng, (H,), 0.1))
    lnf_b = g.init("transformer.ln_f.bias", normal(rng, (H,), 0.02))
    x = g.op("LayerNormalization", [h, lnf_s, lnf_b], "/transformer/ln_f/LayerNormalization",
             axis=-1, epsilon=c["eps"])
    # Tied lm_head: logits = x @ wte^T.
    wte_t = g.op("Transpose", [wte], "/lm_head/Transpose", perm=[1, 0])
    logits = g.op("MatMul", [x, wte_t], "/lm_head/MatMul")
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/lm_head/Identity"))

    kv_in, kv_out = kv_io(c["layers"], nh, hd)
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", V])]
    return finish(g, "gpt2_tiny", token_io() + kv_in, outputs + kv_out, 17,
                  "Tiny GPT-2-style decoder (random weights, tied lm_head) for Lockstep tests.")


# ---------------------------------------------------------------------------------

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=here)
    args = ap.parse_args()
    out = args.out_dir
    os.makedirs(out, exist_ok=True)

    llama = build_llama()
    onnx.save_model(llama, os.path.join(out, "llama_tiny.onnx"))

    ext = copy.deepcopy(llama)
    ext.graph.name = "llama_tiny_ext"
    data = "llama_tiny_ext.onnx.data"
    if os.path.exists(os.path.join(out, data)):
        os.remove(os.path.join(out, data))  # save_model appends to an existing data file
    onnx.save_model(ext, os.path.join(out, "llama_tiny_ext.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=data, size_threshold=1024)

    onnx.save_model(build_gpt2(), os.path.join(out, "gpt2_tiny.onnx"))

    for name in ("llama_tiny.onnx", "llama_tiny_ext.onnx", "gpt2_tiny.onnx"):
        onnx.checker.check_model(os.path.join(out, name), full_check=True)
    print(f"gen_decoders: wrote llama_tiny.onnx, llama_tiny_ext.onnx(.data), gpt2_tiny.onnx in {out}")


if __name__ == "__main__":
    main()
