#!/usr/bin/env python3
"""Checks the numbers README.md and docs/*.md state against their sources,
so that they cannot drift:
  - the conformance count against docs/conformance.md (generated);
  - the onnxruntime tolerance against test/E2E/check_models.py;
  - the model counts against the files under models/;
  - the fuzz schedule counts against the fuzz tests, and that every model
    under models/ is fuzzed by one of them;
  - the GPU campaign lengths against the gpu-summary line of docs/gpu.md
    (itself checked by gpu-results.test);
  - the defaults and sizes the docs quote (demo, importer fuzzer, opsets,
    inline constants, pressure test, controls, bench's scheduler, fuzz's
    block sizes, row checks) against the scripts, tests and sources that
    set them.
The speed figures are checked by bench-numbers.test (bench/summary.py).
Prints one line per check and "doc numbers: N checked, N wrong"."""
import glob
import os
import re
import sys

root = sys.argv[1]
read = lambda p: open(os.path.join(root, p), encoding="utf-8").read()
flat = lambda p: " ".join(read(p).split())  # one line: claims wrap
readme = flat("README.md")
wrong = checked = 0


def claim(what, stated, actual, doc="README"):
    global wrong, checked
    checked += 1
    # A claim or a source that cannot be found is wrong, even when both are missing.
    ok = str(stated) == str(actual) and "None" not in str(stated) and stated not in ("", [], ())
    wrong += not ok
    print(f"{'ok   ' if ok else 'WRONG'} {what}: {doc} says {stated}, the source says {actual}")


def find(text, pattern, flags=0):
    """The groups of pattern in text (a missing claim is a wrong one: None)."""
    m = re.search(pattern, text, flags)
    return m and (m.groups() if len(m.groups()) > 1 else m.group(1))


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

# Sizes and defaults, each against what sets it.
nocache = [p for p in models if p.startswith("nocache" + os.sep)]
claim("whole-sequence exports", find(readme, r"\((\d+) whole-sequence exports under `models/nocache`\)"),
      len(nocache))
demo = read("scripts/demo")
printf = find(demo, r"printf '%s\\n' (.*?) > \"\$work/prompts\.jsonl\"", re.S)
claim("demo's prompts", find(readme, r"generate for (\d+) prompts"),
      printf and len(re.findall(r"'[^']*'", printf)))
claim("demo's campaign", find(readme, r"a fuzz campaign of (\d+) schedules"),
      find(read("scripts/demo"), r'^schedules="\$\{2:-(\d+)\}"', re.M))
claim("LLVM/MLIR version", find(readme, r"LLVM/MLIR (\d+)"),
      find(read("scripts/setup"), r"libmlir-(\d+)-dev"))
if read("/etc/debian_version").startswith("12") if os.path.exists("/etc/debian_version") else False:
    import subprocess
    v = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libonnx-dev"],
                       capture_output=True, text=True).stdout
    claim("libonnx-dev on Debian 12", find(readme, r"libonnx-dev (\d+\.\d+)"),
          ".".join(v.split(".")[:2]) or None)
importer = read("include/lockstep/Import/ONNXImporter.h")
opsets = (find(importer, r"kMinOpset = (\d+);"), find(importer, r"kMaxOpset = (\d+);"))
claim("opsets", find(readme, r"Supported: opsets (\d+) to (\d+) of the default domain"), opsets)
claim("opsets", find(flat("docs/ops.md"), r"at opsets (\d+) to (\d+) of"), opsets, "docs/ops.md")
claim("inline initializers", find(readme, r"initializers of (\d+) elements or fewer become"),
      find(read("lib/Import/GraphImporter.cpp"), r"kMaxInlineElements = (\d+);"))
fuzz_default = find(read("scripts/fuzz-import"), r'^seconds="\$\{1:-(\d+)\}"', re.M)
claim("importer fuzzer default", find(readme, r"runs it \(default (\d+) s\)"), fuzz_default)
claim("importer fuzzer in the suite",
      find(readme, r"`test/Fuzz/import-fuzzer.test` is the (\d+) s run"),
      find(read("test/Fuzz/import-fuzzer.test"), r"scripts/fuzz-import (\d+) "))
pressure = read("test/Serving/pressure.test")
p_requests = find(pressure, r"make_prompts.py (\d+) ")
p_budget = find(pressure, r"--kv-blocks (\d+) --block-size (\d+) --preempt recompute")
claim("pressure test requests", find(readme, r"\(`test/Serving/pressure.test`: (\d+) requests\)"),
      p_requests)
serving = flat("docs/serving.md")
claim("pressure test", find(serving, r"pressure.test` runs (\d+) requests under a KV budget of "
                                     r"(\d+) blocks of (\d+) tokens"),
      (p_requests,) + tuple(p_budget or (None, None)), "docs/serving.md")
claim("GPU schedules (fixture, other model)",
      find(readme, r"over (\d+) fuzz schedules on each fixture and (\d+) on every other model"),
      tuple(reversed(find(read("docs/gpu.md"),
                          r"^fuzz cuda: \d+ models, \d+ campaigns, (\d+) to (\d+) schedules", re.M)
                     or (None, None))))
claim("ragged steps", find(serving, r"All (\d+) decoders under `models/` become ragged steps"),
      len(models), "docs/serving.md")
claim("generate references", find(serving, r"every decoder under `models/` \((\d+)\)"),
      len(models), "docs/serving.md")
claim("onnxruntime tolerance", find(serving, r"logits within (\S+) relative") and
      float(find(serving, r"logits within (\S+) relative")), t and float(t.group(1)),
      "docs/serving.md")
claim("fixtures fuzzed", find(serving, r"\(`?(\d+) schedules on each of the (\d+) fixtures"),
      (str(min((most.get(p, 0) for p in fixtures), default=0)), str(len(fixtures))),
      "docs/serving.md")
control = find(read("test/Fuzz/adaptive-control.test"),
               r"not lockstep-run fuzz \S+ --schedules (\d+)")
claim("adaptive control", find(serving, r"control fails within (\d+) schedules"), control,
      "docs/serving.md")
bench_src = read("tools/lockstep-run/Bench.cpp")
claim("bench's batched scheduler",
      find(serving, r"\(token budget (\d+), or `--token-budget N`, (\d+) requests per step\)"),
      (find(bench_src, r"\bbudget = (\d+);"), find(bench_src, r"maxSeqs = (\d+);")),
      "docs/serving.md")
sizes = find(read("harness/Fuzz.cpp"), r"blockSizes\[\] = \{([\d, ]+)\}")
sizes = sizes and [int(x) for x in sizes.split(",")]
claim("fuzz block sizes", find(serving, r"block sizes from (\d+) to (\d+)"),
      sizes and (str(min(sizes)), str(max(sizes))), "docs/serving.md")
numerics = flat("docs/numerics.md")
claim("onnxruntime tolerance", find(numerics, r"agrees with onnxruntime within (\S+) relative") and
      float(find(numerics, r"agrees with onnxruntime within (\S+) relative")),
      t and float(t.group(1)), "docs/numerics.md")
for m in re.findall(r"(?:All|Every attention site of the) (\d+) models", numerics):
    claim("models", m, len(models), "docs/numerics.md")
rows = [find(read(f"test/Invariance/rows-{k}.test"), r"CHECK: \d+ runs, (\d+) rows compared, 0 rows differ")
        for k in ("matmul", "norm", "softmax")]
claim("row checks", find(numerics, r"computed among M = 1..(\d+) rows .*?: ([\d,]+) rows per model"),
      (find(read("test/Invariance/Inputs/lockstep-rowcheck.cpp"), r"maxRows = (\d+),"),
       f"{int(rows[0]):,}" if len(set(rows)) == 1 and rows[0] else rows), "docs/numerics.md")
claim("controls caught within", find(numerics, r"catches each within (\d+) schedules"),
      find(read("test/Fuzz/controls.test"), r"within (\d+) schedules"), "docs/numerics.md")
gpu = flat("docs/gpu.md")
runs = sorted(glob.glob(os.path.join(root, "docs", "gpu-runs", "2026-12-02-format3", "run*.log")))
drivers = {open(r, encoding="utf-8").readline().strip().split(", ")[-1] for r in runs}
claim("GPU driver", find(gpu, r"On the H200 \(driver (\S+)\)"),
      drivers.pop() if len(drivers) == 1 else drivers, "docs/gpu.md")
defaults = read("scripts/test-gpu")
claim("test-gpu defaults",
      find(gpu, r"\(`--cpu-schedules`, default (\d+)\).*?\(`--wide-schedules`, default (\d+)\).*?"
                r"\(`--schedules-fixtures`, default (\d+), and `--schedules`, default (\d+)\)"),
      tuple(find(defaults, rf"\b{v}=(\d+)") for v in ("cpuSchedules", "wide", "fixtureSchedules",
                                                     "otherSchedules")), "docs/gpu.md")
gpu_models = [len({l.split()[1] for l in open(r, encoding="utf-8")
                   if re.match(r"^(ok  |FAIL) \S+ fuzz cuda: ", l)}) for r in runs[1:3]]
claim("GPU campaigns by log",
      find(gpu, r"timed out during the GPU campaigns of its (\d+)th model; `run3.log` the GPU "
                r"campaigns of the (\d+) models not finished"),
      tuple(map(str, gpu_models)), "docs/gpu.md")
# A GPU campaign's split: per model, its distinct seeds and schedules a campaign.
split = {}
for r in runs:
    for l in open(r, encoding="utf-8"):
        m = re.match(r"^ok   (\S+) fuzz cuda: (\d+) schedules, .*, seed (\d+),", l)
        if m:
            split.setdefault(m.group(1), {})[int(m.group(3))] = int(m.group(2))
# docs/gpu.md's fixtures: llama_tiny, gpt2_tiny and the torch exports.
is_fixture = lambda n: re.fullmatch(r"models_(llama_tiny|gpt2_tiny|torch_\w+)", n)


def shape_of(fixture):
    """(campaigns a model, schedules a campaign), when every model has the same."""
    got = {(len(v), *sorted(set(v.values()))) for n, v in split.items()
           if bool(is_fixture(n)) == fixture}
    return got.pop() if len(got) == 1 and len(next(iter(got))) == 2 else got


words = {"ten": 10, "five": 5, "twenty": 20}
stated = find(gpu, r"A fixture's (\d+) schedules are (\w+) campaigns of (\d+) with seeds "
                   r"`S\*100\+1\.\.S\*100\+(\d+)`; another model's (\d+) are (\w+) of (\d+)\.")
fx, ot = shape_of(True), shape_of(False)
claim("GPU campaign split", stated and (int(stated[0]), words.get(stated[1]), int(stated[2]),
                                        int(stated[3]), int(stated[4]), words.get(stated[5]),
                                        int(stated[6])),
      (fx[0] * fx[1], fx[0], fx[1], fx[0], ot[0] * ot[1], ot[0], ot[1])
      if isinstance(fx, tuple) and isinstance(ot, tuple) else (fx, ot), "docs/gpu.md")
profile = read("docs/gpu-runs/2026-12-02-format3/profile-llama_tiny.log")
ms = {m: find(profile, rf"^{m}\s+\d+\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)$", re.M)
      for m in ("alone", "batched")}
shape = find(profile, r"^requests\s+(\d+) x \((\d+) prompt \+ (\d+) new tokens\)", re.M)
claim("GPU bench step times",
      find(gpu, r"bench` on it: (\S+) ms a batched step \((\d+) requests of (\d+) \+ (\d+) "
                r"tokens\) and (\S+) ms a step alone"),
      ms["batched"] and ms["alone"] and shape and
      ((f"{float(ms['batched']):.2g}",) + shape + (f"{float(ms['alone']):.2g}",)), "docs/gpu.md")
# The chunk widths of numerics.md's table (and its examples) by the rule, with
# the widths of include/lockstep/Reductions/Chunking.h.
chunking = read("include/lockstep/Reductions/Chunking.h")
cmax, cmin, cdyn = (int(find(chunking, rf"{k} = (\d+)")) for k in ("maxChunk", "minChunk", "dynamicChunk"))


def width(n):
    if n <= cmax:
        return n
    return next((c for c in range(cmax, cmin - 1, -1) if n % c == 0), cmax)


table = find(numerics, r"\| static, `L <= (\d+)` \| `L` .*? \| \| static, `L > (\d+)` \| the largest divisor "
                       r"of `L` in `\[(\d+), (\d+)\]` \(([^)]*)\) \| \| static, no such divisor \| (\d+), "
                       r"with a tail \((\d+): one chunk and a tail of (\d+)\) \| \| dynamic \| (\d+) \|")
claim("chunk widths", table and table[:4] + table[5:6] + table[8:],
      tuple(map(str, (cmax, cmax, cmin, cmax, cmax, cdyn))), "docs/numerics.md")
examples = table and [tuple(map(int, e.split(": "))) for e in table[4].split(", ")]
claim("chunk width examples", examples, [(n, width(n)) for n, _ in examples or [(0, 0)]],
      "docs/numerics.md")
tail_n = table and int(table[6])
claim("chunk width with a tail", table and (table[6], table[7]),
      tail_n and (str(tail_n), str(tail_n % width(tail_n))) if tail_n and tail_n % width(tail_n) and
      all(tail_n % c for c in range(cmin, cmax + 1)) else "no tail", "docs/numerics.md")
# The mask proof's grid (passes/ProveMask.cpp, include/lockstep/Serving/Evaluate.h).
prove = read("passes/ProveMask.cpp")
grid = (find(prove, r"for \(int64_t t = 1; t <= (\d+); \+\+t\)"),
        find(prove, r"for \(int64_t t : \{([\d, ]+)\}\)"),
        find(prove, r"a >= (\d+) && a <= double\(1 << (\d+)\)"))
claim("mask proof grid",
      find(numerics, r"contexts of 1 to (\d+) positions, ([\d, ]+), and `c - 1 \.\. c \+ 2`, `2c`, "
                     r"`2c \+ 1` for every integer constant `c` \((\d+) to 2\^(\d+)\)"),
      grid[2] and (grid[0], grid[1], grid[2][0], grid[2][1]), "docs/numerics.md")
claim("mask fill", find(numerics, r"masked \(false, or at or below `(-1e\d+)`"),
      find(prove, r"!\(fill->at\(0\) <= (-1e\d+)\)"), "docs/numerics.md")
claim("evaluator cap", find(numerics, r"Tensors are capped at 2\^(\d+) elements"),
      find(read("include/lockstep/Serving/Evaluate.h"), r"maxElements = int64_t\(1\) << (\d+)\)"),
      "docs/numerics.md")
# The negative controls' defaults (include/lockstep/Passes/Passes.td).
td = read("include/lockstep/Passes/Passes.td")
rows_, chunk_ = (find(td, rf'Option<"{o}", "[a-z-]+", "int64_t", /\*default=\*/"(\d+)"')
                 for o in ("adaptiveRows", "adaptiveChunk"))
claim("adaptive control", find(numerics, r"with fewer than (\d+) rows it is split into chunks of (\d+),"),
      (rows_, chunk_), "docs/numerics.md")
claim("adaptive-kv control", find(numerics, r"key chunks \(split-KV\) are (\d+) keys wide when the query "
                                            r"has fewer than (\d+) rows"), (chunk_, rows_), "docs/numerics.md")
claim("adaptive-threads control", find(numerics, r"every such reduction split into chunks of (\d+) when"),
      chunk_, "docs/numerics.md")
# The canonical NaN of each float type, from runtime/Exec.cpp's (exponent,
# mantissa) bits: sign clear, exponent all ones, quiet bit set, payload 0.
nan_bits = [tuple(map(int, g)) for g in re.findall(
    r"canonicalizeNaNs\(static_cast<uint\d+_t \*>\(data\), bytes / \d, (\d+), (\d+)\);",
    read("runtime/Exec.cpp"))]
claim("canonical NaNs",
      find(numerics, r"\(`(0x[0-9a-f]+)` in f32, `(0x[0-9a-f]+)` in f64, `(0x[0-9a-f]+)` in f16, "
                     r"`(0x[0-9a-f]+)` in bf16;"),
      tuple(f"0x{((1 << e) - 1) << m | 1 << (m - 1):0{(1 + e + m) // 4}x}" for e, m in nan_bits),
      "docs/numerics.md")
claim("head sizes in one chunk", find(numerics, r"one whole chunk for head sizes up to (\d+)\)"),
      str(cmax), "docs/numerics.md")
words_n = {"two": 2, "three": 3, "four": 4, "five": 5}
claim("controls' models", words_n.get(find(numerics, r"the latter for (\w+) models")),
      len(re.findall(r"%models/\S+\.onnx", read("test/Fuzz/controls.test"))), "docs/numerics.md")
claim("huge Slice end", find(flat("docs/shapes.md"), r"an end of 2\^(\d+) or more means"),
      find(read("include/lockstep/Shape/ShapeInference.h"), r"kHugeSliceIndex = int64_t\(1\) << (\d+);"),
      "docs/shapes.md")
claim("GPU block", find(gpu, r"flattened to one dim \((\d+) threads a block"),
      find(read("include/lockstep/GPU/ParallelPoints.h"), r"kFlatLaunchBlock = (\d+);"),
      "docs/gpu.md")
claim("artifact format", find(gpu, r"The artifact \(format version (\d+),"),
      find(read("include/lockstep/Artifact/Artifact.h"), r"kArtifactFormatVersion = (\d+);"),
      "docs/gpu.md")
assembled = find(read("test/GPU/ptx-models.test"), r"--assemble ([^|]+?) \|")
claim("models assembled by ptxas", words_n.get(find(gpu, r"assemble the kernels of (\w+) for sm_90")),
      assembled and len(assembled.split()), "docs/gpu.md")
claim("values tracked", find(flat("docs/shapes.md"), r"Integer tensors of at most (\d+) elements"),
      find(read("include/lockstep/Shape/ShapeInference.h"), r"kMaxTrackedElements = (\d+);"),
      "docs/shapes.md")
interrupted = find(read("tools/lockstep-run/Commands.h"), r"kInterruptedStatus = (\d+);")
claim("SIGINT status", find(readme, r"report, and exits (\d+)"), interrupted)
claim("SIGINT status", (find(serving, r"unfinished ones .*? and exits (\d+)\."),
                        find(serving, r"mismatch; (\d+) when SIGINT")),
      (interrupted, interrupted), "docs/serving.md")
fuzz_src = read("harness/Fuzz.cpp")
words = {"0.25": "quarter", "0.5": "half"}
wide = words.get(find(fuzz_src, r"wide: every request.*?bool wide = knobs\.chance\(([0-9.]+)\)", re.S))
claim("wide schedules", find(serving, r"A (\w+) of the schedules are wide"), wide, "docs/serving.md")
claim("wide schedules", find(readme, r"a (\w+) of them wide"), wide)
claim("tight KV budgets", find(serving, r"KV budgets that are tight (\w+) of the time"),
      words.get(find(fuzz_src, r"s\.kvBlocks = knobs\.chance\(([0-9.]+)\)")), "docs/serving.md")
exports = sorted({find(p, r"(\d+)\.onnx$") for p in models if p.startswith("torch" + os.sep)})
claim("exporters' opsets", find(readme, r"neither exporter emits them at opsets (\d+) and (\d+)"),
      tuple(exports), "README (models/torch names)")
# The row checks' thread count: every rows-*.test runs lockstep-rowcheck on it.
words_t = {"one": 1, "two": 2, "three": 3, "four": 4}
threads = {find(read(f"test/Invariance/rows-{k}.test"), r"lockstep-rowcheck \S+ .*?--threads (\d+)")
           for k in ("matmul", "norm", "softmax")}
claim("row checks' threads", words_t.get(find(numerics, r"M = 1\.\.\d+ rows \((\w+) threads?\)")),
      int(threads.pop()) if len(threads) == 1 and None not in threads else threads, "docs/numerics.md")
# contract.test's static length: the second matmul's reduced dim in its model.
claim("contract's static matmul", find(numerics, r"one over a static (\d+),"),
      find(read("test/Invariance/Inputs/sums.onnxtxt"), r"float\[(\d+), \d+\] W2"),
      "docs/numerics.md")
# shapes.md's GPT-2 mask buffer: the positions of the GPT-2 fixtures' config.
claim("GPT-2 positions", find(flat("docs/shapes.md"), r"of (\d+) positions is sliced"),
      find(read("models/export_torch.py"), r"n_positions=(\d+)"), "docs/shapes.md")
# The flags of each GPU run that gpu.md states: those of its recorded command.
commands = read("docs/gpu-runs/2026-12-02-format3/commands.txt")
for run, stated in (("run1", find(gpu, r"`run1\.log` the [^(]*\(`([^`]+)`\)")),
                    ("run2", find(gpu, r"`run2\.log` the GPU phase \(`([^`]+)`\)")),
                    ("run3", find(gpu, r"`run3\.log` the GPU campaigns [^(]*\(`--cases`, `([^`]+)`\)"))):
    flags = find(commands, rf"^{run}\.log: .*?lockstep-run (.*)$", re.M) or ""
    wanted = stated and [f for f in re.findall(r"--\S+ \S+", flags)
                         if not f.startswith(("--phases", "--cases"))]
    claim(f"{run}'s flags", stated, wanted and " ".join(wanted), "docs/gpu.md")
print(f"doc numbers: {checked} checked, {wrong} wrong")
sys.exit(1 if wrong else 0)
