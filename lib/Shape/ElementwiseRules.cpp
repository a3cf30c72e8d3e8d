//===- ElementwiseRules.cpp - Shapes of elementwise onnx ops --------------===//
//
// Unary ops keep their operand's shape; binary, variadic and Where broadcast.
// Arithmetic and comparisons on tracked integer values are evaluated on
// DimExprs, so that shape arithmetic (p + s, n * heads) stays exact.
//
//===----------------------------------------------------------------------===//
#include "RuleUtils.h"
#include "lockstep/Dialect/ONNX/ONNXTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::shape;
using namespace lockstep::onnxir;

namespace {

using BinFn = std::function<std::optional<DimExpr>(const DimExpr &, const DimExpr &)>;

// Integer Div truncates toward zero; symbolic operands are sizes (>= 0).
std::optional<DimExpr> divValues(const DimExpr &a, const DimExpr &b) {
  auto ca = a.getConstant(), cb = b.getConstant();
  if (ca && cb)
    return *cb == 0 ? std::nullopt : std::optional<DimExpr>(*ca / *cb);
  return a.divExact(b);
}

std::optional<DimExpr> cmpValues(StringRef kind, const DimExpr &a,
                                 const DimExpr &b) {
  auto diff = (a - b).getConstant();
  if (!diff) {
    // A size compared with a negative constant: sizes are >= 0.
    if (kind == "Equal" && (a - b).isNonNegative() && !(a - b).isConstant()) {
      auto cb = b.getConstant();
      if (cb && *cb < 0)
        return DimExpr(0);
    }
    return std::nullopt;
  }
  int64_t d = *diff;
  bool r = kind == "Equal" ? d == 0
           : kind == "Less" ? d < 0
           : kind == "LessOrEqual" ? d <= 0
           : kind == "Greater" ? d > 0
                               : d >= 0;
  return DimExpr(r ? 1 : 0);
}

std::optional<Vals> combine(const std::optional<Vals> &a,
                            const std::optional<Vals> &b, size_t n,
                            const BinFn &fn) {
  auto va = broadcastValues(a, n), vb = broadcastValues(b, n);
  if (!va || !vb)
    return std::nullopt;
  Vals out;
  for (size_t i = 0; i < n; ++i)
    out.push_back((*va)[i] && (*vb)[i] ? fn(*(*va)[i], *(*vb)[i]) : std::nullopt);
  return out;
}

std::optional<int64_t> elementCount(const Dims &dims) {
  int64_t n = 1;
  for (auto &d : dims) {
    auto k = d.getConstant();
    if (!k)
      return std::nullopt;
    n *= *k;
  }
  return n;
}

LogicalResult inferBinary(RuleCtx &c, Value a, Value b, StringRef kind) {
  const SymTensor &ta = c.in(a), &tb = c.in(b);
  auto dims = broadcast(c, {ta.dims, tb.dims});
  if (failed(dims))
    return failure();
  bool cmp = kind == "Equal" || kind == "Less" || kind == "LessOrEqual" ||
             kind == "Greater" || kind == "GreaterOrEqual";
  bool logic = kind == "And" || kind == "Or";
  Type elt = (cmp || logic) ? c.i1() : ta.elementType;
  std::optional<Vals> vals;
  auto n = elementCount(*dims);
  if (n && *n <= kMaxTrackedElements && ta.elementType.isIntOrIndex()) {
    BinFn fn;
    if (kind == "Add")
      fn = [](auto &x, auto &y) { return std::optional<DimExpr>(x + y); };
    else if (kind == "Sub")
      fn = [](auto &x, auto &y) { return std::optional<DimExpr>(x - y); };
    else if (kind == "Mul")
      fn = [](auto &x, auto &y) { return std::optional<DimExpr>(x * y); };
    else if (kind == "Div")
      fn = divValues;
    else if (cmp)
      fn = [kind](auto &x, auto &y) { return cmpValues(kind, x, y); };
    else if (logic)
      fn = [kind](auto &x, auto &y) -> std::optional<DimExpr> {
        auto cx = x.getConstant(), cy = y.getConstant();
        if (!cx || !cy)
          return std::nullopt;
        bool r = kind == "And" ? (*cx && *cy) : (*cx || *cy);
        return DimExpr(r ? 1 : 0);
      };
    if (fn)
      vals = combine(ta.values, tb.values, *n, fn);
  }
  c.set(0, elt, *dims, vals);
  return success();
}

// Max, Min and Sum of any number of inputs.
LogicalResult inferVariadic(RuleCtx &c, StringRef kind) {
  if (c.op->getNumOperands() == 0)
    return c.fail("needs at least one input");
  SmallVector<Dims> shapes;
  for (Value v : c.op->getOperands())
    shapes.push_back(c.in(v).dims);
  auto dims = broadcast(c, shapes);
  if (failed(dims))
    return failure();
  const SymTensor &first = c.in(c.op->getOperand(0));
  std::optional<Vals> vals;
  auto n = elementCount(*dims);
  if (n && *n <= kMaxTrackedElements) {
    vals = broadcastValues(first.values, *n);
    for (Value v : c.op->getOperands().drop_front()) {
      vals = combine(vals, c.in(v).values, *n,
                     [kind](auto &x, auto &y) -> std::optional<DimExpr> {
                       if (kind == "Sum")
                         return x + y;
                       auto d = (x - y).getConstant();
                       if (!d)
                         return std::nullopt;
                       return (kind == "Max") == (*d >= 0) ? x : y;
                     });
    }
  }
  c.set(0, first.elementType, *dims, vals);
  return success();
}

LogicalResult inferWhere(RuleCtx &c, WhereOp op) {
  const SymTensor &tc = c.in(op.getCondition()), &tx = c.in(op.getX()),
                  &ty = c.in(op.getY());
  auto dims = broadcast(c, {tc.dims, tx.dims, ty.dims});
  if (failed(dims))
    return failure();
  std::optional<Vals> vals;
  auto n = elementCount(*dims);
  if (n && *n <= kMaxTrackedElements) {
    auto vc = broadcastValues(tc.values, *n), vx = broadcastValues(tx.values, *n),
         vy = broadcastValues(ty.values, *n);
    if (vc && vx && vy) {
      vals.emplace();
      for (int64_t i = 0; i < *n; ++i) {
        auto k = (*vc)[i] ? (*vc)[i]->getConstant() : std::nullopt;
        vals->push_back(k ? (*k ? (*vx)[i] : (*vy)[i]) : std::nullopt);
      }
    }
  }
  c.set(0, tx.elementType, *dims, vals);
  return success();
}

LogicalResult inferCast(RuleCtx &c, Value input, Type to) {
  const SymTensor &t = c.in(input);
  std::optional<Vals> vals;
  if (to.isIntOrIndex() && t.elementType.isIntOrIndex() && t.values) {
    vals = t.values;
    if (to.isInteger(1))
      for (auto &v : *vals)
        if (v) {
          auto k = v->getConstant();
          v = k ? std::optional<DimExpr>(DimExpr(*k != 0 ? 1 : 0)) : std::nullopt;
        }
  }
  c.set(0, to, t.dims, vals);
  return success();
}

} // namespace

LogicalResult lockstep::shape::inferElementwise(RuleCtx &c) {
  Operation *op = c.op;
  auto same = [&](Value v, std::optional<Type> elt = std::nullopt) {
    const SymTensor &t = c.in(v);
    c.set(0, elt ? *elt : t.elementType, t.dims,
          elt ? std::nullopt : t.values);
    return success();
  };
  StringRef kind = op->getName().stripDialect();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<NegOp, AbsOp, SqrtOp, ReciprocalOp, ExpOp, LogOp, TanhOp, ErfOp,
            SigmoidOp, SinOp, CosOp, ReluOp, GeluOp, SoftmaxOp, CumSumOp,
            TriluOp>([&](Operation *) {
        const SymTensor &t = c.in(op->getOperand(0));
        std::optional<Vals> vals;
        if (isa<NegOp>(op) && t.values) {
          vals.emplace();
          for (auto &v : *t.values)
            vals->push_back(v ? std::optional<DimExpr>(-*v) : std::nullopt);
        }
        c.set(0, t.elementType, t.dims, vals);
        return success();
      })
      .Case<IdentityOp>([&](IdentityOp o) { return same(o.getX()); })
      .Case<NotOp>([&](NotOp o) { return same(o.getX(), c.i1()); })
      .Case<IsNaNOp>([&](IsNaNOp o) { return same(o.getX(), c.i1()); })
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, EqualOp, LessOp, LessOrEqualOp,
            GreaterOp, GreaterOrEqualOp, AndOp, OrOp>([&](Operation *) {
        return inferBinary(c, op->getOperand(0), op->getOperand(1), kind);
      })
      .Case<MaxOp, MinOp, SumOp>([&](Operation *) { return inferVariadic(c, kind); })
      .Case<WhereOp>([&](WhereOp o) { return inferWhere(c, o); })
      .Case<CastOp>([&](CastOp o) {
        Type to = getElementType((int64_t)o.getTo(), op->getContext());
        if (!to)
          return c.fail("unsupported target type " +
                        Twine(getOnnxDataTypeName((int64_t)o.getTo())));
        return inferCast(c, o.getInput(), to);
      })
      .Case<CastLikeOp>([&](CastLikeOp o) {
        return inferCast(c, o.getInput(), c.in(o.getTargetType()).elementType);
      })
      .Case<ScatterNDOp>([&](ScatterNDOp o) {
        const SymTensor &t = c.in(o.getData());
        c.set(0, t.elementType, t.dims);
        return success();
      })
      .Default([](Operation *) { return failure(); });
}
