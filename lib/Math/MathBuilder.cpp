//===- MathBuilder.cpp - Emitting fp32 arithmetic sequences ---------------===//
#include "MathBuilder.h"

#include "lockstep/Math/ScalarMath.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace lockstep::math;

bool lockstep::math::isSupportedF32Type(Type t) {
  if (auto s = dyn_cast<ShapedType>(t))
    return (isa<VectorType>(s) || (isa<RankedTensorType>(s) && s.hasStaticShape())) &&
           s.getElementType().isF32();
  return t.isF32();
}

MathBuilder::MathBuilder(OpBuilder &b, Location loc, Type like)
    : b(b), loc(loc), fTy(like) {}

Type MathBuilder::intType(unsigned width) const {
  Type i = b.getIntegerType(width);
  if (auto s = dyn_cast<ShapedType>(fTy))
    return s.clone(i);
  return i;
}

Value MathBuilder::constant(Type elt, TypedAttr attr) {
  if (auto s = dyn_cast<ShapedType>(fTy))
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(s.clone(elt), attr));
  return arith::ConstantOp::create(b, loc, attr);
}

Value MathBuilder::f(float v) { return constant(b.getF32Type(), b.getF32FloatAttr(v)); }

Value MathBuilder::iconst(unsigned width, int64_t v) {
  Type i = b.getIntegerType(width);
  return constant(i, b.getIntegerAttr(i, v));
}

Value MathBuilder::add(Value a, Value c) { return arith::AddFOp::create(b, loc, a, c); }
Value MathBuilder::sub(Value a, Value c) { return arith::SubFOp::create(b, loc, a, c); }
Value MathBuilder::mul(Value a, Value c) { return arith::MulFOp::create(b, loc, a, c); }
Value MathBuilder::div(Value a, Value c) { return arith::DivFOp::create(b, loc, a, c); }
Value MathBuilder::fma(Value a, Value c, Value d) {
  return mlir::math::FmaOp::create(b, loc, a, c, d);
}
Value MathBuilder::sqrt(Value a) { return mlir::math::SqrtOp::create(b, loc, a); }

Value MathBuilder::poly(Value x, ArrayRef<float> c) {
  Value r = f(c.back());
  for (size_t i = c.size() - 1; i-- > 0;)
    r = fma(r, x, f(c[i]));
  return r;
}

Value MathBuilder::cmp(arith::CmpFPredicate p, Value a, Value c) {
  return arith::CmpFOp::create(b, loc, p, a, c);
}
Value MathBuilder::lt(Value a, Value c) { return cmp(arith::CmpFPredicate::OLT, a, c); }
Value MathBuilder::gt(Value a, Value c) { return cmp(arith::CmpFPredicate::OGT, a, c); }
Value MathBuilder::ge(Value a, Value c) { return cmp(arith::CmpFPredicate::OGE, a, c); }
Value MathBuilder::eq(Value a, Value c) { return cmp(arith::CmpFPredicate::OEQ, a, c); }
Value MathBuilder::isNaN(Value a) { return cmp(arith::CmpFPredicate::UNO, a, a); }
Value MathBuilder::select(Value cond, Value a, Value c) {
  return arith::SelectOp::create(b, loc, cond, a, c);
}
Value MathBuilder::andB(Value a, Value c) { return arith::AndIOp::create(b, loc, a, c); }
Value MathBuilder::orB(Value a, Value c) { return arith::OrIOp::create(b, loc, a, c); }
Value MathBuilder::notB(Value a) { return arith::XOrIOp::create(b, loc, a, iconst(1, 1)); }

Value MathBuilder::bits(Value x) {
  return arith::BitcastOp::create(b, loc, intType(32), x);
}
Value MathBuilder::fromBits(Value i) { return arith::BitcastOp::create(b, loc, fTy, i); }
Value MathBuilder::iadd(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }
Value MathBuilder::isub(Value a, Value c) { return arith::SubIOp::create(b, loc, a, c); }
Value MathBuilder::imul(Value a, Value c) { return arith::MulIOp::create(b, loc, a, c); }
Value MathBuilder::iand(Value a, Value c) { return arith::AndIOp::create(b, loc, a, c); }
Value MathBuilder::ior(Value a, Value c) { return arith::OrIOp::create(b, loc, a, c); }
Value MathBuilder::ixor(Value a, Value c) { return arith::XOrIOp::create(b, loc, a, c); }
Value MathBuilder::shl(Value a, Value c) { return arith::ShLIOp::create(b, loc, a, c); }
Value MathBuilder::ashr(Value a, Value c) { return arith::ShRSIOp::create(b, loc, a, c); }
Value MathBuilder::lshr(Value a, Value c) { return arith::ShRUIOp::create(b, loc, a, c); }
Value MathBuilder::icmp(arith::CmpIPredicate p, Value a, Value c) {
  return arith::CmpIOp::create(b, loc, p, a, c);
}
Value MathBuilder::zext(Value a, unsigned width) {
  return arith::ExtUIOp::create(b, loc, intType(width), a);
}
Value MathBuilder::trunc(Value a, unsigned width) {
  return arith::TruncIOp::create(b, loc, intType(width), a);
}
Value MathBuilder::sitofp(Value a) { return arith::SIToFPOp::create(b, loc, fTy, a); }
Value MathBuilder::uitofp(Value a) { return arith::UIToFPOp::create(b, loc, fTy, a); }
Value MathBuilder::fptosi(Value a, unsigned width) {
  return arith::FPToSIOp::create(b, loc, intType(width), a);
}

Value MathBuilder::abs(Value x) { return fromBits(iand(bits(x), i32(0x7fffffff))); }
Value MathBuilder::neg(Value x) { return fromBits(ixor(bits(x), i32(INT32_MIN))); }
Value MathBuilder::copySign(Value mag, Value sign) {
  Value m = iand(bits(mag), i32(0x7fffffff));
  Value s = iand(bits(sign), i32(INT32_MIN));
  return fromBits(ior(m, s));
}
Value MathBuilder::negateIf(Value cond, Value x) {
  Value flip = select(cond, i32(INT32_MIN), i32(0));
  return fromBits(ixor(bits(x), flip));
}

Value MathBuilder::roundToInt(Value x, float scale) {
  Value magic = f(0x1.8p23f);
  return sub(fma(x, f(scale), magic), magic);
}

Value MathBuilder::scaleByPow2(Value y, Value k) {
  Value k1 = ashr(k, i32(1));
  Value k2 = isub(k, k1);
  auto pow2 = [&](Value e) { return fromBits(shl(iadd(e, i32(127)), i32(23))); };
  return mul(mul(y, pow2(k1)), pow2(k2));
}

DoubleFloat MathBuilder::twoProd(Value a, Value c) {
  Value p = mul(a, c);
  return {p, fma(a, c, neg(p))};
}

DoubleFloat MathBuilder::fastTwoSum(Value a, Value c) {
  Value s = add(a, c);
  return {s, sub(c, sub(s, a))};
}

DoubleFloat MathBuilder::twoSum(Value a, Value c) {
  Value s = add(a, c);
  Value ap = sub(s, c);
  Value cp = sub(s, ap);
  return {s, add(sub(a, ap), sub(c, cp))};
}
