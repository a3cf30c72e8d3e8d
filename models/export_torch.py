#!/usr/bin/env python3
"""Exports tiny transformers decoders (random weights) to ONNX with KV-cache
inputs and outputs, with both torch.onnx exporters. Needs torch and
transformers (run on the GPU machine; CI does not run it). The results are
committed under models/torch/ as fixtures.

Each graph: inputs input_ids [batch, seq], position_ids [batch, seq],
past.{i}.key / past.{i}.value [batch, kv_heads, past, head_dim]; outputs
logits [batch, seq, vocab] and present.{i}.key / present.{i}.value.

With --no-cache, whole-sequence decoders instead (dynamo only: the legacy
exporter fails on HF graphs without a cache): inputs input_ids [batch, seq]
(and attention_mask [batch, seq] for the *_mask variants); output logits.
Lockstep introduces the KV cache for these itself.

With --window, decoders whose attention is not plain causal (sliding
windows, alternating local and global layers, Gemma 2's score softcapping):
KV-cache exports with both exporters and whole-sequence exports, written as
{arch}_{dynamo18,legacy17,nocache}.onnx. The export example's past (16) is
longer than every window here, so no branch on a short context is traced.

usage: export_torch.py OUT_DIR [--extra] [--no-cache] [--window]
"""
import os
import sys
import traceback

import torch
import transformers
from transformers import AutoModelForCausalLM, DynamicCache

ARCHS = {
    "llama": lambda: transformers.LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=128, rms_norm_eps=1e-6, tie_word_embeddings=False),
    "qwen2": lambda: transformers.Qwen2Config(
        vocab_size=256, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=128, rms_norm_eps=1e-6, tie_word_embeddings=True),
    "gpt2": lambda: transformers.GPT2Config(
        vocab_size=256, n_embd=64, n_layer=2, n_head=4, n_positions=128),
}

# Other architectures from the same exporters, for robustness runs
# (`export_torch.py OUT --extra`): structure the fixtures do not have
# (partial rotary, parallel residuals, q/k norms, multi-query attention,
# learned positions with an offset, GeGLU, embedding scaling).
_small = dict(vocab_size=256, hidden_size=64, intermediate_size=128,
              num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=128)
EXTRA_ARCHS = {
    "mistral": lambda: transformers.MistralConfig(**_small, num_key_value_heads=2,
                                                  sliding_window=None),
    "qwen3": lambda: transformers.Qwen3Config(**_small, num_key_value_heads=2, head_dim=16),
    "phi3": lambda: transformers.Phi3Config(**_small, num_key_value_heads=2,
                                            pad_token_id=0, bos_token_id=1,
                                            eos_token_id=2),
    "gemma": lambda: transformers.GemmaConfig(**_small, num_key_value_heads=1,
                                              head_dim=16, pad_token_id=0,
                                              bos_token_id=1, eos_token_id=2),
    "gpt_neox": lambda: transformers.GPTNeoXConfig(**_small, rotary_pct=0.25),
    "stablelm": lambda: transformers.StableLmConfig(**_small, num_key_value_heads=4,
                                                    partial_rotary_factor=0.25),
    "phi": lambda: transformers.PhiConfig(**_small, partial_rotary_factor=0.5,
                                          pad_token_id=0, bos_token_id=1,
                                          eos_token_id=2),
    "opt": lambda: transformers.OPTConfig(vocab_size=256, hidden_size=64, ffn_dim=128,
                                          num_hidden_layers=2, num_attention_heads=4,
                                          max_position_embeddings=128,
                                          word_embed_proj_dim=64, pad_token_id=0,
                                          bos_token_id=1, eos_token_id=2),
    "falcon": lambda: transformers.FalconConfig(vocab_size=256, hidden_size=64,
                                                num_hidden_layers=2,
                                                num_attention_heads=4, multi_query=True,
                                                new_decoder_architecture=False,
                                                parallel_attn=True, bias=False),
    "granite": lambda: transformers.GraniteConfig(**_small, num_key_value_heads=2),
    "olmo": lambda: transformers.OlmoConfig(**_small, num_key_value_heads=4, pad_token_id=0,
                                            bos_token_id=1, eos_token_id=2),
    "starcoder2": lambda: transformers.Starcoder2Config(**_small, num_key_value_heads=2,
                                                        sliding_window=None),
}


# Attention that is not plain causal (`export_torch.py OUT --window`). The
# windows differ from model to model on purpose, and from the layers' order:
# Qwen2 slides on its later layers, Gemma 2 and 3 alternate local and global.
WINDOW_ARCHS = {
    "mistral_sw": lambda: transformers.MistralConfig(**_small, num_key_value_heads=2,
                                                     sliding_window=8),
    "qwen2_sw": lambda: transformers.Qwen2Config(**_small, num_key_value_heads=2,
                                                 use_sliding_window=True,
                                                 sliding_window=12,
                                                 max_window_layers=1),
    "starcoder2_sw": lambda: transformers.Starcoder2Config(**_small,
                                                           num_key_value_heads=2,
                                                           sliding_window=7),
    "gemma2_sw": lambda: transformers.Gemma2Config(
        **{**_small, "num_hidden_layers": 4}, num_key_value_heads=2, head_dim=16,
        sliding_window=6, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
        query_pre_attn_scalar=16, pad_token_id=0, bos_token_id=1, eos_token_id=2),
    "gemma3_sw": lambda: transformers.Gemma3TextConfig(
        **{**_small, "num_hidden_layers": 3}, num_key_value_heads=2, head_dim=16,
        sliding_window=10,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        pad_token_id=0, bos_token_id=1, eos_token_id=2),
}
# Softcapping exists only in the eager attention of transformers; SDPA drops it.
ATTN_IMPL = {"gemma2_sw": "eager"}

ALL_ARCHS = {**ARCHS, **EXTRA_ARCHS, **WINDOW_ARCHS}


class KVWrapper(torch.nn.Module):
    """Explicit past/present tensors around a model that takes a Cache."""

    def __init__(self, model, layers):
        super().__init__()
        self.model = model
        self.layers = layers

    def forward(self, input_ids, position_ids, *past):
        cache = DynamicCache()
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, position_ids=position_ids,
                         past_key_values=cache, use_cache=True)
        res = [out.logits]
        for i in range(self.layers):
            res += [cache.layers[i].keys, cache.layers[i].values]
        return tuple(res)


class NoCacheWrapper(torch.nn.Module):
    """A whole-sequence decoder: logits for every position, no cache."""

    def __init__(self, model, layers, with_mask):
        super().__init__()
        self.model = model
        self.layers = layers
        self.with_mask = with_mask

    def forward(self, input_ids, attention_mask=None):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         use_cache=False)
        return out.logits


def export_nocache(arch, with_mask, out_dir, name=None):
    wrapper, layers, _, _ = build(arch)
    wrapper = NoCacheWrapper(wrapper.model, layers, with_mask)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 256, (2, 5), generator=g)
    args = (ids, torch.ones(2, 5, dtype=torch.int64)) if with_mask else (ids,)
    ins = ["input_ids", "attention_mask"] if with_mask else ["input_ids"]
    path = os.path.join(out_dir, name or
                        f"{arch}_nocache{'_mask' if with_mask else ''}.onnx")
    B = torch.export.Dim("batch", min=1, max=64)
    S = torch.export.Dim("seq", min=2, max=128)
    shapes = tuple({0: B, 1: S} for _ in ins)
    if arch in WINDOW_ARCHS:  # trace a context longer than the window
        ids = torch.randint(0, 256, (2, 20), generator=g)
        args = (ids,)
    with torch.no_grad():
        prog = torch.onnx.export(wrapper, args, dynamo=True, opset_version=18,
                                 input_names=ins, output_names=["logits"],
                                 dynamic_shapes=shapes)
        prog.save(path)
    import numpy as np
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for batch, seq in ((2, 5), (1, 9), (3, 2), (1, 40)):
        a = torch.randint(0, 256, (batch, seq), generator=g)
        feed = {"input_ids": a.numpy()}
        targs = (a,)
        if with_mask:
            m = torch.ones(batch, seq, dtype=torch.int64)
            feed["attention_mask"] = m.numpy()
            targs = (a, m)
        got = sess.run(None, feed)[0]
        with torch.no_grad():
            want = wrapper(*targs).numpy()
        print(f"  ort vs torch max abs err {float(np.abs(got - want).max()):.3g} "
              f"(batch {batch}, seq {seq})")
    return path


def build(arch):
    torch.manual_seed(0)
    config = ALL_ARCHS[arch]()
    impl = {"attn_implementation": ATTN_IMPL[arch]} if arch in ATTN_IMPL else {}
    model = AutoModelForCausalLM.from_config(config, **impl).eval().float()
    layers = config.num_hidden_layers
    heads = config.num_attention_heads
    kv = getattr(config, "num_key_value_heads", None) or heads
    if getattr(config, "multi_query", False):
        kv = 1
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return KVWrapper(model, layers), layers, kv, head_dim


def example(layers, kv, head_dim, batch=2, seq=3, past=4):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 256, (batch, seq), generator=g)
    pos = torch.arange(past, past + seq).unsqueeze(0).expand(batch, seq).contiguous()
    pkv = [torch.randn(batch, kv, past, head_dim, generator=g) for _ in range(2 * layers)]
    return (ids, pos, *pkv)


def names(layers):
    ins = ["input_ids", "position_ids"]
    outs = ["logits"]
    for i in range(layers):
        ins += [f"past.{i}.key", f"past.{i}.value"]
        outs += [f"present.{i}.key", f"present.{i}.value"]
    return ins, outs


def export(arch, exporter, out_dir):
    wrapper, layers, kv, head_dim = build(arch)
    args = example(layers, kv, head_dim,
                   past=16 if arch in WINDOW_ARCHS else 4)
    ins, outs = names(layers)
    path = os.path.join(out_dir, f"{arch}_{exporter}.onnx")
    with torch.no_grad():
        if exporter == "dynamo18":
            B = torch.export.Dim("batch", min=1, max=64)
            S = torch.export.Dim("seq", min=1, max=64)
            P = torch.export.Dim("past", min=0, max=64)
            io = [{0: B, 1: S}, {0: B, 1: S}]
            past = [{0: B, 2: P}] * (2 * layers)
            # *past is one var-positional parameter: torch.export wants its
            # specs nested; older versions took them flat.
            errors = []
            for shapes in (tuple(io) + (tuple(past),), tuple(io + past)):
                try:
                    prog = torch.onnx.export(wrapper, args, dynamo=True,
                                             opset_version=18, input_names=ins,
                                             output_names=outs,
                                             dynamic_shapes=shapes)
                    break
                except Exception as e:  # try the other spelling
                    errors.append(e)
            else:
                raise errors[0]
            prog.save(path)
        else:
            axes = {"input_ids": {0: "batch", 1: "seq"},
                    "position_ids": {0: "batch", 1: "seq"},
                    "logits": {0: "batch", 1: "seq"}}
            for n in ins[2:]:
                axes[n] = {0: "batch", 2: "past"}
            for n in outs[1:]:
                axes[n] = {0: "batch", 2: "past_plus_seq"}
            torch.onnx.export(wrapper, args, path, dynamo=False, opset_version=17,
                              input_names=ins, output_names=outs,
                              dynamic_axes=axes, do_constant_folding=True)
    return path, wrapper, args


def check(path, wrapper, args):
    """Compares onnxruntime with torch on the example and on an empty past."""
    import numpy as np
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names_in = [i.name for i in sess.get_inputs()]
    kv, hd = args[2].shape[1], args[2].shape[3]
    for a in (args, example(wrapper.layers, kv, hd, batch=3, seq=5, past=0),
              example(wrapper.layers, kv, hd, batch=1, seq=4, past=30)):
        feed = {n: t.numpy() for n, t in zip(names_in, a)}
        got = sess.run(None, feed)
        with torch.no_grad():
            want = wrapper(*a)
        err = max(float(np.abs(g - w.numpy()).max()) for g, w in zip(got, want))
        print(f"  ort vs torch max abs err {err:.3g} (batch {a[0].shape[0]}, "
              f"seq {a[0].shape[1]}, past {a[2].shape[2]})")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out_dir = args[0] if args else "models/torch"
    os.makedirs(out_dir, exist_ok=True)
    print("torch", torch.__version__, "transformers", transformers.__version__)
    ok = True
    if "--window" in sys.argv:
        for arch in WINDOW_ARCHS:
            for exporter in ("dynamo18", "legacy17", "nocache"):
                print(f"== {arch} {exporter}", flush=True)
                try:
                    if exporter == "nocache":
                        path = export_nocache(arch, False, out_dir,
                                              f"{arch}_nocache.onnx")
                    else:
                        path, wrapper, ex = export(arch, exporter, out_dir)
                    print(f"  wrote {path} ({os.path.getsize(path)} bytes)")
                    if exporter != "nocache":
                        check(path, wrapper, ex)
                except Exception:
                    ok = False
                    traceback.print_exc()
        sys.exit(0 if ok else 1)
    if "--no-cache" in sys.argv:
        for arch in {**ARCHS, **EXTRA_ARCHS}:
            for with_mask in ((False, True) if arch in ARCHS else (False,)):
                print(f"== {arch} nocache{' mask' if with_mask else ''}", flush=True)
                try:
                    path = export_nocache(arch, with_mask, out_dir)
                    print(f"  wrote {path} ({os.path.getsize(path)} bytes)")
                except Exception:
                    ok = False
                    traceback.print_exc()
        sys.exit(0 if ok else 1)
    for arch in (EXTRA_ARCHS if "--extra" in sys.argv else ARCHS):
        for exporter in ("dynamo18", "legacy17"):
            print(f"== {arch} {exporter}", flush=True)
            try:
                path, wrapper, args = export(arch, exporter, out_dir)
                print(f"  wrote {path} ({os.path.getsize(path)} bytes)")
                check(path, wrapper, args)
            except Exception:
                ok = False
                traceback.print_exc()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
