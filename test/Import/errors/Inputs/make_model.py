#!/usr/bin/env python3
"""Writes a small ONNX model with one defect, for the importer's error tests.

usage: make_model.py KIND OUT.onnx
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def base(weight_elems=256):
    w = numpy_helper.from_array(np.arange(weight_elems, dtype=np.float32).reshape(16, -1), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", weight_elems // 16])
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")
    graph = helper.make_graph([node], "g", [x], [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    kind, out = sys.argv[1], sys.argv[2]
    model = base()
    if kind == "good":
        onnx.save(model, out)
    elif kind == "truncated":
        data = model.SerializeToString()
        open(out, "wb").write(data[: len(data) // 2])
    elif kind == "garbage":
        open(out, "wb").write(b"\xff\xff\xff\xff this is not a protobuf")
    elif kind in ("missing-external", "short-external"):
        if os.path.exists(out + ".data"):
            os.remove(out + ".data")  # onnx appends to an existing file
        onnx.save_model(model, out, save_as_external_data=True,
                        all_tensors_to_one_file=True,
                        location=os.path.basename(out) + ".data", size_threshold=0)
        data = out + ".data"
        if kind == "missing-external":
            os.remove(data)
        else:
            with open(data, "r+b") as f:
                f.truncate(100)
    elif kind == "wrapping-external":
        # offset + length wraps around 2^64 to a small number; the importer
        # once accepted it as lying inside the file.
        if os.path.exists(out + ".data"):
            os.remove(out + ".data")
        onnx.save_model(model, out, save_as_external_data=True,
                        all_tensors_to_one_file=True,
                        location=os.path.basename(out) + ".data", size_threshold=0)
        model = onnx.load(out, load_external_data=False)
        for entry in model.graph.initializer[0].external_data:
            if entry.key == "offset":
                entry.value = str(2**64 - 1)
            elif entry.key == "length":
                entry.value = "1024"
        open(out, "wb").write(model.SerializeToString())
    elif kind == "empty":
        open(out, "wb").write(b"")
    else:
        sys.exit("unknown kind " + kind)


if __name__ == "__main__":
    main()
