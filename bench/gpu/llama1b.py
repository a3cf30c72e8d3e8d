#!/usr/bin/env python3
"""The GPU speed benchmark's model: a Llama-shaped decoder of 0.94e9
parameters (hidden 2048, 18 layers, GQA 32/8 heads of 64, MLP 5632, vocab
32000) with random weights drawn from a seed, written as ONNX with its
weights in one external data file.

The graph is models/gen_decoders.py's Llama at this size. The same seed gives
the same bytes on any machine with numpy >= 1.17 (PCG64, float32 normals), so
an artifact compiled here with the weights referenced (by absolute path and
checksum) loads on the GPU machine once this script has written the same file
at the same path there.

  bench/gpu/llama1b.py DIR          writes DIR/llama1b.onnx and DIR/llama1b.onnx.data
  bench/gpu/llama1b.py DIR --check  only says whether they are there

hf_state_dict(onnx_path) gives the same weights as a transformers
LlamaForCausalLM state dict (projections transposed to [out, in]), and
hf_config() its config, for the reference measured beside Lockstep.
"""
import argparse
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CONFIG = dict(layers=18, hidden=2048, heads=32, kv_heads=8, head_dim=64, inter=5632,
              vocab=32000, max_pos=1024, eps=1e-5, rope_theta=10000.0, seed=20261202)


def generator():
    spec = importlib.util.spec_from_file_location(
        "gen_decoders", os.path.join(ROOT, "models", "gen_decoders.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def paths(d):
    onnx_path = os.path.join(os.path.abspath(d), "llama1b.onnx")
    return onnx_path, onnx_path + ".data"


def build(d):
    import onnx
    os.makedirs(d, exist_ok=True)
    onnx_path, data = paths(d)
    gen = generator()
    gen.LLAMA.update(CONFIG)
    model = gen.build_llama()
    if os.path.exists(data):
        os.remove(data)
    onnx.save_model(model, onnx_path, save_as_external_data=True,
                    location=os.path.basename(data), size_threshold=1024)
    params = sum(int(__import__("numpy").prod(t.dims)) for t in model.graph.initializer
                 if "rotary" not in t.name)
    return onnx_path, params


def hf_config():
    from transformers import LlamaConfig
    c = CONFIG
    return LlamaConfig(vocab_size=c["vocab"], hidden_size=c["hidden"],
                       intermediate_size=c["inter"], num_hidden_layers=c["layers"],
                       num_attention_heads=c["heads"], num_key_value_heads=c["kv_heads"],
                       head_dim=c["head_dim"], max_position_embeddings=c["max_pos"],
                       rms_norm_eps=c["eps"], rope_theta=c["rope_theta"],
                       tie_word_embeddings=False, attention_bias=False, mlp_bias=False)


def hf_state_dict(onnx_path):
    """The ONNX initializers as a LlamaForCausalLM state dict (torch tensors)."""
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    model = onnx.load(onnx_path, load_external_data=True)
    out = {}
    for t in model.graph.initializer:
        if "rotary" in t.name:
            continue
        a = numpy_helper.to_array(t)
        if a.ndim == 2 and t.name != "model.embed_tokens.weight":
            a = np.ascontiguousarray(a.T)  # [in, out] -> nn.Linear's [out, in]
        out[t.name] = torch.from_numpy(a.copy())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--check", action="store_true", help="only say whether the files exist")
    args = ap.parse_args()
    onnx_path, data = paths(args.dir)
    if args.check:
        ok = os.path.exists(onnx_path) and os.path.exists(data)
        print(f"{onnx_path}: {'present' if ok else 'missing'}")
        return 0 if ok else 1
    onnx_path, params = build(args.dir)
    print(f"{onnx_path}: {params:,} parameters, {os.path.getsize(data) / 2**30:.2f} GiB of weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
