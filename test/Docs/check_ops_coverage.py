#!/usr/bin/env python3
"""Checks that every op of the onnx dialect is listed in docs/ops.md and has an
import test test/Import/ops/<Op>.onnxtxt, and that docs/ops.md lists no op
that the dialect lacks."""
import os
import re
import sys

root = sys.argv[1]
td = open(os.path.join(root, "include/lockstep/Dialect/ONNX/ONNXOps.td")).read()
ops = set(re.findall(r'^def ONNX_\w+Op : ONNX_\w+<"(\w+)"', td, re.M))
doc = open(os.path.join(root, "docs/ops.md")).read()
rows = [l.split("|")[1] for l in doc.splitlines() if l.startswith("| ") and not l.startswith("| op ")]
listed = {n.strip() for r in rows for n in r.split(",") if n.strip()}
bad = False
for op in sorted(ops - listed):
    print(f"not in docs/ops.md: {op}")
    bad = True
for op in sorted(listed - ops):
    print(f"in docs/ops.md but not in the dialect: {op}")
    bad = True
for op in sorted(ops):
    if not os.path.exists(os.path.join(root, "test/Import/ops", op + ".onnxtxt")):
        print(f"no import test: test/Import/ops/{op}.onnxtxt")
        bad = True
print(f"{len(ops)} ops checked")
sys.exit(1 if bad else 0)
