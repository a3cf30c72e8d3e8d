#!/usr/bin/env python3
"""Compile-time benchmark: a Llama-style decoder of about 1.2e8 parameters
(12 layers, hidden 768, vocab 32000; the graph of models/gen_decoders.py at a
larger size) compiled to an artifact by lockstep-opt, with weights embedded
and with weights referenced. Reports wall time and peak memory, and the peak
minus the weights' size (the issue's bound: under 30 s and under 1 GiB more
than the weights).

usage: bench/compile_large.py [--keep DIR]
"""
import argparse
import importlib.util
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from measure import measure  # noqa: E402
ROOT = os.path.dirname(HERE)
OPT = os.path.join(ROOT, "build", "bin", "lockstep-opt")


def load_generator():
    spec = importlib.util.spec_from_file_location("gen", os.path.join(ROOT, "models", "gen_decoders.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="write the model and artifacts here and keep them")
    args = ap.parse_args()
    d = args.keep or tempfile.mkdtemp()
    os.makedirs(d, exist_ok=True)
    gen = load_generator()
    gen.LLAMA.update(layers=12, hidden=768, heads=12, kv_heads=4, head_dim=64,
                     inter=2048, vocab=32000, max_pos=2048)
    import onnx
    model = gen.build_llama()
    params = sum(int(__import__("numpy").prod(t.dims)) for t in model.graph.initializer)
    path = os.path.join(d, "llama_large.onnx")
    onnx.save_model(model, path)
    weight_mib = os.path.getsize(path) / 2**20
    ext = os.path.join(d, "llama_large_ext.onnx")
    if os.path.exists(ext + ".data"):
        os.remove(ext + ".data")
    onnx.save_model(model, ext, save_as_external_data=True, location="llama_large_ext.onnx.data")
    print(f"model: {params:,} parameters, {weight_mib:.0f} MiB, {len(model.graph.node)} nodes")
    print(f"config: {gen.LLAMA['layers']} layers, hidden {gen.LLAMA['hidden']}, "
          f"vocab {gen.LLAMA['vocab']}")
    print(f"{'':40s} {'wall s':>7s} {'peak MiB':>9s} {'peak - weights':>15s}")
    for label, src, extra in (("weights embedded", path, []),
                              ("weights referenced", ext, [])):
        wall, peak, _ = measure([OPT, src, "-o", os.path.join(d, "out.lsa")] + extra)
        print(f"lockstep-opt -o .lsa ({label}){'':{max(0, 19 - len(label))}s} "
              f"{wall:7.2f} {peak:9.0f} {peak - weight_mib:15.0f}")


if __name__ == "__main__":
    main()
