#!/usr/bin/env python3
"""Import benchmark: a decoder-shaped graph with about 1e8 float32 parameters
(400 MB), in one .onnx file and with external data. Measures lockstep-opt's
import (with shape inference) in wall time and peak memory, against
onnx.load of the same file measured in the same run as the reference.

usage: bench/import_large.py [--params N] [--keep DIR]
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from measure import measure  # noqa: E402
OPT = os.path.join(HERE, "..", "build", "bin", "lockstep-opt")


def make_model(params, hidden=1024):
    """Layers of x @ W1 -> relu -> @ W2 until `params` parameters."""
    layers = max(1, -(-params // (2 * hidden * 4 * hidden)))
    rng = np.random.default_rng(0)
    inits, nodes = [], []
    x = "x"
    for i in range(layers):
        w1 = rng.standard_normal((hidden, 4 * hidden), dtype=np.float32)
        w2 = rng.standard_normal((4 * hidden, hidden), dtype=np.float32)
        inits += [numpy_helper.from_array(w1, f"l{i}.w1"), numpy_helper.from_array(w2, f"l{i}.w2")]
        nodes += [helper.make_node("MatMul", [x, f"l{i}.w1"], [f"h{i}"]),
                  helper.make_node("Relu", [f"h{i}"], [f"r{i}"]),
                  helper.make_node("MatMul", [f"r{i}", f"l{i}.w2"], [f"y{i}"])]
        x = f"y{i}"
    graph = helper.make_graph(
        nodes, "large",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "seq", hidden])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, layers * 2 * hidden * 4 * hidden


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=int, default=100_000_000)
    ap.add_argument("--keep", help="write the models here and keep them")
    args = ap.parse_args()
    d = args.keep or tempfile.mkdtemp()
    os.makedirs(d, exist_ok=True)
    model, n = make_model(args.params)
    inline = os.path.join(d, "large.onnx")
    ext = os.path.join(d, "large_ext.onnx")
    onnx.save(model, inline)
    if os.path.exists(ext + ".data"):
        os.remove(ext + ".data")
    onnx.save_model(model, ext, save_as_external_data=True, location="large_ext.onnx.data")
    size = os.path.getsize(inline) / 2**20
    print(f"model: {n:,} parameters, {size:.0f} MiB")
    rows = []
    for label, path in (("external data", ext), ("inline", inline)):
        wall, rss, out = measure([OPT, path, "--emit=summary"])
        rows.append((f"lockstep-opt --emit=summary ({label})", wall, rss))
    wall, rss, _ = measure([sys.executable, "-c", f"import onnx; onnx.load({inline!r})"])
    rows.append(("reference: onnx.load (inline)", wall, rss))
    print(f"{'':45s} {'wall s':>8s} {'peak MiB':>9s}")
    for label, wall, rss in rows:
        print(f"{label:45s} {wall:8.2f} {rss:9.0f}")
    print(f"ratio lockstep-opt inline / onnx.load: time {rows[1][1] / rows[2][1]:.2f}x")
    print(f"ratio lockstep-opt inline / onnx.load: peak memory {rows[1][2] / rows[2][2]:.2f}x")


if __name__ == "__main__":
    main()
