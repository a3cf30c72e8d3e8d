#!/usr/bin/env python3
"""Runs the ONNX backend node tests through Lockstep's CPU backend.

The tests come from two places: the PyPI onnx package's
onnx/backend/test/data/node (named `test_x`) and Debian's libonnx-testdata
(onnx 1.12). A Debian test whose graph, opsets and data are those of the PyPI
test of the same name is a duplicate and is skipped; one that differs (an
older opset, other data) is a test of its own, named `debian/test_x`.

A test is attempted when every node of its graph is an op of the onnx dialect
(the mnemonics of include/lockstep/Dialect/ONNX/ONNXOps.td) and its default
domain opset is one that the importer takes (13 to 21); the others are "not
applicable", counted by reason. An attempted test is compiled with
lockstep-opt, each of its data sets is run with `lockstep-run exec`, and each
output is compared with the expected one as onnx's backend test runner does:
numpy.testing.assert_allclose with the test's rtol/atol (data.json, else
rtol=1e-3, atol=1e-7; NaN equals NaN), after checking dtype and shape. Integer
and bool outputs must be equal exactly.

usage:
  run_node_tests.py --work DIR [--passing FILE] [--json FILE] [--doc FILE]
                    [--expect FILE] [--jobs N] [--filter REGEX]

--expect FILE fails (exit 1) when a test listed in FILE does not pass; tests
that pass and are not listed are reported with the command that regenerates
the list. Without --expect the exit status is 0 unless the driver itself fails.

--bind-shape-inputs also reruns each test that failed because a shape depends
on an input's values (axes, a Reshape shape, Slice starts, split sizes: the
node tests pass them as graph inputs, which a compiler of static-rank,
symbolic-dim graphs cannot size) with its small integer inputs made
initializers holding data set 0's values. That is not the test as ONNX
defines it, so it is reported apart (and in the JSON under "bound"), never in
the passing list or the doc; it exercises the lowering of those ops.
"""
import argparse
import collections
import glob
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
OPSETS = range(13, 22)
DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-7
# Why some tests fail, where the message alone does not say it (the doc shows
# it after the message).
KNOWN = {
    **{name: "the test expects f32 to bf16 by truncation (onnx's reference Cast); "
             "Lockstep rounds to nearest even, as onnxruntime and PyTorch do"
       for name in ("test_cast_FLOAT_to_BFLOAT16", "test_castlike_FLOAT_to_BFLOAT16",
                    "test_castlike_FLOAT_to_BFLOAT16_expanded",
                    "debian/test_cast_FLOAT_to_BFLOAT16")},
    **{f"debian/{name}": "the test's `like` input is [1] where the model declares "
                         "[3, 4] (libonnx-testdata 1.12's data)"
       for name in ("test_castlike_BFLOAT16_to_FLOAT", "test_castlike_BFLOAT16_to_FLOAT_expanded",
                    "test_castlike_FLOAT_to_BFLOAT16",
                    "test_castlike_FLOAT_to_BFLOAT16_expanded")},
}
REGENERATE = ("PATH=$PWD/build/bin:$PATH .venv/bin/python test/Conformance/run_node_tests.py "
              "--work /tmp/lockstep-node-tests "
              "--passing test/Conformance/passing.txt --doc docs/conformance.md "
              "--json /tmp/lockstep-node-tests.json")


def dialect_ops():
    td = open(os.path.join(SOURCE, "include/lockstep/Dialect/ONNX/ONNXOps.td")).read()
    return set(re.findall(r'def ONNX_\w+Op\s*:\s*ONNX_\w+<"(\w+)"', td))


def pypi_dir():
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def debian_dir():
    try:
        out = subprocess.run(["dpkg", "-L", "libonnx-testdata"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for line in out.splitlines():
        if line.endswith("/data/node"):
            return line
    return None


def load_model(d):
    return onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)


def content_key(d, model):
    """What a test is: its graph, its opsets and its data."""
    h = hashlib.sha1(model.graph.SerializeToString(deterministic=True))
    for o in sorted((o.domain, o.version) for o in model.opset_import):
        h.update(repr(o).encode())
    for f in sorted(glob.glob(os.path.join(d, "test_data_set_*", "*.pb"))):
        h.update(os.path.relpath(f, d).encode())
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()


def tolerance(d):
    rtol, atol = DEFAULT_RTOL, DEFAULT_ATOL
    p = os.path.join(d, "data.json")
    if os.path.exists(p):
        with open(p) as f:
            data = json.load(f)
        rtol, atol = data.get("rtol", rtol), data.get("atol", atol)
    return rtol, atol


def node_op(n):
    return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"


def main_op(name, root, graph_ops):
    """The op that a test is about. An expanded test (`test_x_expanded`) is
    about the op of `test_x`, whose graph is that one op; another test is
    about the op of its graph, or, when it has several, the one whose name
    its name starts with (ignoring case and underscores)."""
    base = re.sub(r"_expanded(_ver\d+)?$", "", name)
    if base != name and os.path.exists(os.path.join(root, base, "model.onnx")):
        ops = {node_op(n) for n in load_model(os.path.join(root, base)).graph.node}
        if len(ops) == 1:
            return ops.pop()
    if len(graph_ops) == 1:
        return next(iter(graph_ops))
    key = name[len("test_"):].replace("_", "").lower()
    best = None
    for op in graph_ops:
        if key.startswith(op.lower()) and (best is None or len(op) > len(best)):
            best = op
    return best


def collect(ops, dirs):
    """All tests: (id, dir, status, reason, ops, main op, rtol, atol)."""
    tests, seen = [], {}
    for source, root in dirs:
        if not root or not os.path.isdir(root):
            continue
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            if not os.path.exists(os.path.join(d, "model.onnx")):
                continue
            model = load_model(d)
            key = content_key(d, model)
            if source == "debian":
                if seen.get(name) == key:
                    continue
                tid = name if name not in seen else f"debian/{name}"
            else:
                tid = name
                seen[name] = key
            graph_ops = [node_op(n) for n in model.graph.node]
            opset = next((o.version for o in model.opset_import
                          if o.domain in ("", "ai.onnx")), None)
            t = {"id": tid, "dir": d, "ops": sorted(set(graph_ops)),
                 "main_op": main_op(name, root, set(graph_ops))}
            t["rtol"], t["atol"] = tolerance(d)
            unknown = sorted(set(graph_ops) - ops)
            if unknown:
                t["status"] = "not applicable"
                t["reason"] = "op not in the dialect: " + ", ".join(unknown)
                t["why"] = "op"
            elif opset not in OPSETS:
                t["status"], t["why"] = "not applicable", "opset"
                t["reason"] = f"opset {opset} is outside 13..21"
            else:
                t["status"] = "attempted"
            tests.append(t)
    return tests


def first_line(text, model_dir):
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line.replace(model_dir + "/", "").replace(model_dir, ".")
    return "(no message)"


def to_npy(pb_path):
    t = onnx.TensorProto()
    with open(pb_path, "rb") as f:
        t.ParseFromString(f.read())
    if t.data_type == onnx.TensorProto.BFLOAT16:
        # numpy has no bfloat16: the runtime takes its bits as uint16.
        bits = np.array(t.int32_data, dtype=np.uint32).astype(np.uint16) if not t.raw_data \
            else np.frombuffer(t.raw_data, dtype=np.uint16)
        return t.name, bits.reshape(tuple(t.dims)), True
    return t.name, numpy_helper.to_array(t), False


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def compare(got, want, is_bf16, rtol, atol):
    """None when `got` agrees with `want`, else the reason."""
    if is_bf16:
        if got.dtype != np.uint16:
            return f"dtype {got.dtype}, expected bfloat16 (uint16 bits)"
        got, want = bf16_to_f32(got), bf16_to_f32(want)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if not np.issubdtype(want.dtype, np.number) or np.issubdtype(want.dtype, np.integer):
        if np.array_equal(got, want):
            return None
        bad = int(np.sum(got != want))
        return f"{bad} of {want.size} elements differ (exact comparison)"
    try:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        return None
    except AssertionError:
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        with np.errstate(invalid="ignore"):
            err = np.where(both_nan, 0.0, np.abs(g - w))
        err = np.where(np.isnan(err), np.inf, err)
        bad = int(np.sum(~(err <= atol + rtol * np.abs(w)) & ~both_nan))
        return (f"mismatch: max abs error {float(np.max(err)):.3g}, {bad} of {want.size} "
                f"elements beyond rtol={rtol:g} atol={atol:g}")


SHAPE_VALUE_REASONS = ("values of", "not known", "must be a constant", "must be known",
                       "Range needs")


def bind_inputs(d, out, model):
    """Makes the integer inputs of at most 64 elements of `model` initializers
    with data set 0's values; returns the bound names and the data sets that
    agree with them."""
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    bound = {}
    for i, name in enumerate(inputs):
        p = os.path.join(sets[0], f"input_{i}.pb")
        if not os.path.exists(p):
            continue
        _, arr, _ = to_npy(p)
        if arr.dtype in (np.int32, np.int64) and arr.size <= 64:
            bound[name] = (i, arr)
    keep = [ds for ds in sets
            if all(np.array_equal(to_npy(os.path.join(ds, f"input_{i}.pb"))[1], a)
                   for i, a in bound.values())]
    for name, (_, arr) in bound.items():
        model.graph.initializer.append(numpy_helper.from_array(arr, name))
    rest = [i for i in model.graph.input if i.name not in bound]
    del model.graph.input[:]
    model.graph.input.extend(rest)
    path = os.path.join(out, "bound.onnx")
    onnx.save(model, path)
    return path, sorted(bound), keep


def run_test(args):
    t, opt, run, work = args
    start = time.time()
    d = t["dir"]
    out = os.path.join(work, t["id"].replace("/", "__") + (".bound" if t.get("bind") else ""))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    model = load_model(d)
    model_path = os.path.join(d, "model.onnx")
    sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    # The graph inputs in the order of the input_*.pb files.
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    if t.get("bind"):
        model_path, bound, sets = bind_inputs(d, out, model)
        t = dict(t, bound=bound)
        if not bound:
            return dict(t, result="FAIL", reason="no integer input to bind", seconds=0)
    lsa = os.path.join(out, "model.lsa")
    try:
        r = subprocess.run([opt, model_path, "-o", lsa],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return dict(t, result="FAIL", reason="compile: timed out after 120 s",
                    seconds=time.time() - start)
    if r.returncode != 0:
        return dict(t, result="FAIL",
                    reason="compile: " + first_line(r.stderr, os.path.dirname(model_path)),
                    seconds=time.time() - start)
    compile_s = time.time() - start
    outputs = [o.name for o in model.graph.output]
    for ds in sets:
        dsname = os.path.basename(ds)
        dout = os.path.join(out, dsname)
        os.makedirs(dout)
        cmd = [run, "exec", lsa, "--output-dir", os.path.join(dout, "out")]
        n_in = len(glob.glob(os.path.join(ds, "input_*.pb")))
        for i in range(n_in):
            pbname, arr, _ = to_npy(os.path.join(ds, f"input_{i}.pb"))
            name = inputs[i] if i < len(inputs) else pbname
            if name in t.get("bound", ()):
                continue
            p = os.path.join(dout, f"input_{i}.npy")
            np.save(p, arr)
            cmd += ["--input", f"{name}={p}"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return dict(t, result="FAIL", reason=f"run ({dsname}): timed out after 60 s",
                        seconds=time.time() - start, compile_seconds=compile_s)
        if r.returncode != 0:
            msg = first_line(r.stderr or r.stdout, d)
            if r.returncode < 0:
                msg = f"killed by signal {-r.returncode}" + (f": {msg}" if r.stderr else "")
            return dict(t, result="FAIL", reason=f"run ({dsname}): {msg}",
                        seconds=time.time() - start, compile_seconds=compile_s)
        n_out = len(glob.glob(os.path.join(ds, "output_*.pb")))
        for i in range(n_out):
            _, want, is_bf16 = to_npy(os.path.join(ds, f"output_{i}.pb"))
            name = outputs[i]
            p = os.path.join(dout, "out", name + ".npy")
            if not os.path.exists(p):
                return dict(t, result="FAIL", reason=f"output {name!r} was not written",
                            seconds=time.time() - start, compile_seconds=compile_s)
            why = compare(np.load(p), want, is_bf16, t["rtol"], t["atol"])
            if why:
                return dict(t, result="FAIL", reason=f"output {name!r} ({dsname}): {why}",
                            seconds=time.time() - start, compile_seconds=compile_s)
    shutil.rmtree(out, ignore_errors=True)
    return dict(t, result="PASS", reason="", seconds=time.time() - start,
                compile_seconds=compile_s)


def write_doc(path, results, counts, command, ops):
    attempted = [r for r in results if r["status"] == "attempted"]
    by_main = collections.defaultdict(list)
    by_use = collections.defaultdict(list)
    for r in attempted:
        m = r["main_op"]
        by_main[m if m in ops else f"{m or 'other'} (function)"].append(r)
        for op in r["ops"]:
            by_use[op].append(r)
    passing = sum(r["result"] == "PASS" for r in attempted)
    lines = [
        "# ONNX node-test conformance (CPU)",
        "",
        "<!-- Generated by test/Conformance/run_node_tests.py: do not edit. -->",
        "",
        "The ONNX backend node tests (the PyPI onnx package's, and Debian's "
        "libonnx-testdata where it differs, as `debian/...`) run through `lockstep-opt` "
        "and `lockstep-run exec` on the CPU, compared with each test's expected outputs "
        "at its own tolerance (rtol 1e-3, atol 1e-7 unless the test says otherwise; "
        "integers and bools exactly). A test is attempted when all its ops are ops of "
        "the dialect and its opset is 13 to 21. Regenerate this page and "
        "`test/Conformance/passing.txt` with:",
        "",
        "```",
        command,
        "```",
        "",
        f"**{passing} of {len(attempted)} attempted tests pass.** Not applicable: "
        + ", ".join(f"{n} ({why})" for why, n in counts) + ".",
        "",
        "An op's tests are those of a graph of that op (`test_reduce_sum_*` are "
        "ReduceSum's), and their `_expanded` forms, where the op is replaced by its "
        "function body; an op outside the dialect is attempted only through such "
        "a body and is marked (function). The last two columns count every attempted "
        "test whose graph uses the op.",
        "",
        "| op | its tests | pass | tests using it | pass |",
        "|---|---:|---:|---:|---:|",
    ]
    names = sorted(set(by_main) | set(by_use), key=lambda s: (s.endswith("(function)"), s))
    for op in names:
        m, u = by_main.get(op, []), by_use.get(op, [])
        lines.append(f"| {op} | {len(m)} | {sum(r['result'] == 'PASS' for r in m)} | "
                     f"{len(u)} | {sum(r['result'] == 'PASS' for r in u)} |")
    lines += ["", "## Failing tests", ""]
    any_fail = False
    for op in names:
        fails = sorted((r for r in by_main.get(op, []) if r["result"] != "PASS"),
                       key=lambda r: r["id"])
        if not fails:
            continue
        any_fail = True
        lines += [f"### {op}", ""]
        for r in fails:
            note = f"; note: {KNOWN[r['id']]}" if r["id"] in KNOWN else ""
            lines.append(f"- `{r['id']}`: {r['reason'].replace('|', '/')}{note}")
        lines.append("")
    if not any_fail:
        lines += ["None.", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="scratch directory")
    ap.add_argument("--opt", default=None, help="lockstep-opt (default: from PATH)")
    ap.add_argument("--run", default=None, help="lockstep-run (default: from PATH)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--filter", default=None, help="only tests whose id matches")
    ap.add_argument("--passing", help="write the sorted ids of passing tests here")
    ap.add_argument("--json", help="write the full results here")
    ap.add_argument("--doc", help="write the conformance page here")
    ap.add_argument("--expect", help="fail if a test listed here does not pass")
    ap.add_argument("--pypi-dir", default=pypi_dir())
    ap.add_argument("--debian-dir", default=None)
    ap.add_argument("--quiet", action="store_true", help="print failures only")
    ap.add_argument("--bind-shape-inputs", action="store_true",
                    help="rerun tests whose shapes depend on input values with those "
                         "inputs bound as constants (reported apart)")
    args = ap.parse_args()
    opt = args.opt or shutil.which("lockstep-opt")
    run = args.run or shutil.which("lockstep-run")
    if not opt or not run:
        sys.exit("run_node_tests.py: lockstep-opt and lockstep-run must be on PATH "
                 "(or given with --opt/--run)")
    start = time.time()
    tests = collect(dialect_ops(), [("pypi", args.pypi_dir),
                                    ("debian", args.debian_dir or debian_dir())])
    if args.filter:
        tests = [t for t in tests if re.search(args.filter, t["id"])]
    todo = [t for t in tests if t["status"] == "attempted"]
    os.makedirs(args.work, exist_ok=True)
    results = {t["id"]: dict(t, result="N/A") for t in tests if t["status"] != "attempted"}
    with multiprocessing.Pool(args.jobs) as pool:
        for r in pool.imap_unordered(run_test, [(t, opt, run, args.work) for t in todo]):
            results[r["id"]] = r
            if not args.quiet or r["result"] != "PASS":
                line = f"{r['result']} {r['id']}"
                print(line + (f": {r['reason']}" if r["reason"] else ""), flush=True)
    results = [results[k] for k in sorted(results)]
    bound_results = []
    if args.bind_shape_inputs:
        retry = [dict(r, bind=True) for r in results
                 if r["result"] == "FAIL" and r["reason"].startswith("compile:")
                 and any(k in r["reason"] for k in SHAPE_VALUE_REASONS)]
        with multiprocessing.Pool(args.jobs) as pool:
            for r in pool.imap_unordered(run_test, [(t, opt, run, args.work) for t in retry]):
                bound_results.append(r)
                if not args.quiet or r["result"] != "PASS":
                    print(f"{r['result']} {r['id']} [bound: {', '.join(r.get('bound', []))}]"
                          + (f": {r['reason']}" if r["reason"] else ""), flush=True)
        bound_results.sort(key=lambda r: r["id"])
    elapsed = time.time() - start

    attempted = [r for r in results if r["status"] == "attempted"]
    passed = sorted(r["id"] for r in attempted if r["result"] == "PASS")
    na = collections.Counter(r["why"] for r in results if r["status"] != "attempted")
    counts = [("op not in the dialect", na["op"]), ("opset outside 13..21", na["opset"])]
    print(f"\n{len(results)} node tests: {len(results) - len(attempted)} not applicable ("
          + ", ".join(f"{why}: {n}" for why, n in counts) + f"); {len(attempted)} attempted: "
          f"{len(passed)} passed, {len(attempted) - len(passed)} failed ({elapsed:.0f} s, "
          f"{args.jobs} jobs)")
    if args.bind_shape_inputs:
        print(f"with shape inputs bound as constants: "
              f"{sum(r['result'] == 'PASS' for r in bound_results)} of {len(bound_results)} "
              f"tests that failed for unknown input values pass")
    slow = sorted(attempted, key=lambda r: -r.get("seconds", 0))[:5]
    total_s = sum(r.get("seconds", 0) for r in attempted)
    comp_s = sum(r.get("compile_seconds", r.get("seconds", 0)) for r in attempted)
    print(f"time per test: {total_s / max(1, len(attempted)):.2f} s on average, "
          f"{100 * comp_s / max(total_s, 1e-9):.0f}% of it compiling; slowest: "
          + ", ".join(f"{r['id']} {r.get('seconds', 0):.1f} s" for r in slow))

    if args.passing:
        with open(args.passing, "w") as f:
            f.write("".join(p + "\n" for p in passed))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"elapsed_seconds": elapsed, "jobs": args.jobs,
                       "not_applicable": dict(counts), "attempted": len(attempted),
                       "passed": len(passed), "tests": results, "bound": bound_results},
                      f, indent=1)
    if args.doc:
        write_doc(args.doc, results, counts, REGENERATE, dialect_ops())

    status = 0
    if args.expect:
        with open(args.expect) as f:
            expected = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        by_id = {r["id"]: r for r in results}
        regressions = [e for e in expected
                       if e not in by_id or by_id[e].get("result") != "PASS"]
        if args.filter:
            regressions = [e for e in regressions if re.search(args.filter, e)]
        new = sorted(set(passed) - set(expected))
        for e in regressions:
            r = by_id.get(e)
            why = r["reason"] if r else "no such test"
            print(f"REGRESSION {e}: {why}")
        if new:
            print(f"{len(new)} tests pass that {args.expect} does not list: "
                  + ", ".join(new))
            print(f"  regenerate the list: {REGENERATE}")
        print(f"{len(expected)} expected to pass, {len(regressions)} regressions")
        status = 1 if regressions else 0
    return status


if __name__ == "__main__":
    sys.exit(main())
