//===- Pow.cpp - pow and rsqrt in fp32 ------------------------------------===//
//
// pow(x, y) for finite x != 0 and finite y: |x|^y = exp(y * log|x|), with
// log|x| as a double-float (buildLogDoubleFloat, ExpLog.cpp: about 2^-40
// relative), the product y * log|x| as a double-float (two-product by fma)
// and the exp core of ExpLog.cpp applied to hi + lo (lo joins the reduced
// argument), so that |y * log|x|| up to 104 keeps its low bits. The product
// is clamped to [-104, 89] first (beyond, the result is 0 or inf anyway).
// The sign is negative when x < 0 and y is an odd integer; x < 0 with a
// non-integer y gives NaN.
//
// Special cases, as C's powf (and numpy, which ONNX's reference follows):
//   pow(x, +-0) = 1 for any x, NaN included; pow(1, y) = 1 for any y, NaN
//   included; pow(-1, +-inf) = 1; otherwise NaN in, NaN out.
//   y = +-inf: |x| < 1 gives +0 for +inf and +inf for -inf; |x| > 1 the
//   reverse.
//   x = +-0: y < 0 gives inf, y > 0 gives 0, with the sign of x when y is an
//   odd integer. x = +-inf: y < 0 gives 0, y > 0 inf, signed likewise.
// "y is an integer" is read from its bits: |y| >= 2^23 is an integer (and
// even above 2^24); below, y == (float)(int)y.
//
// rsqrt(x) = 1 / sqrt(x): math.sqrt and arith.divf, each correctly rounded
// (at most about 1 ulp in all); rsqrt(+-0) = +-inf, rsqrt(+inf) = 0,
// rsqrt(x < 0) = NaN.
//
//===----------------------------------------------------------------------===//
#include "MathBuilder.h"

#include "lockstep/Math/ScalarMath.h"

#include <limits>

using namespace mlir;
using namespace lockstep::math;

Value lockstep::math::buildPow(OpBuilder &b, Location loc, Value x, Value y) {
  MathBuilder m(b, loc, x.getType());
  using P = arith::CmpIPredicate;
  float inf = std::numeric_limits<float>::infinity();
  Value one = m.f(1.0f), zero = m.f(0.0f), infV = m.f(inf);
  Value ax = m.abs(x), ay = m.abs(y);

  // Integer and odd-integer tests on y (false for NaN; +-inf is an even
  // integer).
  Value small = m.lt(ay, m.f(0x1p23f));
  Value yi = m.fptosi(m.select(small, y, zero), 32);
  Value yIsInt = m.orB(m.ge(ay, m.f(0x1p23f)), m.andB(small, m.eq(m.sitofp(yi), y)));
  auto oddBit = [&](Value i) { return m.icmp(P::ne, m.iand(i, m.i32(1)), m.i32(0)); };
  // The only odd integers >= 2^23 are in [2^23, 2^24): bit 0 of the mantissa.
  Value midBig = m.andB(m.ge(ay, m.f(0x1p23f)), m.lt(ay, m.f(0x1p24f)));
  Value yOdd = m.orB(m.andB(m.andB(small, yIsInt), oddBit(yi)),
                     m.andB(midBig, oddBit(m.bits(y))));

  // The general case on sanitized operands.
  Value xSpecial = m.orB(m.orB(m.eq(ax, zero), m.eq(ax, infV)), m.isNaN(x));
  Value ySpecial = m.orB(m.eq(ay, infV), m.isNaN(y));
  Value axc = m.select(xSpecial, one, ax);
  Value yc = m.select(ySpecial, zero, y);
  DoubleFloat l = buildLogDoubleFloat(m, axc);
  DoubleFloat p = m.twoProd(yc, l.hi);
  Value zlo = m.fma(yc, l.lo, p.lo);
  DoubleFloat z = m.fastTwoSum(p.hi, zlo);
  // Out of range (the product may also have overflowed to inf, and then lo
  // is NaN): judged on the rounded product.
  Value over = m.gt(p.hi, m.f(89.0f)), under = m.lt(p.hi, m.f(-104.0f));
  Value zh = m.select(over, m.f(89.0f), m.select(under, m.f(-104.0f), z.hi));
  zh = m.select(m.gt(zh, m.f(89.0f)), m.f(89.0f), zh);
  zh = m.select(m.lt(zh, m.f(-104.0f)), m.f(-104.0f), zh);
  Value zl = m.select(m.orB(over, under), zero, z.lo);
  Value r = buildExpCore(m, zh, zl);

  // |x| = 0 or inf: 0 or inf by the signs of y and of log|x|.
  Value yNeg = m.lt(y, zero);
  Value xZero = m.eq(ax, zero);
  r = m.select(m.eq(ax, infV), m.select(yNeg, zero, infV), r);
  r = m.select(xZero, m.select(yNeg, infV, zero), r);
  // Sign: x negative (sign bit, so -0 and -inf too) and y an odd integer.
  Value xNeg = m.icmp(P::slt, m.bits(x), m.i32(0));
  r = m.negateIf(m.andB(xNeg, yOdd), r);
  // Negative finite x with a finite non-integer y.
  Value nan = m.f(std::numeric_limits<float>::quiet_NaN());
  Value xNegFinite = m.andB(m.lt(x, zero), m.gt(x, m.f(-inf)));
  r = m.select(m.andB(xNegFinite, m.notB(yIsInt)), nan, r);
  // y = +-inf.
  Value yInfRes = m.select(m.icmp(P::eq, m.lt(ax, one), m.lt(y, zero)), infV, zero);
  yInfRes = m.select(m.eq(ax, one), one, yInfRes);
  r = m.select(m.eq(ay, infV), yInfRes, r);
  // NaN operands, then the cases that give 1 even for NaN.
  r = m.select(m.orB(m.isNaN(x), m.isNaN(y)), m.add(x, y), r);
  r = m.select(m.eq(x, one), one, r);
  r = m.select(m.eq(y, zero), one, r);
  return r;
}

Value lockstep::math::buildRsqrt(OpBuilder &b, Location loc, Value x) {
  MathBuilder m(b, loc, x.getType());
  return m.div(m.f(1.0f), m.sqrt(x));
}
