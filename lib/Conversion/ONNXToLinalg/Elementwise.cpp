//===- Elementwise.cpp - Lowering elementwise onnx ops --------------------===//
//
// Unary, binary, variadic, Where and Cast ops become one linalg.generic each,
// with numpy broadcasting expressed in the indexing maps (a broadcast dim reads
// index 0). Each scalar operation is spelled out here; no fast-math flags.
//
// arith works on signless integers only, so in a body an unsigned element
// (ONNX uint8) is cast to the signless type of its width, computed on with the
// unsigned forms of the ops (divui, maxui, cmpi ult, uitofp, ...), and cast
// back; the casts cancel when the body reaches LLVM.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Conversion/ONNXToLinalg.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

using ScalarFn = std::function<Value(OpBuilder &, Location, ValueRange)>;

Value floatCst(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, v));
}

bool isUnsignedInt(Type t) {
  auto it = dyn_cast<IntegerType>(t);
  return it && it.isUnsigned();
}

/// The signless integer type of `t`'s width for an unsigned `t`, else `t`.
Type signlessOf(Type t) {
  if (isUnsignedInt(t))
    return IntegerType::get(t.getContext(), t.getIntOrFloatBitWidth());
  return t;
}

/// Casts a scalar between an unsigned type and its signless twin (a no-op
/// when the types agree); the cast disappears when lowered to LLVM.
Value retype(OpBuilder &b, Location loc, Value v, Type to) {
  if (v.getType() == to)
    return v;
  return UnrealizedConversionCastOp::create(b, loc, to, v).getResult(0);
}

Value intCst(OpBuilder &b, Location loc, Type t, int64_t v) {
  return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, v));
}

/// f32 to bf16 with round to nearest even, in integer arithmetic (what
/// onnx.helper.float32_to_bfloat16 does): LLVM would otherwise call
/// compiler-rt's __truncsfbf2, which the artifact's code cannot reach.
/// NaN becomes the quiet NaN 0x7FC0.
Value truncToBF16(OpBuilder &b, Location loc, Value f32) {
  Type i32 = b.getI32Type(), i16 = b.getI16Type();
  Value bits = arith::BitcastOp::create(b, loc, i32, f32);
  Value c16 = intCst(b, loc, i32, 16);
  Value lsb = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, bits, c16),
                                    intCst(b, loc, i32, 1));
  Value bias = arith::AddIOp::create(b, loc, lsb, intCst(b, loc, i32, 0x7FFF));
  Value rounded = arith::ShRUIOp::create(b, loc, arith::AddIOp::create(b, loc, bits, bias), c16);
  Value nan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, f32, f32);
  rounded = arith::SelectOp::create(b, loc, nan, intCst(b, loc, i32, 0x7FC0), rounded);
  return arith::BitcastOp::create(b, loc, b.getBF16Type(),
                                  arith::TruncIOp::create(b, loc, i16, rounded));
}

/// Converts a scalar between element types with ONNX Cast semantics. `v` is
/// signless; `fromUnsigned` says how to read it; the result is signless.
Value castSignless(OpBuilder &b, Location loc, Value v, bool fromUnsigned,
                   Type to, bool toUnsigned) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto fromF = dyn_cast<FloatType>(from), toF = dyn_cast<FloatType>(to);
  auto fromI = dyn_cast<IntegerType>(from), toI = dyn_cast<IntegerType>(to);
  if (toF && toF.isBF16() && !(fromF && fromF.isBF16())) {
    // Through f32: exact from f16; from f64 and from wide integers it rounds
    // twice.
    Value f = castSignless(b, loc, v, fromUnsigned, b.getF32Type(), false);
    return truncToBF16(b, loc, f);
  }
  if (fromF && toF && fromF.getWidth() == toF.getWidth()) // bf16 to f16
    return arith::TruncFOp::create(
        b, loc, to, arith::ExtFOp::create(b, loc, b.getF32Type(), v));
  if (fromF && toF)
    return fromF.getWidth() < toF.getWidth()
               ? arith::ExtFOp::create(b, loc, to, v).getResult()
               : arith::TruncFOp::create(b, loc, to, v).getResult();
  if (fromI && toF)
    return fromI.getWidth() == 1 || fromUnsigned
               ? arith::UIToFPOp::create(b, loc, to, v).getResult()
               : arith::SIToFPOp::create(b, loc, to, v).getResult();
  if (fromF && toI) {
    if (toI.getWidth() == 1)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   floatCst(b, loc, from, 0.0));
    return toUnsigned ? arith::FPToUIOp::create(b, loc, to, v).getResult()
                      : arith::FPToSIOp::create(b, loc, to, v).getResult();
  }
  if (fromI && toI) {
    if (toI.getWidth() == 1)
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                   intCst(b, loc, from, 0));
    if (fromI.getWidth() < toI.getWidth())
      return fromI.getWidth() == 1 || fromUnsigned
                 ? arith::ExtUIOp::create(b, loc, to, v).getResult()
                 : arith::ExtSIOp::create(b, loc, to, v).getResult();
    return arith::TruncIOp::create(b, loc, to, v);
  }
  return {};
}

} // namespace

Value lockstep::castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  Value r = castSignless(b, loc, retype(b, loc, v, signlessOf(from)),
                         isUnsignedInt(from), signlessOf(to), isUnsignedInt(to));
  return retype(b, loc, r, to);
}

namespace {

/// base^exp for integers of one type, by squaring, unrolled over the
/// exponent's bits (branch-free, no loop), with a negative exponent meaning
/// the truncated 1/base^-exp: 1 for base 1, +-1 for base -1, else 0.
Value intPow(OpBuilder &b, Location loc, Value base, Value exp, bool isUnsigned) {
  Type t = base.getType();
  unsigned w = t.getIntOrFloatBitWidth();
  Value zero = intCst(b, loc, t, 0), one = intCst(b, loc, t, 1);
  Value r = one, x = base, e = exp;
  for (unsigned i = 0; i < w; ++i) {
    Value odd = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                      arith::AndIOp::create(b, loc, e, one), zero);
    r = arith::SelectOp::create(b, loc, odd, arith::MulIOp::create(b, loc, r, x), r);
    if (i + 1 == w)
      break;
    x = arith::MulIOp::create(b, loc, x, x);
    e = arith::ShRUIOp::create(b, loc, e, one);
  }
  if (isUnsigned)
    return r;
  Value negExp = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, exp, zero);
  Value minusOne = intCst(b, loc, t, -1);
  Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, base, one);
  Value isMinusOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, base, minusOne);
  Value oddExp = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, arith::AndIOp::create(b, loc, exp, one), zero);
  Value negResult = arith::SelectOp::create(
      b, loc, isOne, one,
      arith::SelectOp::create(
          b, loc, isMinusOne,
          arith::SelectOp::create(b, loc, oddExp, minusOne, one), zero));
  return arith::SelectOp::create(b, loc, negExp, negResult, r);
}

/// The exponent 2 or 3 when `v` is an onnx.Constant whose every element is
/// that value (a float or an integer); 0 otherwise.
int smallConstantExponent(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto d = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
  if (!d || !d.isSplat())
    return 0;
  double e = 0;
  if (isa<FloatType>(d.getElementType()))
    e = d.getSplatValue<APFloat>().convertToDouble();
  else if (isa<IntegerType>(d.getElementType()))
    e = static_cast<double>(d.getSplatValue<APInt>().getSExtValue());
  return e == 2.0 || e == 3.0 ? static_cast<int>(e) : 0;
}

/// Pow over any pair of element types (ONNX allows the exponent's type to
/// differ from the base's): floats with powf in the base's type, integers by
/// squaring, an integer base with a float exponent through f64 (as numpy
/// computes it) truncated back to the base's type.
Value powScalar(OpBuilder &b, Location loc, Value base, Value exp, bool baseUnsigned,
                bool expUnsigned) {
  Type bt = base.getType(), et = exp.getType();
  if (isa<FloatType>(bt)) {
    if (bt != et)
      exp = castSignless(b, loc, exp, expUnsigned, bt, false);
    return math::PowFOp::create(b, loc, base, exp);
  }
  if (isa<FloatType>(et)) {
    Type f64 = b.getF64Type();
    Value x = castSignless(b, loc, base, baseUnsigned, f64, false);
    Value y = castSignless(b, loc, exp, false, f64, false);
    Value p = math::PowFOp::create(b, loc, x, y);
    return castSignless(b, loc, p, false, bt, baseUnsigned);
  }
  if (bt != et)
    exp = castSignless(b, loc, exp, expUnsigned, bt, baseUnsigned);
  return intPow(b, loc, base, exp, baseUnsigned);
}

/// The scalar function of a unary op, or null when unsupported for `t` (the
/// op's element type; the function gets and returns signless scalars).
ScalarFn unaryFn(Operation *op, Type t) {
  bool isF = isa<FloatType>(t), isU = isUnsignedInt(t);
  auto same = [](OpBuilder &, Location, ValueRange a) -> Value { return a[0]; };
  auto un = [](auto build) -> ScalarFn {
    return [build](OpBuilder &b, Location l, ValueRange a) { return build(b, l, a[0]); };
  };
  return TypeSwitch<Operation *, ScalarFn>(op)
      .Case<NegOp>([&](auto) {
        return isF ? un([](OpBuilder &b, Location l, Value x) -> Value {
                 return arith::NegFOp::create(b, l, x);
               })
                   : un([](OpBuilder &b, Location l, Value x) -> Value {
                       Value z = arith::ConstantOp::create(
                           b, l, x.getType(), b.getIntegerAttr(x.getType(), 0));
                       return arith::SubIOp::create(b, l, z, x);
                     });
      })
      .Case<AbsOp>([&](auto) -> ScalarFn {
        if (isU)
          return same;
        return isF ? un([](OpBuilder &b, Location l, Value x) -> Value {
                 return math::AbsFOp::create(b, l, x);
               })
                   : un([](OpBuilder &b, Location l, Value x) -> Value {
                       return math::AbsIOp::create(b, l, x);
                     });
      })
      .Case<SqrtOp>([&](auto) {
        return isF ? un([](OpBuilder &b, Location l, Value x) -> Value {
                 return math::SqrtOp::create(b, l, x);
               })
                   : ScalarFn();
      })
      .Case<ReciprocalOp>([&](auto) {
        return isF ? un([](OpBuilder &b, Location l, Value x) -> Value {
                 return arith::DivFOp::create(b, l, floatCst(b, l, x.getType(), 1.0), x);
               })
                   : ScalarFn();
      })
      .Case<ExpOp, LogOp, TanhOp, ErfOp, SinOp, CosOp>([&](Operation *o) -> ScalarFn {
        if (!isF)
          return {};
        StringRef name = o->getName().stripDialect();
        return [name](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value x = a[0];
          if (name == "Exp") return math::ExpOp::create(b, l, x);
          if (name == "Log") return math::LogOp::create(b, l, x);
          if (name == "Tanh") return math::TanhOp::create(b, l, x);
          if (name == "Erf") return math::ErfOp::create(b, l, x);
          if (name == "Sin") return math::SinOp::create(b, l, x);
          return math::CosOp::create(b, l, x);
        };
      })
      .Case<SigmoidOp>([&](auto) -> ScalarFn {
        if (!isF)
          return {};
        // e = exp(-|x|) never overflows: sigmoid(x) = n / (1 + e) with n = 1
        // for x >= 0 and n = e for x < 0. 1 + e is kept exact as dh + dl
        // (fast two-sum) and the quotient corrected by its exact remainder
        // (fma), so that only e's error and the last rounding remain (within
        // 2 ulp; NaN propagates).
        return un([](OpBuilder &b, Location l, Value x) -> Value {
          Type t = x.getType();
          Value one = floatCst(b, l, t, 1.0);
          Value e = math::ExpOp::create(
              b, l, arith::NegFOp::create(b, l, math::AbsFOp::create(b, l, x)));
          Value dh = arith::AddFOp::create(b, l, one, e);
          Value dl = arith::SubFOp::create(b, l, e, arith::SubFOp::create(b, l, dh, one));
          Value isPos = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE, x,
                                              floatCst(b, l, t, 0.0));
          Value n = arith::SelectOp::create(b, l, isPos, one, e);
          Value s0 = arith::DivFOp::create(b, l, n, dh);
          Value ns0 = arith::NegFOp::create(b, l, s0);
          Value res = math::FmaOp::create(b, l, ns0, dl, math::FmaOp::create(b, l, ns0, dh, n));
          Value inv = arith::DivFOp::create(b, l, one, dh);
          return math::FmaOp::create(b, l, res, inv, s0);
        });
      })
      .Case<ReluOp>([&](auto) -> ScalarFn {
        if (isU)
          return same;
        if (isF)
          return un([](OpBuilder &b, Location l, Value x) -> Value {
            return arith::MaximumFOp::create(b, l, x, floatCst(b, l, x.getType(), 0.0));
          });
        return un([](OpBuilder &b, Location l, Value x) -> Value {
          Value z = arith::ConstantOp::create(b, l, x.getType(), b.getIntegerAttr(x.getType(), 0));
          return arith::MaxSIOp::create(b, l, x, z);
        });
      })
      .Case<GeluOp>([&](GeluOp g) -> ScalarFn {
        if (!isF)
          return {};
        bool tanhForm = g.getApproximate() == "tanh";
        return un([tanhForm](OpBuilder &b, Location l, Value x) -> Value {
          Type t = x.getType();
          Value half = floatCst(b, l, t, 0.5), one = floatCst(b, l, t, 1.0);
          Value inner;
          if (tanhForm) {
            Value x3 = arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, x, x), x);
            Value poly = arith::AddFOp::create(
                b, l, x, arith::MulFOp::create(b, l, floatCst(b, l, t, 0.044715), x3));
            inner = math::TanhOp::create(
                b, l, arith::MulFOp::create(b, l, floatCst(b, l, t, 0.7978845608028654), poly));
          } else {
            inner = math::ErfOp::create(
                b, l, arith::MulFOp::create(b, l, x, floatCst(b, l, t, 0.7071067811865476)));
          }
          Value p = arith::AddFOp::create(b, l, one, inner);
          return arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, half, x), p);
        });
      })
      .Case<NotOp>([&](auto) -> ScalarFn {
        return un([](OpBuilder &b, Location l, Value x) -> Value {
          Value t = arith::ConstantOp::create(b, l, x.getType(), b.getIntegerAttr(x.getType(), 1));
          return arith::XOrIOp::create(b, l, x, t);
        });
      })
      .Case<IsNaNOp>([&](auto) -> ScalarFn {
        return un([](OpBuilder &b, Location l, Value x) -> Value {
          return arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, x, x);
        });
      })
      .Default([](Operation *) { return ScalarFn(); });
}

/// The scalar function of a binary op on operands of type `t` (the function
/// gets and returns signless scalars). Pow is powScalar.
ScalarFn binaryFn(StringRef kind, Type t) {
  bool isF = isa<FloatType>(t), isU = isUnsignedInt(t);
  using P = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  auto cmp = [&](P fp, IP sp, IP up) -> ScalarFn {
    IP ip = isU ? up : sp;
    return [isF, fp, ip](OpBuilder &b, Location l, ValueRange a) -> Value {
      if (isF)
        return arith::CmpFOp::create(b, l, fp, a[0], a[1]);
      return arith::CmpIOp::create(b, l, ip, a[0], a[1]);
    };
  };
#define BIN(F, I)                                                              \
  [isF](OpBuilder &b, Location l, ValueRange a) -> Value {                     \
    if (isF)                                                                   \
      return F::create(b, l, a[0], a[1]);                                      \
    return I::create(b, l, a[0], a[1]);                                        \
  }
  if (kind == "Add" || kind == "Sum") return BIN(arith::AddFOp, arith::AddIOp);
  if (kind == "Sub") return BIN(arith::SubFOp, arith::SubIOp);
  if (kind == "Mul") return BIN(arith::MulFOp, arith::MulIOp);
  if (kind == "Div" && isU) return BIN(arith::DivFOp, arith::DivUIOp);
  if (kind == "Div") return BIN(arith::DivFOp, arith::DivSIOp);
  if (kind == "Max" && isU) return BIN(arith::MaximumFOp, arith::MaxUIOp);
  if (kind == "Max") return BIN(arith::MaximumFOp, arith::MaxSIOp);
  if (kind == "Min" && isU) return BIN(arith::MinimumFOp, arith::MinUIOp);
  if (kind == "Min") return BIN(arith::MinimumFOp, arith::MinSIOp);
  if (kind == "And") return BIN(arith::AndIOp, arith::AndIOp);
  if (kind == "Or") return BIN(arith::OrIOp, arith::OrIOp);
#undef BIN
  if (kind == "Equal") return cmp(P::OEQ, IP::eq, IP::eq);
  if (kind == "Less") return cmp(P::OLT, IP::slt, IP::ult);
  if (kind == "LessOrEqual") return cmp(P::OLE, IP::sle, IP::ule);
  if (kind == "Greater") return cmp(P::OGT, IP::sgt, IP::ugt);
  if (kind == "GreaterOrEqual") return cmp(P::OGE, IP::sge, IP::uge);
  return {};
}

/// Lowers `op` to a generic computing `fn` on signless scalars.
LogicalResult lowerWith(Operation *op, LoweringState &s, ArrayRef<Value> olds,
                        Type resultElt, const ScalarFn &fn) {
  SmallVector<Value> operands;
  SmallVector<SmallVector<DimExpr>> dims;
  for (Value v : olds) {
    operands.push_back(s.get(v));
    dims.push_back(s.dims(v));
  }
  auto body = [&](OpBuilder &b, Location l, ValueRange args) -> Value {
    SmallVector<Value> in;
    for (Value a : args)
      in.push_back(retype(b, l, a, signlessOf(a.getType())));
    return retype(b, l, fn(b, l, in), resultElt);
  };
  Value r = buildElementwise(s, op->getLoc(), s.dims(op->getResult(0)), resultElt,
                             operands, dims, body);
  s.set(op->getResult(0), r);
  return success();
}

} // namespace

std::optional<LogicalResult> lockstep::lowerElementwise(Operation *op,
                                                        LoweringState &s) {
  if (!isa<ONNXNodeOpInterface>(op) || op->getNumResults() != 1)
    return std::nullopt;
  Type resultElt = s.plainType(op->getResult(0)).getElementType();
  if (isa<IdentityOp>(op)) {
    s.set(op->getResult(0), s.get(op->getOperand(0)));
    return success();
  }
  if (op->getNumOperands() >= 1) {
    Type in = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
    if (ScalarFn fn = unaryFn(op, in))
      return lowerWith(op, s, {op->getOperand(0)}, resultElt, fn);
  }
  StringRef kind = op->getName().stripDialect();
  if (auto pow = dyn_cast<PowOp>(op)) {
    // x^2 of floats (a norm's square) is x·x and x^3 (tanh GELU's cube) is
    // (x·x)·x, as onnxruntime computes both: the correctly rounded square,
    // where Lockstep's pow (about 1 ulp) could differ from it, and products
    // rather than a log and an exp.
    int small = isa<FloatType>(s.plainType(pow.getA()).getElementType())
                    ? smallConstantExponent(pow.getB())
                    : 0;
    if (small)
      return lowerWith(op, s, {pow.getA()}, resultElt,
                       [small](OpBuilder &b, Location l, ValueRange a) -> Value {
                         Value sq = arith::MulFOp::create(b, l, a[0], a[0]);
                         return small == 2 ? sq : arith::MulFOp::create(b, l, sq, a[0]);
                       });
    bool bu = isUnsignedInt(s.plainType(pow.getA()).getElementType());
    bool eu = isUnsignedInt(s.plainType(pow.getB()).getElementType());
    return lowerWith(op, s, {pow.getA(), pow.getB()}, resultElt,
                     [bu, eu](OpBuilder &b, Location l, ValueRange a) -> Value {
                       return powScalar(b, l, a[0], a[1], bu, eu);
                     });
  }
  if (isa<AddOp, SubOp, MulOp, DivOp, EqualOp, LessOp, LessOrEqualOp,
          GreaterOp, GreaterOrEqualOp, AndOp, OrOp, MaxOp, MinOp, SumOp>(op)) {
    Type in = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
    ScalarFn fn = binaryFn(kind, in);
    if (!fn)
      return op->emitError("unsupported element type ") << in << " for " << kind;
    if (op->getNumOperands() == 1) {
      s.set(op->getResult(0), s.get(op->getOperand(0)));
      return success();
    }
    // A variadic op folds left to right over its inputs.
    ScalarFn folded = [fn](OpBuilder &b, Location l, ValueRange a) -> Value {
      Value acc = a[0];
      for (Value v : a.drop_front())
        acc = fn(b, l, ValueRange{acc, v});
      return acc;
    };
    return lowerWith(op, s, SmallVector<Value>(op->getOperands()), resultElt,
                     folded);
  }
  if (auto w = dyn_cast<WhereOp>(op))
    return lowerWith(op, s, {w.getCondition(), w.getX(), w.getY()}, resultElt,
                     [](OpBuilder &b, Location l, ValueRange a) -> Value {
                       return arith::SelectOp::create(b, l, a[0], a[1], a[2]);
                     });
  if (isa<CastOp, CastLikeOp>(op)) {
    Type from = s.plainType(op->getOperand(0)).getElementType();
    bool fromU = isUnsignedInt(from), toU = isUnsignedInt(resultElt);
    Type to = signlessOf(resultElt);
    return lowerWith(op, s, {op->getOperand(0)}, resultElt,
                     [=](OpBuilder &b, Location l, ValueRange a) -> Value {
                       return castSignless(b, l, a[0], fromU, to, toU);
                     });
  }
  return std::nullopt;
}
