"""Writes a tiny decoder with a KV cache and a token type ids input:
integer [batch, seq] like the positions, but an index into a 2-row table.
Lockstep must not feed it positions.

  make_token_types.py OUT.onnx [--positions-name NAME]
     NAME: call the second input NAME instead of token_type_ids
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
second = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--positions-name" else "token_type_ids"
rng = np.random.default_rng(0)
V, D = 300, 16  # large enough to be weights, not folded constants
rows = 2 if second == "token_type_ids" else 128
inits = [numpy_helper.from_array(rng.standard_normal((V, D)).astype(np.float32), "wte"),
         numpy_helper.from_array(rng.standard_normal((rows, D)).astype(np.float32), "tte"),
         numpy_helper.from_array(rng.standard_normal((D, V)).astype(np.float32), "head"),
         numpy_helper.from_array(np.array([1], np.int64), "one")]
nodes = [helper.make_node("Gather", ["wte", "input_ids"], ["t"]),
         helper.make_node("Gather", ["tte", second], ["u"]),
         helper.make_node("Add", ["t", "u"], ["x"]),
         helper.make_node("Unsqueeze", ["x", "one"], ["k"]),
         helper.make_node("Concat", ["past_k", "k"], ["present_k"], axis=2),
         helper.make_node("MatMul", ["x", "head"], ["logits"])]
g = helper.make_graph(
    nodes, "token_types",
    [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
     helper.make_tensor_value_info(second, TensorProto.INT64, ["batch", "seq"]),
     helper.make_tensor_value_info("past_k", TensorProto.FLOAT, ["batch", 1, "past", D])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", V]),
     helper.make_tensor_value_info("present_k", TensorProto.FLOAT, ["batch", 1, "total", D])],
    inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, out)
