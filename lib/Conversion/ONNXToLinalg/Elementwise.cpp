//===- Elementwise.cpp - Lowering elementwise onnx ops --------------------===//
//
// Unary, binary, variadic, Where and Cast ops become one linalg.generic each,
// with numpy broadcasting expressed in the indexing maps (a broadcast dim reads
// index 0). Each scalar operation is spelled out here; no fast-math flags.
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

/// Converts a scalar between element types with ONNX Cast semantics.
Value castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto fromF = dyn_cast<FloatType>(from), toF = dyn_cast<FloatType>(to);
  auto fromI = dyn_cast<IntegerType>(from), toI = dyn_cast<IntegerType>(to);
  if (fromF && toF)
    return fromF.getWidth() < toF.getWidth()
               ? arith::ExtFOp::create(b, loc, to, v).getResult()
               : arith::TruncFOp::create(b, loc, to, v).getResult();
  if (fromI && toF)
    return fromI.getWidth() == 1 || fromI.isUnsigned()
               ? arith::UIToFPOp::create(b, loc, to, v).getResult()
               : arith::SIToFPOp::create(b, loc, to, v).getResult();
  if (fromF && toI) {
    if (toI.getWidth() == 1)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   floatCst(b, loc, from, 0.0));
    return arith::FPToSIOp::create(b, loc, to, v);
  }
  if (fromI && toI) {
    if (toI.getWidth() == 1)
      return arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne, v,
          arith::ConstantOp::create(b, loc, from, b.getIntegerAttr(from, 0)));
    if (fromI.getWidth() < toI.getWidth())
      return fromI.getWidth() == 1 || fromI.isUnsigned()
                 ? arith::ExtUIOp::create(b, loc, to, v).getResult()
                 : arith::ExtSIOp::create(b, loc, to, v).getResult();
    return arith::TruncIOp::create(b, loc, to, v);
  }
  return {};
}

/// The scalar function of a unary op, or null when unsupported for `t`.
ScalarFn unaryFn(Operation *op, Type t) {
  bool isF = isa<FloatType>(t);
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
      .Case<AbsOp>([&](auto) {
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
        return un([](OpBuilder &b, Location l, Value x) -> Value {
          Type t = x.getType();
          Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
          Value d = arith::AddFOp::create(b, l, floatCst(b, l, t, 1.0), e);
          return arith::DivFOp::create(b, l, floatCst(b, l, t, 1.0), d);
        });
      })
      .Case<ReluOp>([&](auto) -> ScalarFn {
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

/// The scalar function of a binary op on operands of type `t`.
ScalarFn binaryFn(StringRef kind, Type t) {
  bool isF = isa<FloatType>(t);
  using P = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  auto cmp = [&](P fp, IP ip) -> ScalarFn {
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
  if (kind == "Div") return BIN(arith::DivFOp, arith::DivSIOp);
  if (kind == "Max") return BIN(arith::MaximumFOp, arith::MaxSIOp);
  if (kind == "Min") return BIN(arith::MinimumFOp, arith::MinSIOp);
  if (kind == "And") return BIN(arith::AndIOp, arith::AndIOp);
  if (kind == "Or") return BIN(arith::OrIOp, arith::OrIOp);
#undef BIN
  if (kind == "Pow") {
    if (!isF)
      return {};
    return [](OpBuilder &b, Location l, ValueRange a) -> Value {
      return math::PowFOp::create(b, l, a[0], a[1]);
    };
  }
  if (kind == "Equal") return cmp(P::OEQ, IP::eq);
  if (kind == "Less") return cmp(P::OLT, IP::slt);
  if (kind == "LessOrEqual") return cmp(P::OLE, IP::sle);
  if (kind == "Greater") return cmp(P::OGT, IP::sgt);
  if (kind == "GreaterOrEqual") return cmp(P::OGE, IP::sge);
  return {};
}

LogicalResult lowerWith(Operation *op, LoweringState &s, ArrayRef<Value> olds,
                        Type resultElt, const ScalarFn &fn) {
  SmallVector<Value> operands;
  SmallVector<SmallVector<DimExpr>> dims;
  for (Value v : olds) {
    operands.push_back(s.get(v));
    dims.push_back(s.dims(v));
  }
  Value r = buildElementwise(s, op->getLoc(), s.dims(op->getResult(0)), resultElt,
                             operands, dims, fn);
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
  if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, EqualOp, LessOp, LessOrEqualOp,
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
    return lowerWith(op, s, {op->getOperand(0)}, resultElt,
                     [resultElt](OpBuilder &b, Location l, ValueRange a) -> Value {
                       return castScalar(b, l, a[0], resultElt);
                     });
  }
  return std::nullopt;
}
