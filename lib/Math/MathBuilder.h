//===- MathBuilder.h - Emitting fp32 arithmetic sequences -------*- C++ -*-===//
//
// A thin layer over OpBuilder for the math sequences of lib/Math: constants
// splat to the operand's shape, the correctly rounded arith ops, explicit fma,
// bit access through arith.bitcast, and two-float ("double-float") helpers.
// Nothing here carries fast-math flags.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_LIB_MATH_MATHBUILDER_H
#define LOCKSTEP_LIB_MATH_MATHBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/ArrayRef.h"

namespace lockstep::math {

/// An unevaluated sum hi + lo with |lo| <= ulp(hi) / 2.
struct DoubleFloat {
  mlir::Value hi, lo;
};

class MathBuilder {
public:
  /// `like` is the f32 (or shaped f32) type of the values built.
  MathBuilder(mlir::OpBuilder &b, mlir::Location loc, mlir::Type like);

  mlir::Type f32Type() const { return fTy; }
  mlir::Type intType(unsigned width) const;

  // Constants, splat to the shape of `like`.
  mlir::Value f(float v);
  mlir::Value i32(int64_t v) { return iconst(32, v); }
  mlir::Value i64(int64_t v) { return iconst(64, v); }
  mlir::Value iconst(unsigned width, int64_t v);

  // Correctly rounded float ops.
  mlir::Value add(mlir::Value a, mlir::Value c);
  mlir::Value sub(mlir::Value a, mlir::Value c);
  mlir::Value mul(mlir::Value a, mlir::Value c);
  mlir::Value div(mlir::Value a, mlir::Value c);
  mlir::Value fma(mlir::Value a, mlir::Value c, mlir::Value d);
  mlir::Value sqrt(mlir::Value a);
  /// Horner's rule with fma: c[0] + x * (c[1] + x * (...)).
  mlir::Value poly(mlir::Value x, llvm::ArrayRef<float> c);

  // Comparisons (ordered: false when an operand is NaN) and selects.
  mlir::Value cmp(mlir::arith::CmpFPredicate p, mlir::Value a, mlir::Value c);
  mlir::Value lt(mlir::Value a, mlir::Value c);
  mlir::Value gt(mlir::Value a, mlir::Value c);
  mlir::Value ge(mlir::Value a, mlir::Value c);
  mlir::Value eq(mlir::Value a, mlir::Value c);
  mlir::Value isNaN(mlir::Value a);
  mlir::Value select(mlir::Value cond, mlir::Value a, mlir::Value c);
  mlir::Value andB(mlir::Value a, mlir::Value c);
  mlir::Value orB(mlir::Value a, mlir::Value c);
  mlir::Value notB(mlir::Value a);

  // Bits and integers.
  mlir::Value bits(mlir::Value x);      // f32 -> i32
  mlir::Value fromBits(mlir::Value i);  // i32 -> f32
  mlir::Value iadd(mlir::Value a, mlir::Value c);
  mlir::Value isub(mlir::Value a, mlir::Value c);
  mlir::Value imul(mlir::Value a, mlir::Value c);
  mlir::Value iand(mlir::Value a, mlir::Value c);
  mlir::Value ior(mlir::Value a, mlir::Value c);
  mlir::Value ixor(mlir::Value a, mlir::Value c);
  mlir::Value shl(mlir::Value a, mlir::Value c);
  mlir::Value ashr(mlir::Value a, mlir::Value c);
  mlir::Value lshr(mlir::Value a, mlir::Value c);
  mlir::Value icmp(mlir::arith::CmpIPredicate p, mlir::Value a, mlir::Value c);
  mlir::Value zext(mlir::Value a, unsigned width);
  mlir::Value trunc(mlir::Value a, unsigned width);
  /// Integer to f32 (correctly rounded), signed or unsigned.
  mlir::Value sitofp(mlir::Value a);
  mlir::Value uitofp(mlir::Value a);
  /// f32 holding an integer value that fits the integer type -> integer.
  mlir::Value fptosi(mlir::Value a, unsigned width);

  // Sign manipulation as bit operations.
  mlir::Value abs(mlir::Value x);
  mlir::Value neg(mlir::Value x);
  /// |mag| with the sign bit of `sign`.
  mlir::Value copySign(mlir::Value mag, mlir::Value sign);
  /// x with its sign bit flipped where `cond`.
  mlir::Value negateIf(mlir::Value cond, mlir::Value x);

  /// x rounded to the nearest integer (ties to even), as f32, for
  /// |x| < 2^22: (x + 1.5 * 2^23) - 1.5 * 2^23. With `scale`, rounds
  /// x * scale computed by one fma.
  mlir::Value roundToInt(mlir::Value x, float scale);
  /// y * 2^k for an i32 k in [-252, 254], in two exact steps (one rounding at
  /// most, in the last multiplication, when the result is subnormal or
  /// overflows).
  mlir::Value scaleByPow2(mlir::Value y, mlir::Value k);

  // Double-float helpers (error-free transformations).
  DoubleFloat twoProd(mlir::Value a, mlir::Value c);
  /// Requires |a| >= |c| or a == 0.
  DoubleFloat fastTwoSum(mlir::Value a, mlir::Value c);
  DoubleFloat twoSum(mlir::Value a, mlir::Value c);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }

private:
  mlir::Value constant(mlir::Type elt, mlir::TypedAttr attr);

  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Type fTy;
};

/// exp(hi + lo) for finite hi in [-104, 89] and |lo| <= ulp(hi): the shared
/// core of exp and pow (no special cases; overflow gives inf and underflow a
/// correctly scaled subnormal or 0). `lo` may be null.
mlir::Value buildExpCore(MathBuilder &m, mlir::Value hi, mlir::Value lo);

/// log(x) as a double-float, for finite x > 0 (subnormals included), accurate
/// to about 2^-40 relative: the core of pow.
DoubleFloat buildLogDoubleFloat(MathBuilder &m, mlir::Value x);

} // namespace lockstep::math

#endif
