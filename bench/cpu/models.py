"""The models' ONNX files and artifacts: the generated decoders (written
with models/gen_decoders.py at the configured size, kept in the work
directory), their facts (parameters, MatMul weight bytes, vocab), the
last-position variant of a graph for onnxruntime's prefill, and compiling
with lockstep-opt."""
import copy
import json
import os
import sys
import time

import numpy as np

from .env import BENCH, OPT, ROOT, sh

# models/gen_decoders.py as a module: bench/gpu/llama1b.py's loader.
sys.path.insert(0, os.path.join(BENCH, "gpu"))
from llama1b import generator  # noqa: E402


def save_external(model, path):
    """Saves `model` at `path` with its weights as external data in
    PATH.data beside it, removed first: save_model appends to an existing
    file."""
    import onnx
    data = os.path.basename(path) + ".data"
    if os.path.exists(os.path.join(os.path.dirname(path), data)):
        os.remove(os.path.join(os.path.dirname(path), data))
    onnx.save_model(model, path, save_as_external_data=True, location=data)


def write_model(spec, work):
    """The ONNX file of a model (generated ones: weights as external data,
    kept in `work` and rewritten only when their config changes)."""
    if not spec["large"]:
        return os.path.join(ROOT, spec["file"])
    path = os.path.join(work, spec["name"] + ".onnx")
    stamp = path + ".config.json"
    want = json.dumps({"kind": spec["kind"], "config": spec["config"]}, sort_keys=True)
    if os.path.exists(path) and os.path.exists(stamp) and open(stamp).read() == want:
        return path
    gen = generator()
    table = gen.LLAMA if spec["kind"] == "llama" else gen.GPT2
    saved = copy.deepcopy(table)
    table.update(spec["config"])
    try:
        model = gen.build_llama() if spec["kind"] == "llama" else gen.build_gpt2()
    finally:
        table.clear()
        table.update(saved)
    save_external(model, path)
    open(stamp, "w").write(want)
    return path


def model_facts(path):
    """Parameters, bytes of weights read by a decode step (all but the
    embedding tables' unread rows: every MatMul weight), vocab, positions."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer if t.data_type == 1)
    matmul_inputs = set()
    inits = {t.name: t for t in m.graph.initializer}
    producers = {o: n for n in m.graph.node for o in n.output}
    for n in m.graph.node:
        if n.op_type in ("MatMul", "Gemm"):
            for i in n.input[1:2]:
                # Through a Transpose of an initializer (a tied lm_head).
                src = producers.get(i)
                if src is not None and src.op_type == "Transpose":
                    i = src.input[0]
                if i in inits:
                    matmul_inputs.add(i)
    mm_bytes = sum(4 * int(np.prod(inits[i].dims)) for i in matmul_inputs)
    logits = [o for o in m.graph.output if o.name == "logits"][0]
    vocab = logits.type.tensor_type.shape.dim[2].dim_value
    return dict(params=params, matmul_weight_bytes=mm_bytes, vocab=vocab)


def compile_model(src, lsa, flags=()):
    """Compiles `src` to `lsa` with lockstep-opt and `flags`; the seconds
    it took."""
    t = time.perf_counter()
    sh([OPT, src, "-o", lsa] + list(flags))
    return time.perf_counter() - t


def max_context(spec):
    """Positions a request may use: the generated models' tables; the
    torch export computes its rotary tables from the positions (no limit)."""
    return spec["config"]["max_pos"] if spec.get("config") else None


def last_position_variant(src, dst):
    """The same graph with the lm_head MatMul applied to the last position
    only (a Slice of its input), for onnxruntime's prefill: the work that
    a serving step does. None when the graph's logits do not come from a
    MatMul."""
    import onnx
    from onnx import helper
    m = onnx.load(src)
    producers = {o: n for n in m.graph.node for o in n.output}
    name = "logits"
    node = producers.get(name)
    while node is not None and node.op_type == "Identity":
        node = producers.get(node.input[0])
    if node is None or node.op_type != "MatMul":
        return None
    consts = [helper.make_node("Constant", [], [f"lastpos/{k}"], name=f"lastpos/{k}",
                               value=helper.make_tensor(f"lastpos/{k}", onnx.TensorProto.INT64, [1], [v]))
              for k, v in (("starts", -1), ("ends", 2**62), ("axes", -2))]
    sliced = "lastpos/sliced"
    slice_node = helper.make_node("Slice", [node.input[0], "lastpos/starts", "lastpos/ends",
                                           "lastpos/axes"], [sliced], name="lastpos/Slice")
    node.input[0] = sliced
    nodes = list(m.graph.node)
    at = nodes.index(node)
    del m.graph.node[:]
    m.graph.node.extend(nodes[:at] + consts + [slice_node] + nodes[at:])
    for o in m.graph.output:
        if o.name == "logits":
            o.type.tensor_type.shape.dim[1].ClearField("dim_param")
            o.type.tensor_type.shape.dim[1].dim_value = 1
    del m.graph.value_info[:]
    save_external(m, dst)
    return dst
