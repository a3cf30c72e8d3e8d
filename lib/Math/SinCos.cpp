//===- SinCos.cpp - sin and cos in fp32 -----------------------------------===//
//
// Argument reduction to r = |x| - q * pi/2, |r| <= pi/4 (plus rounding), kept
// as a double-float r_hi + r_lo, and the quadrant q mod 4:
//
//   |x| < 2^17: Cody-Waite with fma. k = round(|x| * 2/pi) (k < 2^16.4);
//   pi/2 = P1 + P2 + P3 (fp32 parts, P1 + P2 + P3 within 1e-23 of pi/2).
//   r1 = fma(-k, P1, |x|) is exact (a multiple of 2^-23 below 1); k * P2 is
//   split exactly by fma (two-product) and subtracted by an exact two-sum;
//   k * P3 is a correction. Error about 2^-60 absolute.
//
//   |x| >= 2^17 (and up to FLT_MAX): Payne-Hanek in integer arithmetic.
//   |x| = M * 2^E with M < 2^24. The bits of 2/pi of weights 2^(E-1) ... 2^-94
//   relative to M * 2^E (a 96-bit window of a 216-bit table, selected by E;
//   earlier bits only add multiples of 4 to x * 2/pi) are multiplied by M in
//   three 32 x 24-bit products with carries (i64). Of the low 96 bits of the
//   product, the top 2 are q mod 4 and the next 94 the fraction, rounded to
//   the nearest quadrant (a signed fraction in [-1/2, 1/2)), converted to a
//   double-float and multiplied by pi/2 (two-product). The table's truncation
//   costs below 2^-70, far below the smallest |r| of any fp32 argument.
//
// A negative x reduces |x| and negates r and q.
//
// Polynomials on |r| <= pi/4 (fit errors about 1e-10 relative):
//   sin(r) = r_hi + (r_hi^3 * S(r_hi^2) + r_lo * (1 - r_hi^2 / 2))
//   cos(r) = w + (((1 - w) - z/2) + (z^2 * C(z) - r_hi * r_lo - zlo/2)),
//            z + zlo = r_hi^2 exactly (fma), w = 1 - z/2
// The final addition is the only rounding of size 1/2 ulp.
//
// Reconstruction: quadrant 0: sin(r), 1: cos(r), 2: -sin(r), 3: -cos(r) (cos
// is sin of quadrant q + 1). Special cases: sin and cos of +-inf or NaN are
// NaN (x - x); sin(+-0) = +-0.
//
//===----------------------------------------------------------------------===//
#include "MathBuilder.h"

#include "lockstep/Math/ScalarMath.h"

using namespace mlir;
using namespace lockstep::math;

namespace {
#include "Coefficients.inc"

constexpr float kTwoOverPi = 0x1.45f306p-1f;
constexpr float kPio2P1 = 0x1.921fb6p+0f;
constexpr float kPio2P2 = -0x1.777a5cp-25f;
constexpr float kPio2P3 = -0x1.ee59dap-50f;

struct Reduced {
  DoubleFloat r;
  Value q; // i32; only q mod 4 matters
};

/// Cody-Waite reduction of a = |x| < 2^17.
Reduced reduceSmall(MathBuilder &m, Value a) {
  Value k = m.roundToInt(a, kTwoOverPi);
  Value nk = m.neg(k);
  Value r1 = m.fma(nk, m.f(kPio2P1), a);
  DoubleFloat p = m.twoProd(k, m.f(kPio2P2));
  DoubleFloat s = m.twoSum(r1, m.neg(p.hi));
  Value lo = m.fma(nk, m.f(kPio2P3), m.sub(s.lo, p.lo));
  return {m.fastTwoSum(s.hi, lo), m.fptosi(k, 32)};
}

/// Payne-Hanek reduction of a = |x| >= 2^17 (any finite value; inf gives
/// garbage that the caller replaces).
Reduced reduceLarge(MathBuilder &m, Value a) {
  using P = arith::CmpIPredicate;
  Value ib = m.bits(a);
  Value ex = m.lshr(ib, m.i32(23));
  Value mant = m.ior(m.iand(ib, m.i32(0x7fffff)), m.i32(0x800000));
  // Table bit j (from the most significant bit of word 0) is the bit of 2/pi
  // of weight 2^-(j-7); the window starts at the bit of weight 2^-(E-1),
  // E = ex - 150, i.e. at j0 = ex - 144 >= 0 (|x| >= 2^17).
  Value j0 = m.isub(ex, m.i32(144));
  j0 = m.select(m.icmp(P::slt, j0, m.i32(0)), m.i32(0), j0);
  Value w = m.lshr(j0, m.i32(5));
  Value sh = m.zext(m.iand(j0, m.i32(31)), 64);
  Value words[4];
  for (int k = 0; k < 4; ++k) {
    Value v = m.i32(static_cast<int32_t>(kTwoOverPiBits[k]));
    for (int o = 1; o < 4; ++o)
      v = m.select(m.icmp(P::eq, w, m.i32(o)),
                   m.i32(static_cast<int32_t>(kTwoOverPiBits[k + o])), v);
    words[k] = m.zext(v, 64);
  }
  Value c32 = m.i64(32), mask32 = m.i64(0xffffffffLL);
  auto window = [&](Value hi, Value lo) {
    Value pair = m.ior(m.shl(hi, c32), lo);
    return m.lshr(m.shl(pair, sh), c32) /* < 2^32 */;
  };
  Value win0 = m.iand(window(words[0], words[1]), mask32);
  Value win1 = m.iand(window(words[1], words[2]), mask32);
  Value win2 = m.iand(window(words[2], words[3]), mask32);
  Value m64 = m.zext(mant, 64);
  Value t2 = m.imul(m64, win2);
  Value t1 = m.iadd(m.imul(m64, win1), m.lshr(t2, c32));
  Value t0 = m.iadd(m.imul(m64, win0), m.lshr(t1, c32));
  // F: the top 64 of the low 96 bits: 2 bits of quadrant, 62 of fraction.
  Value f = m.ior(m.shl(t0, c32), m.iand(t1, mask32));
  Value q = m.trunc(m.lshr(f, m.i64(62)), 32);
  Value frac = m.iand(f, m.i64((int64_t(1) << 62) - 1));
  Value up = m.icmp(P::ne, m.iand(frac, m.i64(int64_t(1) << 61)), m.i64(0));
  frac = m.select(up, m.isub(frac, m.i64(int64_t(1) << 62)), frac);
  q = m.select(up, m.iadd(q, m.i32(1)), q);
  // frac (+ the low 32 bits of t2 below it) as a double-float in units of
  // 2^-62.
  Value hi = m.sitofp(frac);
  Value rem = m.isub(frac, m.fptosi(hi, 64));
  Value low = m.uitofp(m.iand(t2, mask32));
  Value lo = m.fma(low, m.f(0x1p-32f), m.sitofp(rem));
  Value fh = m.mul(hi, m.f(0x1p-62f)), fl = m.mul(lo, m.f(0x1p-62f));
  DoubleFloat p = m.twoProd(fh, m.f(kPio2P1));
  Value e = m.fma(fh, m.f(kPio2P2), m.fma(fl, m.f(kPio2P1), p.lo));
  return {m.fastTwoSum(p.hi, e), q};
}

/// sin(x) for quadrant offset 0, cos(x) for offset 1.
Value buildSinCos(OpBuilder &b, Location loc, Value x, int offset) {
  MathBuilder m(b, loc, x.getType());
  Value a = m.abs(x);
  Value isSmall = m.lt(a, m.f(0x1p17f));
  Reduced rs = reduceSmall(m, m.select(isSmall, a, m.f(0.0f)));
  Reduced rl = reduceLarge(m, a);
  Value rhi = m.select(isSmall, rs.r.hi, rl.r.hi);
  Value rlo = m.select(isSmall, rs.r.lo, rl.r.lo);
  Value q = m.select(isSmall, rs.q, rl.q);
  // Negative x: r -> -r, q -> -q.
  Value negX = m.icmp(arith::CmpIPredicate::slt, m.bits(x), m.i32(0));
  rhi = m.negateIf(negX, rhi);
  rlo = m.negateIf(negX, rlo);
  q = m.select(negX, m.isub(m.i32(0), q), q);
  q = m.iadd(q, m.i32(offset));

  Value z = m.mul(rhi, rhi);
  Value sinv = m.add(
      rhi, m.fma(m.mul(rhi, z), m.poly(z, kSinS), m.mul(rlo, m.fma(z, m.f(-0.5f), m.f(1.0f)))));
  Value zlo = m.fma(rhi, rhi, m.neg(z));
  Value hz = m.mul(z, m.f(0.5f));
  Value w = m.sub(m.f(1.0f), hz);
  Value small = m.fma(m.mul(z, z), m.poly(z, kCosC),
                      m.fma(m.f(-0.5f), zlo, m.neg(m.mul(rhi, rlo))));
  Value cosv = m.add(w, m.add(m.sub(m.sub(m.f(1.0f), w), hz), small));

  Value odd = m.icmp(arith::CmpIPredicate::ne, m.iand(q, m.i32(1)), m.i32(0));
  Value flip = m.icmp(arith::CmpIPredicate::ne, m.iand(q, m.i32(2)), m.i32(0));
  Value y = m.negateIf(flip, m.select(odd, cosv, sinv));
  if (offset == 0)
    y = m.select(m.eq(x, m.f(0.0f)), x, y);
  Value d = m.sub(x, x); // NaN for +-inf and NaN
  return m.select(m.isNaN(d), d, y);
}
} // namespace

Value lockstep::math::buildSin(OpBuilder &b, Location loc, Value x) {
  return buildSinCos(b, loc, x, 0);
}

Value lockstep::math::buildCos(OpBuilder &b, Location loc, Value x) {
  return buildSinCos(b, loc, x, 1);
}
