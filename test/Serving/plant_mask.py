"""Plants a mask that is not causal into a decoder: one flipped position.

Reads a decoder whose causal mask is one LessOrEqual(key positions, query
positions) node (models/llama_tiny.onnx) and writes a copy in which the query
at position 5 does not see key 2: mask AND NOT (key == 2 AND query == 5).
Everything else, weights included, is unchanged. The compiler must not
prove this mask causal; served through the exported graph it must give
onnxruntime's results on the same file.

Usage: plant_mask.py IN.onnx OUT.onnx
"""
import sys

import onnx
from onnx import TensorProto, helper


def main():
    src, dst = sys.argv[1], sys.argv[2]
    m = onnx.load(src)
    g = m.graph
    le = [n for n in g.node if n.op_type == "LessOrEqual"]
    if len(le) != 1:
        sys.exit(f"plant_mask: expected one LessOrEqual, found {len(le)}")
    le = le[0]
    keys, queries, out = le.input[0], le.input[1], le.output[0]
    flipped = out + "_flipped"
    new = [
        helper.make_node("Constant", [], ["plant_k"], value=helper.make_tensor(
            "plant_k", TensorProto.INT64, [], [2])),
        helper.make_node("Constant", [], ["plant_q"], value=helper.make_tensor(
            "plant_q", TensorProto.INT64, [], [5])),
        helper.make_node("Equal", [keys, "plant_k"], ["plant_is_k"], name="/plant/EqualK"),
        helper.make_node("Equal", [queries, "plant_q"], ["plant_is_q"], name="/plant/EqualQ"),
        helper.make_node("And", ["plant_is_k", "plant_is_q"], ["plant_at"], name="/plant/And"),
        helper.make_node("Not", ["plant_at"], ["plant_not"], name="/plant/Not"),
        helper.make_node("And", [out, "plant_not"], [flipped], name="/plant/Flip"),
    ]
    for n in g.node:
        for i, name in enumerate(n.input):
            if name == out:
                n.input[i] = flipped
    at = list(g.node).index(le) + 1
    for k, n in enumerate(new):
        g.node.insert(at + k, n)
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, dst)


if __name__ == "__main__":
    main()
