#!/usr/bin/env python3
"""Fits the polynomial coefficients of Lockstep's fp32 math functions.

Regenerates lib/Math/Coefficients.inc (C++, float hex literals):

    .venv/bin/python scripts/fit_math_coeffs.py > lib/Math/Coefficients.inc

Each polynomial is a weighted least-squares fit in double precision on 4000
Chebyshev nodes of its interval (near-minimax), with the weight making the
error relative to the quantity that matters for the final result. The
coefficients are then rounded to fp32 one at a time, lowest degree first,
and the remaining ones refitted, so that the rounding of a low-order
coefficient is compensated by the higher ones. Printed next to each set is the
maximum error of the rounded polynomial on a dense grid (evaluated in double).
"""
import math
import sys

import numpy as np


def f32(v):
    return float(np.float32(v))


def cheb_nodes(a, b, n=4000):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos((2 * k + 1) * np.pi / (2 * n))


def fit(target, basis_var, a, b, deg, weight=None, fixed=()):
    """Fits sum_i c_i * basis_var(x)^i, i = 0..deg, to target(x) on [a, b];
    `fixed` gives coefficients already chosen. Returns fp32-rounded coeffs."""
    x = cheb_nodes(a, b)
    t = target(x)
    u = basis_var(x)
    w = np.ones_like(x) if weight is None else weight(x)
    coeffs = list(fixed)
    while len(coeffs) <= deg:
        i0 = len(coeffs)
        resid = t - sum(c * u**i for i, c in enumerate(coeffs))
        A = np.stack([u**i for i in range(i0, deg + 1)], axis=1) * w[:, None]
        sol, *_ = np.linalg.lstsq(A, resid * w, rcond=None)
        coeffs.append(f32(sol[0]))
    x = np.linspace(a, b, 200001)
    err = (target(x) - sum(c * basis_var(x)**i for i, c in enumerate(coeffs)))
    if weight is not None:
        err = err * weight(x)
    return coeffs, float(np.max(np.abs(err)))


def series(fn, xs):
    return np.array([fn(float(v)) for v in xs])


out = []


def emit(name, coeffs, err, doc):
    out.append(f"// {doc}\n// max weighted error of the fp32 coefficients: {err:.3g}")
    body = ", ".join(float(c).hex() + "f" for c in coeffs)
    out.append(f"static const float {name}[] = {{{body}}};\n")


# exp(r) = 1 + r + r^2 * P(r), r in [-ln2/2, ln2/2]; error relative to exp(r).
h = math.log(2) / 2 + 1e-3
c, e = fit(lambda r: np.where(np.abs(r) < 1e-4, 0.5 + r / 6 + r * r / 24,
                              (np.expm1(r) - r) / np.where(r == 0, 1, r * r)),
           lambda r: r, -h, h, 5, weight=lambda r: r * r / np.exp(r))
emit("kExpP", c, e, "exp: exp(r) = 1 + r + r^2 * P(r) on [-ln2/2, ln2/2]")

# log1p(f) = f - f^2/2 + f^3 * P(f), f in [sqrt(1/2)-1, sqrt(2)-1]; error
# relative to log1p(f).
a, b = math.sqrt(0.5) - 1 - 1e-4, math.sqrt(2) - 1 + 1e-4
def logtail(f):
    small = np.abs(f) < 1e-3
    fs = np.where(small, 1.0, f)
    return np.where(small, 1 / 3 - f / 4 + f * f / 5,
                    (np.log1p(fs) - fs + fs * fs / 2) / fs**3)
c, e = fit(logtail, lambda f: f, a, b, 8,
           weight=lambda f: np.abs(f**3 / np.where(f == 0, 1, np.log1p(np.where(f == 0, 1, f)))))
emit("kLogP", c, e, "log: log1p(f) = f - f^2/2 + f^3 * P(f) on [sqrt(1/2)-1, sqrt(2)-1]")

# pow's log: log((1+s)/(1-s)) = 2s + 2/3 s^3 + s^5 * R(s^2), s^2 in
# [0, 0.0295]; error relative to the whole.
def atanhtail(z):
    s = np.sqrt(z)
    return np.array([sum(2 / (2 * k + 1) * zz**(k - 2) for k in range(2, 40))
                     for zz in z])
c, e = fit(atanhtail, lambda z: z, 0.0, 0.0295, 3,
           weight=lambda z: np.sqrt(z)**5 / (2 * np.sqrt(z) + 1e-300 + (z == 0)))
emit("kAtanhR", c, e, "pow: log((1+s)/(1-s)) = 2s + 2/3 s^3 + s^5 * R(s^2), s^2 <= 0.0295")

# tanh(x) = x + x^3 * P(x^2), |x| <= 0.625; error relative to tanh(x).
T = 0.625
def tanhtail(z):
    x = np.sqrt(z)
    xs = np.where(x < 1e-3, 1.0, x)
    return np.where(x < 1e-3, -1 / 3 + 2 * z / 15, (np.tanh(xs) - xs) / xs**3)
c, e = fit(tanhtail, lambda z: z, 0.0, T * T + 1e-4, 6,
           weight=lambda z: np.sqrt(z)**3 / np.tanh(np.sqrt(z) + (z == 0)))
emit("kTanhP", c, e, f"tanh: tanh(x) = x + x^3 * P(x^2) for |x| <= {T}")

# erf(x) = x + x * P(x^2), |x| <= 0.875; error relative to erf(x).
def erfsmall(z):
    return np.array([math.erf(math.sqrt(v)) / math.sqrt(v) - 1 if v > 0
                     else 2 / math.sqrt(math.pi) - 1 for v in z])
c, e = fit(erfsmall, lambda z: z, 0.0, 0.875**2 + 1e-4, 7,
           weight=lambda z: 1 / (1 + erfsmall(z)))
emit("kErfSmallP", c, e, "erf: erf(x) = x + x * P(x^2) for |x| <= 0.875")

# erf(x) = 1 - exp(Q(x)), Q ~ log(erfc(x)), on [0.875, 2.25] and [2.25, 3.92];
# absolute error in erf: |dQ| * erfc(x).
for lo, hi, name, deg in ((0.875, 2.25, "kErfMidQ", 9), (2.25, 4.0, "kErfTailQ", 9)):
    mid = (lo + hi) / 2
    c, e = fit(lambda x: series(lambda v: math.log(math.erfc(v)), x),
               lambda x: x - mid, lo - 1e-3, hi + 1e-3, deg,
               weight=lambda x: series(math.erfc, x))
    emit(name, c, e, f"erf: erf(x) = 1 - exp(Q(x - {mid})) on [{lo}, {hi}]")
    out.append(f"static const float {name}Mid = {float(mid).hex()}f;\n")

# sin(r) = r + r^3 * S(r^2), cos(r) = 1 - r^2/2 + r^4 * C(r^2), |r| <= pi/4.
q = math.pi / 4 + 1e-3
def sintail(z):
    r = np.sqrt(z)
    rs = np.where(r < 1e-3, 1.0, r)
    return np.where(r < 1e-3, -1 / 6 + z / 120, (np.sin(rs) - rs) / rs**3)
c, e = fit(sintail, lambda z: z, 0.0, q * q, 4,
           weight=lambda z: np.sqrt(z)**3 / np.sin(np.sqrt(z) + (z == 0)))
emit("kSinS", c, e, "sin: sin(r) = r + r^3 * S(r^2) for |r| <= pi/4")
def costail(z):
    rs = np.where(z < 1e-6, 1.0, z)
    return np.where(z < 1e-6, 1 / 24 - z / 720, (np.cos(np.sqrt(rs)) - 1 + rs / 2) / rs**2)
c, e = fit(costail, lambda z: z, 0.0, q * q, 4, weight=lambda z: z * z / np.cos(np.sqrt(z)))
emit("kCosC", c, e, "cos: cos(r) = 1 - r^2/2 + r^4 * C(r^2) for |r| <= pi/4")


# Bits of 2/pi for the Payne-Hanek reduction of sin and cos: 8 zero bits, then
# the first 216 bits after the binary point, as 7 big-endian 32-bit words.
def atan_inv(n, bits):
    one = 1 << bits
    total, term, k, sign = 0, one // n, 1, 1
    while term:
        total += sign * term // k
        term //= n * n
        k += 2
        sign = -sign
    return total
BITS = 400
pi_fixed = 16 * atan_inv(5, BITS) - 4 * atan_inv(239, BITS)  # pi * 2^BITS
two_over_pi = (2 << (2 * BITS)) // pi_fixed                    # 2/pi * 2^BITS
table = two_over_pi >> (BITS - 216)                            # 216 bits
words = [(table >> (32 * (6 - i))) & 0xFFFFFFFF for i in range(7)]
out.append("// Payne-Hanek: 2/pi = 0.b1 b2 b3 ... in binary; this is 8 zero bits and\n"
           "// then b1..b216, big-endian, 32 bits a word.")
out.append("static const uint32_t kTwoOverPiBits[] = {" +
           ", ".join(f"0x{w:08x}u" for w in words) + "};\n")

print("// Generated by scripts/fit_math_coeffs.py; do not edit.")
print("// Coefficients are listed from degree 0 up.\n")
print("\n".join(out))
