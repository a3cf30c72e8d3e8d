#!/usr/bin/env python3
"""Writes the seed corpus of the importer fuzzer.

usage: make_seeds.py SOURCE_DIR OUT_DIR

- Every model under models/, with each initializer of more than 64 elements
  moved to external data in `weights.bin` (all at offset 0; scripts/fuzz-import
  puts a large sparse weights.bin beside the fuzzer's input file), so that a
  seed holds the whole graph in a few kilobytes (node metadata dropped,
  internal names shortened) and imports all the way
  through shape inference.
- Every ONNX text model under test/ (its leading comment lines removed, so
  that it starts with '<', which selects the text parser).
"""
import pathlib
import sys

import onnx
from onnx import TensorProto


def strip_weights(model):
    # Exporters' long value and node names, shortened (graph inputs and
    # outputs keep theirs).
    keep = {v.name for v in model.graph.input} | {v.name for v in model.graph.output}
    names = {}

    def short(name):
        if not name or name in keep:
            return name
        return names.setdefault(name, "v%d" % len(names))

    g = model.graph
    for t in g.initializer:
        t.name = short(t.name)
    for vi in g.value_info:
        vi.name = short(vi.name)
    for i, node in enumerate(g.node):
        node.name = "n%d" % i
        node.input[:] = [short(x) for x in node.input]
        node.output[:] = [short(x) for x in node.output]
    # Exporters' per-node metadata (source locations, class paths) is most
    # of a graph's bytes and means nothing to the importer.
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    for t in model.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        if n <= 64 or t.data_location == TensorProto.EXTERNAL:
            continue
        nbytes = len(t.raw_data) if t.HasField("raw_data") else n * 4
        for field in ("raw_data", "float_data", "int32_data", "int64_data",
                      "double_data", "uint64_data"):
            t.ClearField(field)
        del t.external_data[:]
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "weights.bin"), ("offset", "0"),
                           ("length", str(nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
    return model


def main():
    src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in sorted(src.glob("models/**/*.onnx")):
        model = onnx.load(str(path), load_external_data=True)
        data = strip_weights(model).SerializeToString()
        name = str(path.relative_to(src)).replace("/", "_")
        (out / name).write_bytes(data)
        count += 1
    for path in sorted(src.glob("test/**/*.onnxtxt")):
        lines = path.read_text().splitlines()
        while lines and not lines[0].lstrip().startswith("<"):
            lines.pop(0)
        body = [l for l in lines if not l.lstrip().startswith("#")]
        if not body:
            continue
        name = str(path.relative_to(src)).replace("/", "_")
        (out / name).write_text("\n".join(body) + "\n")
        count += 1
    print(f"make_seeds: {count} seeds in {out}")


if __name__ == "__main__":
    main()
