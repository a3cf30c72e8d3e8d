//===- ExpLog.cpp - exp and log in fp32 -----------------------------------===//
//
// exp(x):
//   Range reduction (Cody-Waite with fma): k = round(x / ln2) by one fma
//   against 1.5 * 2^23; r1 = fma(-k, ln2_hi, x), c = -k * ln2_lo.
//   ln2_hi is ln2 rounded to fp32, so for |x| < 104 the first fma is exact
//   (x - k * ln2_hi is a multiple of 2^-24 below 1) and |r| <= ln2/2 + tiny.
//   Polynomial: exp(r1) = 1 + r1 + p, p = r1^2 * P(r1), P of degree 5 fitted
//   by scripts/fit_math_coeffs.py (weighted least squares on Chebyshev nodes;
//   fit error 1.3e-10 relative), on the exact r1 = fma(-k, ln2_hi, x); the
//   correction c = -k * ln2_lo (below 2^-21) enters as
//   exp(r1 + c) = (1 + r1) + (p + c * (1 + r1 + p)), with 1 + r1 split
//   exactly by a fast two-sum, so that the only rounding at the result's
//   scale is the last addition (about 0.5 ulp in all).
//   Reconstruction: y * 2^k as two exact multiplications by 2^(k/2) and
//   2^(k - k/2), so that a subnormal result is rounded once and an overflow
//   gives inf.
//   Special cases: x is clamped to [-104, 89] first (exp(-104) rounds to +0,
//   exp(89) overflows to +inf, so the clamp does not change results) and a
//   NaN is returned as is (and never reaches the float-to-int conversion).
//
// log(x):
//   Reduction: a subnormal x is scaled by 2^23 (exactly). With the bits of x,
//   e = (bits - bits(sqrt(1/2))) >> 23 and m = x / 2^e has bits
//   bits - (e << 23), so m is in [sqrt(1/2), sqrt(2)) and f = m - 1 is exact.
//   Polynomial: log1p(f) = f - f^2/2 + f^3 * P(f), P of degree 8 (fit error
//   9e-10 relative).
//   Reconstruction: (e * ln2_hi + f) + (e * ln2_lo + tail), ln2_hi having 16
//   significant bits so that e * ln2_hi is exact, and the first sum kept
//   exact as a double-float (fast two-sum), so that only the last addition
//   rounds at the result's scale.
//   Special cases: log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN
//   stays NaN.
//
//===----------------------------------------------------------------------===//
#include "MathBuilder.h"

#include "lockstep/Math/ScalarMath.h"

#include <limits>

using namespace mlir;
using namespace lockstep::math;

namespace {
#include "Coefficients.inc"

constexpr float kLn2F = 0x1.62e430p-1f;     // ln 2 rounded to fp32
constexpr float kLn2FLo = -0x1.05c610p-29f; // ln 2 - kLn2F
constexpr float kLn2H16 = 0x1.62e4p-1f;     // ln 2 to 16 bits
constexpr float kLn2H16Lo = 0x1.7f7d1cp-20f; // ln 2 - kLn2H16
constexpr float kLog2E = 0x1.715476p+0f;

/// The reduction of log: x (finite, > 0) = 2^e * (1 + f) with 1 + f in
/// [sqrt(1/2), sqrt(2)). Returns e as f32 and f.
std::pair<Value, Value> reduceLog(MathBuilder &m, Value x) {
  Value isSub = m.lt(x, m.f(0x1p-126f));
  Value xs = m.select(isSub, m.mul(x, m.f(0x1p23f)), x);
  Value eAdj = m.select(isSub, m.i32(-23), m.i32(0));
  Value i = m.bits(xs);
  Value e = m.ashr(m.isub(i, m.i32(0x3f3504f3)), m.i32(23));
  Value mant = m.fromBits(m.isub(i, m.shl(e, m.i32(23))));
  Value fr = m.sub(mant, m.f(1.0f));
  return {m.sitofp(m.iadd(e, eAdj)), fr};
}
} // namespace

Value lockstep::math::buildExpCore(MathBuilder &m, Value hi, Value lo) {
  Value k = m.roundToInt(hi, kLog2E);
  Value nk = m.neg(k);
  // r1 is exact; c = lo - k * ln2_lo is a correction below 2^-21:
  // exp(r1 + c) = exp(r1) * (1 + c) = 1 + r1 + p + c * (1 + r1 + p) with
  // p = r1^2 * P(r1), and 1 + r1 is kept exact (fast two-sum).
  Value r1 = m.fma(nk, m.f(kLn2F), hi);
  Value c = m.fma(nk, m.f(kLn2FLo), lo ? lo : m.f(0.0f));
  Value p = m.mul(m.mul(r1, r1), m.poly(r1, kExpP));
  Value t = m.fma(c, m.add(r1, p), c);
  DoubleFloat h = m.fastTwoSum(m.f(1.0f), r1);
  Value y = m.add(h.hi, m.add(h.lo, m.add(p, t)));
  return m.scaleByPow2(y, m.fptosi(k, 32));
}

Value lockstep::math::buildExp(OpBuilder &b, Location loc, Value x) {
  MathBuilder m(b, loc, x.getType());
  Value nan = m.isNaN(x);
  Value xc = m.select(m.gt(x, m.f(89.0f)), m.f(89.0f), x);
  xc = m.select(m.lt(xc, m.f(-104.0f)), m.f(-104.0f), xc);
  xc = m.select(nan, m.f(0.0f), xc);
  return m.select(nan, x, buildExpCore(m, xc, Value()));
}

Value lockstep::math::buildLog(OpBuilder &b, Location loc, Value x) {
  MathBuilder m(b, loc, x.getType());
  auto [e, fr] = reduceLog(m, x);
  Value f2 = m.mul(fr, fr);
  Value tail = m.fma(m.mul(f2, fr), m.poly(fr, kLogP), m.mul(m.f(-0.5f), f2));
  // e * ln2_hi + f exactly (|e * ln2_hi| >= 0.69 > |f| unless e = 0).
  DoubleFloat hi = m.fastTwoSum(m.mul(e, m.f(kLn2H16)), fr);
  Value lo = m.add(m.fma(e, m.f(kLn2H16Lo), tail), hi.lo);
  Value y = m.add(hi.hi, lo);
  float inf = std::numeric_limits<float>::infinity();
  y = m.select(m.eq(x, m.f(inf)), x, y);
  y = m.select(m.eq(x, m.f(0.0f)), m.f(-inf), y);
  y = m.select(m.lt(x, m.f(0.0f)), m.f(std::numeric_limits<float>::quiet_NaN()), y);
  return m.select(m.isNaN(x), x, y);
}

// log(x) = e * ln2 + log((1 + s) / (1 - s)) with s = f / (2 + f):
// log((1+s)/(1-s)) = 2s + 2/3 s^3 + s^5 * R(s^2), |s| <= 0.1716. s is kept as
// a double-float (the division's remainder is exact by fma), 2s is exact, and
// the odd tail (at most 1% of the whole) is a double-float product of
// double-float factors, so the result is good to about 2^-40 relative.
DoubleFloat lockstep::math::buildLogDoubleFloat(MathBuilder &m, Value x) {
  auto [e, fr] = reduceLog(m, x);
  DoubleFloat d = m.fastTwoSum(m.f(2.0f), fr);
  Value s = m.div(fr, d.hi);
  Value rem = m.fma(m.neg(s), d.hi, fr);
  rem = m.fma(m.neg(s), d.lo, rem);
  Value sLo = m.div(rem, d.hi);
  // s^2 and s^3 as double-floats, u = 2/3 + z * R(z) as a double-float.
  DoubleFloat z = m.twoProd(s, s);
  Value zLo = m.fma(m.add(s, s), sLo, z.lo);
  DoubleFloat s3 = m.twoProd(s, z.hi);
  Value s3Lo = m.fma(s, zLo, m.fma(sLo, z.hi, s3.lo));
  DoubleFloat u = m.fastTwoSum(m.f(0x1.555556p-1f),
                               m.fma(z.hi, m.poly(z.hi, kAtanhR), m.f(-0x1.555556p-26f)));
  DoubleFloat t = m.twoProd(s3.hi, u.hi);
  Value tLo = m.fma(s3.hi, u.lo, m.fma(s3Lo, u.hi, t.lo));
  // e * ln2_hi (exact) + 2s + t, then the small terms.
  DoubleFloat head = m.twoSum(m.mul(e, m.f(kLn2H16)), m.add(s, s));
  DoubleFloat head2 = m.twoSum(head.hi, t.hi);
  Value small = m.add(m.add(m.fma(e, m.f(kLn2H16Lo), tLo), m.add(sLo, sLo)),
                      m.add(head.lo, head2.lo));
  return m.fastTwoSum(head2.hi, small);
}
