#!/usr/bin/env python3
"""Checks the numbers README.md states against their sources, so that they
cannot drift:
  - the conformance count against docs/conformance.md (generated);
  - the onnxruntime tolerance against test/E2E/check_models.py;
  - the model counts against the files under models/;
  - the fuzz schedule counts against the fuzz tests, and that every model
    under models/ is fuzzed by one of them.
Prints one line per check and "readme numbers: N checked, N wrong"."""
import glob
import os
import re
import sys

root = sys.argv[1]
read = lambda p: open(os.path.join(root, p), encoding="utf-8").read()
readme = " ".join(read("README.md").split())  # one line: claims wrap
wrong = checked = 0


def claim(what, stated, actual):
    global wrong, checked
    checked += 1
    ok = str(stated) == str(actual)
    wrong += not ok
    print(f"{'ok   ' if ok else 'WRONG'} {what}: README says {stated}, the source says {actual}")


m = re.search(r"pass through the CPU backend: (\d+) of the (\d+)", readme)
c = re.search(r"\*\*(\d+) of (\d+) attempted tests pass\.\*\*", read("docs/conformance.md"))
claim("conformance", m and m.groups(), c and c.groups())

m = re.search(r"agrees with onnxruntime within (\S+) relative", readme)
t = re.search(r"^TOLERANCE = (\S+)$", read("test/E2E/check_models.py"), re.M)
claim("onnxruntime tolerance", m and float(m.group(1)), t and float(t.group(1)))

models = sorted(os.path.relpath(p, os.path.join(root, "models"))
                for p in glob.glob(os.path.join(root, "models", "**", "*.onnx"), recursive=True))
m = re.search(r"all (\d+) decoders under `models/` \((\d+) of them with sliding", readme)
claim("decoders under models/", m and m.group(1), len(models))
claim("sliding-window decoders", m and m.group(2),
      sum(p.startswith("window" + os.sep) for p in models))

# Schedules per model: the largest campaign each model gets in the fuzz
# tests (controls, run with `not`, do not count), the artifact of a campaign
# traced to the lockstep-opt line that made it.
m = re.search(r"\((\d+) per fixture, at least (\d+) per other graph\)", readme)
most = {}
for test in glob.glob(os.path.join(root, "test", "Fuzz", "fuzz-*.test")):
    made = {}
    for line in open(test, encoding="utf-8"):
        if not line.startswith("# RUN:"):
            continue
        for model, lsa in re.findall(r"lockstep-opt %models/(\S+?\.onnx).*?-o (\S+\.lsa)", line):
            made[lsa] = model
        for lsa, n in re.findall(r"(?<!not )lockstep-run fuzz (\S+\.lsa) .*?--schedules (\d+)", line):
            if lsa in made:
                most[made[lsa]] = max(most.get(made[lsa], 0), int(n))
fixtures = {p for p in models if os.sep not in p or p.startswith("torch" + os.sep)}
claim("schedules per fixture", m and m.group(1),
      min((most.get(p, 0) for p in fixtures), default=0))
claim("schedules per other graph (at least)", m and m.group(2),
      min((most.get(p, 0) for p in models if p not in fixtures), default=0))
missing = [p for p in models if p not in most]
claim("models not fuzzed by a test", 0, len(missing))
for p in missing:
    print(f"  not fuzzed: models/{p}")
print(f"readme numbers: {checked} checked, {wrong} wrong")
sys.exit(1 if wrong else 0)
