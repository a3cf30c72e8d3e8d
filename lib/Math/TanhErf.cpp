//===- TanhErf.cpp - tanh and erf in fp32 ---------------------------------===//
//
// tanh(x):
//   |x| < 0.625: tanh(x) = x + x^3 * P(x^2), P of degree 6 (fit error 9e-11
//   relative); the odd form keeps -0, tiny and subnormal x exact.
//   |x| >= 0.625: tanh(|x|) = 1 - 2 / (exp(2|x|) + 1) with the exp of
//   ExpLog.cpp (2|x| is exact), then the sign of x is put back by bit ops.
//   exp(2|x|) overflows to inf for large |x| and the result is exactly +-1.
//   NaN propagates through the second branch.
//
// erf(x):
//   |x| < 0.875: erf(x) = x + x * P(x^2), P of degree 7 (fit error 9e-10
//   relative).
//   0.875 <= |x| < 4: erf(|x|) = 1 - exp(Q(|x| - c)), Q a polynomial fit of
//   log(erfc) of degree 9 on [0.875, 2.25] (c = 1.5625) and on [2.25, 4]
//   (c = 3.125); |x| - c is exact (Sterbenz-like: both are multiples of
//   ulp(|x|) and the difference is below 1). The fit error is weighted by
//   erfc, i.e. it is an absolute error on erf: 9e-10 and 5e-12.
//   |x| >= 4: erf = +-1 (erfc(4) = 1.5e-8 is below half an ulp of 1).
//   The sign of x is put back by bit ops; NaN propagates.
//
//===----------------------------------------------------------------------===//
#include "MathBuilder.h"

#include "lockstep/Math/ScalarMath.h"

using namespace mlir;
using namespace lockstep::math;

namespace {
#include "Coefficients.inc"
} // namespace

Value lockstep::math::buildTanh(OpBuilder &b, Location loc, Value x) {
  MathBuilder m(b, loc, x.getType());
  Value z = m.mul(x, x);
  Value small = m.fma(m.mul(x, z), m.poly(z, kTanhP), x);
  Value a = m.abs(x);
  Value e = buildExp(b, loc, m.add(a, a));
  Value t = m.div(m.f(2.0f), m.add(e, m.f(1.0f)));
  Value large = m.copySign(m.sub(m.f(1.0f), t), x);
  Value y = m.select(m.lt(a, m.f(0.625f)), small, large);
  return m.select(m.eq(x, m.f(0.0f)), x, y); // tanh(-0) = -0
}

Value lockstep::math::buildErf(OpBuilder &b, Location loc, Value x) {
  MathBuilder m(b, loc, x.getType());
  Value z = m.mul(x, x);
  Value small = m.fma(x, m.poly(z, kErfSmallP), x);
  Value a = m.abs(x);
  Value mid = m.lt(a, m.f(2.25f));
  // Keep the polynomial's argument in range where its result is not used.
  Value ac = m.select(m.lt(a, m.f(4.0f)), a, m.f(4.0f));
  Value qMid = m.poly(m.sub(ac, m.f(kErfMidQMid)), kErfMidQ);
  Value qTail = m.poly(m.sub(ac, m.f(kErfTailQMid)), kErfTailQ);
  Value erfc = buildExp(b, loc, m.select(mid, qMid, qTail));
  Value large = m.sub(m.f(1.0f), erfc);
  large = m.select(m.ge(a, m.f(4.0f)), m.f(1.0f), large);
  large = m.copySign(large, x);
  large = m.select(m.isNaN(x), x, large);
  return m.select(m.lt(a, m.f(0.875f)), small, large);
}
