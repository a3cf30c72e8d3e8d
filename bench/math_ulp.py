#!/usr/bin/env python3
"""Measures the ulp error of Lockstep's fp32 math through the product path.

For each function, a one-op ONNX model over a 1-D dynamic tensor is compiled
with `lockstep-opt model.onnx -o f.lsa` and run with `lockstep-run exec` on a
sample of fp32 inputs; the reference is the function in double precision
(C's libm, via a small helper compiled at run time), and

    ulp error = |y - ref| / ulp(ref rounded to fp32),

with ulp(r) the spacing of fp32 at |r| (2^-149 for subnormals and zero).
Two figures are reported: against the double reference (fractional) and
against the reference rounded to fp32 (an integer: the bound is checked on
this one). Where the double reference is exactly NaN, +-inf or +-0 the
result must be the same (NaN, or bit for bit).

Samples (per unary function): every STRIDE-th fp32 bit pattern over all
2^32 (both signs, subnormals, infinities and NaNs included), plus the 2^14
fp32 neighbours on each side of special points (0, +-1, thresholds of the
algorithms, overflow and underflow limits, the fp32 values nearest to
multiples of pi/2, ...). pow: a 2-D sample, see pow_sample().

  bench/math_ulp.py                 full run (stride 61, ~7e7 points per
                                    function), rewrites docs/math.md
  bench/math_ulp.py --quick         stride 4099 (~1e6 points), no docs;
                                    exit status 1 if a bound or a special
                                    value fails (the lit test)
"""
import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(shutil.which("lockstep-opt") or os.path.join(ROOT, "build", "bin", "x"))
CHUNK = 1 << 23

# name: (ONNX op chain, C reference expression, bound in ulp or None)
FUNCS = {
    "exp": (["Exp"], "exp(x)", 2),
    "log": (["Log"], "log(x)", None),
    "tanh": (["Tanh"], "tanh(x)", 2),
    "sigmoid": (["Sigmoid"], "1.0 / (1.0 + exp(-x))", 2),
    "erf": (["Erf"], "erf(x)", 2),
    "sin": (["Sin"], "sin(x)", None),
    "cos": (["Cos"], "cos(x)", None),
    "rsqrt": (["Sqrt", "Reciprocal"], "1.0 / sqrt(x)", None),
    "pow": (["Pow"], "pow(x, y)", None),
}
# Bounds for the functions the contract does not bound, set a little above
# what is measured so that a regression fails the quick test.
SOFT_BOUNDS = {"log": 2, "sin": 2, "cos": 2, "rsqrt": 1, "pow": 3}

C_SOURCE = r"""
#include <math.h>
#define F1(name, expr) void name(const float *in, double *out, long n) { \
  for (long i = 0; i < n; ++i) { double x = in[i]; out[i] = expr; } }
#define F2(name, expr) void name(const float *a, const float *b, double *out, long n) { \
  for (long i = 0; i < n; ++i) { double x = a[i], y = b[i]; out[i] = expr; } }
"""


def build_reference(tmp):
    src = C_SOURCE
    for name, (_, expr, _) in FUNCS.items():
        src += ("F2" if name == "pow" else "F1") + f"(ref_{name}, {expr})\n"
    c = os.path.join(tmp, "ref.c")
    so = os.path.join(tmp, "ref.so")
    with open(c, "w") as f:
        f.write(src)
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-fno-fast-math", c, "-o", so, "-lm"],
                   check=True)
    return ctypes.CDLL(so)


def reference(lib, name, *args):
    n = args[0].size
    out = np.empty(n, np.float64)
    ptrs = [a.ctypes.data_as(ctypes.c_void_p) for a in args]
    getattr(lib, f"ref_{name}")(*ptrs, out.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(n))
    return out


def build_model(tmp, name):
    ops = FUNCS[name][0]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])]
    names = ["x"]
    if name == "pow":
        inputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"]))
        names = ["x", "y"]
    nodes, prev = [], names
    for i, op in enumerate(ops):
        out = "z" if i + 1 == len(ops) else f"t{i}"
        nodes.append(helper.make_node(op, prev, [out]))
        prev = [out]
    graph = helper.make_graph(nodes, name, inputs,
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(tmp, f"{name}.onnx")
    onnx.save(model, path)
    lsa = os.path.join(tmp, f"{name}.lsa")
    subprocess.run([os.path.join(BIN, "lockstep-opt"), path, "-o", lsa], check=True)
    return lsa


def run_model(tmp, lsa, *arrays):
    """Runs the artifact over the arrays (chunked); returns the fp32 output."""
    outs = []
    for s in range(0, arrays[0].size, CHUNK):
        cmd = [os.path.join(BIN, "lockstep-run"), "exec", lsa, "--threads", "2",
               "--output-dir", os.path.join(tmp, "out")]
        for nm, a in zip("xy", arrays):
            p = os.path.join(tmp, f"{nm}.npy")
            np.save(p, a[s:s + CHUNK])
            cmd += ["--input", f"{nm}={p}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        outs.append(np.load(os.path.join(tmp, "out", "z.npy")))
    return np.concatenate(outs)


def from_bits(u):
    return np.asarray(u, np.uint32).view(np.float32)


def neighbours(points, radius):
    """The fp32 values within `radius` bit patterns of each point."""
    pts = np.asarray(points, np.float32).view(np.uint32).astype(np.int64)
    offs = np.arange(-radius, radius + 1, dtype=np.int64)
    u = (pts[:, None] + offs[None, :]).ravel()
    return from_bits((u & 0xFFFFFFFF).astype(np.uint32))


# Reduction limits and the fp32 argument closest to a multiple of pi/2
# (16367173 * 2^72, J.-M. Muller, Elementary Functions).
TRIG_HARD = [65536.0, -65536.0, 131072.0, -131072.0, 1e4, 1e38, 16367173 * 2.0**72,
             -16367173 * 2.0**72]


def special_points(name):
    pio2 = np.pi / 2
    common = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-30, -1e-30,
              np.finfo(np.float32).tiny, -np.finfo(np.float32).tiny]
    extra = {
        "exp": [88.72, 88.7228391, -87.33, -103.97, -104.0, 89.0, -0.346, 0.346],
        "log": [0.7071, 1.4142, 3.0e38, 1e-40, 0.9999, 1.0001],
        "tanh": [0.625, -0.625, 9.0, -9.0, 0.55],
        "sigmoid": [-87.0, -88.7, -103.9, 16.0, 17.0],
        "erf": [0.875, -0.875, 2.25, -2.25, 4.0, -4.0, 3.9],
        "sin": [k * pio2 for k in range(-40, 41)] + TRIG_HARD,
        "cos": [k * pio2 for k in range(-40, 41)] + TRIG_HARD,
        "rsqrt": [4.0, 1e38, 1e-38, 1e-45],
    }.get(name, [])
    return common + extra


def exact_specials(name):
    inf, nan = np.inf, np.nan
    v = [0.0, -0.0, inf, -inf, nan, 1e-45, -1e-45, 3.4028235e38, -3.4028235e38]
    return np.array(v, np.float32)


def unary_sample(name, stride):
    u = np.arange(0, 1 << 32, stride, dtype=np.uint64).astype(np.uint32)
    parts = [from_bits(u), neighbours(special_points(name), 1 << 14), exact_specials(name)]
    return np.concatenate(parts)


def pow_sample(stride, rng):
    """x: every (16*stride)-th positive fp32 and negatives; y such that
    y*log|x| spans [-110, 100] (non-trivial results), integer y with negative
    x, random bit patterns for both, and a grid of special values."""
    n = max((1 << 32) // (16 * stride), 4096)
    x = from_bits(rng.integers(0, 0x7F800000, n, dtype=np.uint32))
    t = rng.uniform(-110, 100, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = (t / np.log(x.astype(np.float64))).astype(np.float32)
    y[~np.isfinite(y)] = 1.5
    xi = -from_bits(rng.integers(0x3F000000, 0x42000000, n, dtype=np.uint32))
    yi = rng.integers(-40, 41, n).astype(np.float32)
    xr = from_bits(rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32))
    yr = from_bits(rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32))
    # x near 1 with large y (the hardest for log's accuracy).
    xn = neighbours([1.0], 1 << 12)
    yn = np.tile(np.float32(5e6), xn.size) * rng.uniform(-1, 1, xn.size).astype(np.float32)
    sv = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5,
                   np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -3.4e38, 8388609.0,
                   -8388609.0, 16777216.0], np.float32)
    gx, gy = np.meshgrid(sv, sv)
    xs = np.concatenate([x, xi, xr, xn, gx.ravel()])
    ys = np.concatenate([y, yi, yr, yn, gy.ravel()])
    return xs.astype(np.float32), ys.astype(np.float32)


def ulp_of(ref):
    r32 = np.abs(ref).astype(np.float32)
    with np.errstate(over="ignore"):
        sp = np.spacing(r32).astype(np.float64)
    return np.where(r32 == 0, 2.0**-149, sp), r32


def measure(name, y, ref, args):
    """Returns (max ulp vs double, max ulp vs fp32 ref, where, failures)."""
    y64 = y.astype(np.float64)
    fails = []
    nan_ref = np.isnan(ref)
    bad = nan_ref & ~np.isnan(y)
    bad |= ~nan_ref & np.isnan(y)
    exact = np.isinf(ref) | (ref == 0)
    with np.errstate(invalid="ignore"):
        sign_ne = np.signbit(ref) != np.signbit(y64)
        bad |= exact & ((y64 != ref) | sign_ne)
    ulp, r32 = ulp_of(np.where(nan_ref, 0.0, ref))
    r32s = np.copysign(r32, ref).astype(np.float64)
    finite = ~nan_ref & ~exact
    with np.errstate(invalid="ignore", over="ignore"):
        # ref finite in double but rounding to +-inf in fp32: y must be inf.
        ovf = finite & np.isinf(r32)
        bad |= ovf & (y64 != r32s)
        ok = finite & ~ovf
        e64 = np.where(ok, np.abs(y64 - ref) / ulp, 0.0)
        e32 = np.where(ok, np.abs(y64 - r32s) / ulp, 0.0)
        e64[ok & np.isinf(y64)] = np.inf
        e32[ok & np.isinf(y64)] = np.inf
    for i in np.flatnonzero(bad)[:5]:
        fails.append(f"{name}({', '.join(repr(float(a[i])) for a in args)}) = {float(y[i])!r}, "
                     f"expected {float(ref[i])!r}")
    nbad = int(bad.sum())
    i = int(np.argmax(e64))
    where = ", ".join(f"{float(a[i]):.9g}" for a in args)
    return float(e64.max()), float(e32.max()), where, fails, nbad


def main():
    np.seterr(all="ignore")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="~1e6 points, no docs")
    ap.add_argument("--stride", type=int, help="bit-pattern stride (default 61, quick 4099)")
    ap.add_argument("--only", help="comma-separated functions")
    ap.add_argument("--exhaustive", default=None,
                    help="comma-separated unary functions to also run on all 2^32 "
                         "inputs (lockstep-math-exhaustive); default in a full run: all")
    ap.add_argument("--max-ulp", type=float,
                    help="check every function against this bound instead (a negative "
                         "control: 0 must fail)")
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs", "math.md"))
    a = ap.parse_args()
    stride = a.stride or (4099 if a.quick else 61)
    names = a.only.split(",") if a.only else list(FUNCS)
    rng = np.random.default_rng(2026)
    rows, ex_rows, failed, lsas = [], [], False, {}
    if a.exhaustive is not None:
        exhaustive = a.exhaustive.split(",") if a.exhaustive else []
    else:
        exhaustive = [] if (a.quick or a.only) else list(FUNCS)
    with tempfile.TemporaryDirectory() as tmp:
        lib = build_reference(tmp)
        for name in names:
            t0 = time.time()
            lsa = build_model(tmp, name)
            if name == "pow":
                args = pow_sample(stride, rng)
            else:
                args = (unary_sample(name, stride),)
            y = run_model(tmp, lsa, *args)
            ref = reference(lib, name, *args)
            e64, e32, where, fails, nbad = measure(name, y, ref, args)
            bound = FUNCS[name][2] or SOFT_BOUNDS[name]
            if a.max_ulp is not None:
                bound = a.max_ulp
            status = "ok"
            if e32 > bound or nbad:
                status, failed = "FAIL", True
            print(f"{name:8s} points {args[0].size:>10d}  max ulp {e64:.3f} (vs fp32 ref "
                  f"{e32:.0f}, bound {bound})  at {where}  special mismatches {nbad}  "
                  f"{status}  [{time.time() - t0:.1f} s]", flush=True)
            for f in fails:
                print("  " + f)
            rows.append((name, args[0].size, e64, e32, where, nbad, bound))
            lsas[name] = lsa
        write = not a.quick and not a.only
        if write:
            write_docs(a.docs, rows, ex_rows, stride, exhaustive)
        # All 2^32 inputs, after the samples, docs rewritten after each function.
        for name in [n for n in EXHAUSTIVE_ORDER if n in exhaustive]:
            t0 = time.time()
            line = subprocess.run([os.path.join(BIN, "lockstep-math-exhaustive"), lsas[name],
                                   name], check=True, capture_output=True, text=True).stdout.split()
            kv = dict(zip(line[1::2], line[2::2]))
            bound = FUNCS[name][2] or SOFT_BOUNDS[name]
            if a.max_ulp is not None:
                bound = a.max_ulp
            ex = (name, int(kv["points"]), float(kv["max-ulp"]), float(kv["max-ulp-fp32"]),
                  kv["at"], int(kv["special-mismatches"]), bound)
            if ex[3] > bound or ex[5]:
                failed = True
            print(f"{name:8s} all 2^32 inputs: max ulp {ex[2]:.3f} (vs fp32 ref {ex[3]:.0f}) "
                  f"at {ex[4]}  special mismatches {ex[5]}  [{time.time() - t0:.1f} s]",
                  flush=True)
            ex_rows.append(ex)
            if write:
                write_docs(a.docs, rows, ex_rows, stride, exhaustive)
    print("FAIL" if failed else "all bounds hold")
    return 1 if failed else 0


RANGES = {
    "exp": "all fp32", "log": "all fp32", "tanh": "all fp32", "sigmoid": "all fp32",
    "erf": "all fp32", "sin": "all fp32 (up to FLT_MAX)",
    "cos": "all fp32 (up to FLT_MAX)", "rsqrt": "all fp32",
    "pow": "2-D sample (see below)",
}


# The exhaustive runs, cheapest and contract-bound first.
EXHAUSTIVE_ORDER = ["exp", "tanh", "sigmoid", "erf", "log", "rsqrt", "sin", "cos"]


def write_docs(path, rows, ex_rows, stride, planned):
    tmpl = open(os.path.join(ROOT, "bench", "math_doc_template.md")).read()
    table = ["| function | range | points | max ulp (vs double) | max ulp (vs fp32-rounded) "
             "| bound | where (max) | special-value mismatches |",
             "|---|---|---|---|---|---|---|---|"]
    for name, n, e64, e32, where, nbad, bound in rows:
        table.append(f"| {name} | {RANGES[name]} | {n} | {e64:.3f} | {e32:.0f} | {bound} "
                     f"| {where} | {nbad} |")
    ex = ["| function | points | max ulp (vs double) | max ulp (vs fp32-rounded) | bound "
          "| where (max) | special-value mismatches |", "|---|---|---|---|---|---|---|"]
    for name, n, e64, e32, where, nbad, bound in ex_rows:
        ex.append(f"| {name} | {n} (all) | {e64:.3f} | {e32:.0f} | {bound} | {where} | {nbad} |")
    done = {r[0] for r in ex_rows}
    for name in EXHAUSTIVE_ORDER:
        if name not in done:
            why = "not finished" if name in planned else "not run"
            ex.append(f"| {name} | ({why}) | | | | | |")
    text = tmpl.replace("@TABLE@", "\n".join(table)).replace("@STRIDE@", str(stride))
    text = text.replace("@EXHAUSTIVE@", "\n".join(ex))
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
