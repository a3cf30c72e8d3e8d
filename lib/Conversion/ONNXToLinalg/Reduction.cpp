//===- Reduction.cpp - Lowering reductions, Softmax and LayerNormalization ===//
//
// Reductions become linalg.generic ops with reduction iterators over the
// reduced axes and an explicit initial value. Softmax and LayerNormalization
// are decomposed into reductions and elementwise ops, so that every reduction
// of the model is visible to the canonical reduction pass.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Conversion/ONNXToLinalg.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

enum class Kind { Sum, Max, Min };

Value identity(OpBuilder &b, Location loc, Type t, Kind k) {
  if (auto ft = dyn_cast<FloatType>(t)) {
    if (k == Kind::Sum)
      return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, 0.0));
    APFloat inf = APFloat::getInf(ft.getFloatSemantics(), k == Kind::Max);
    return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, inf));
  }
  unsigned w = t.getIntOrFloatBitWidth();
  APInt v = k == Kind::Sum   ? APInt(w, 0)
            : k == Kind::Max ? APInt::getSignedMinValue(w)
                             : APInt::getSignedMaxValue(w);
  return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, v));
}

Value combine(OpBuilder &b, Location loc, Kind k, Value acc, Value x) {
  bool f = isa<FloatType>(x.getType());
  switch (k) {
  case Kind::Sum:
    return f ? arith::AddFOp::create(b, loc, acc, x).getResult()
             : arith::AddIOp::create(b, loc, acc, x).getResult();
  case Kind::Max:
    return f ? arith::MaximumFOp::create(b, loc, acc, x).getResult()
             : arith::MaxSIOp::create(b, loc, acc, x).getResult();
  case Kind::Min:
    return f ? arith::MinimumFOp::create(b, loc, acc, x).getResult()
             : arith::MinSIOp::create(b, loc, acc, x).getResult();
  }
  return {};
}

struct Reduced {
  Value value;
  SmallVector<DimExpr> dims;
};

/// Reduces `in` (dims `inDims`) over the axes marked in `reduced`; the
/// reduced axes are kept with size 1 or dropped.
Reduced reduce(LoweringState &s, Location loc, Value in,
               ArrayRef<DimExpr> inDims, ArrayRef<bool> reduced, Kind k,
               bool keepdims) {
  OpBuilder &b = s.builder();
  unsigned rank = inDims.size();
  SmallVector<DimExpr> outDims;
  SmallVector<AffineExpr> outMap;
  SmallVector<utils::IteratorType> iters;
  for (unsigned i = 0; i < rank; ++i) {
    iters.push_back(reduced[i] ? utils::IteratorType::reduction
                               : utils::IteratorType::parallel);
    if (!reduced[i]) {
      outDims.push_back(inDims[i]);
      outMap.push_back(b.getAffineDimExpr(i));
    } else if (keepdims) {
      outDims.push_back(DimExpr(1));
      outMap.push_back(b.getAffineConstantExpr(0));
    }
  }
  Type elt = cast<ShapedType>(in.getType()).getElementType();
  Value init = linalg::FillOp::create(b, loc, identity(b, loc, elt, k),
                                      s.empty(loc, outDims, elt))
                   .getResult(0);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, outMap, b.getContext())};
  auto g = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{in}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        linalg::YieldOp::create(nb, l, combine(nb, l, k, a[1], a[0]));
      });
  return {g.getResult(0), outDims};
}

/// The element count of the reduced axes, as a scalar of float type `t`.
Value countOf(LoweringState &s, Location loc, ArrayRef<DimExpr> dims,
              ArrayRef<bool> reduced, Type t) {
  DimExpr n(1);
  for (unsigned i = 0; i < dims.size(); ++i)
    if (reduced[i])
      n = n * dims[i];
  OpBuilder &b = s.builder();
  if (auto c = n.getConstant())
    return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, double(*c)));
  Value idx = s.materialize(n);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
  return arith::SIToFPOp::create(b, loc, t, i64);
}

Value binary(LoweringState &s, Location loc, ArrayRef<DimExpr> out, Value x,
             ArrayRef<DimExpr> xd, Value y, ArrayRef<DimExpr> yd,
             function_ref<Value(OpBuilder &, Location, Value, Value)> fn) {
  Type elt = cast<ShapedType>(x.getType()).getElementType();
  return buildElementwise(
      s, loc, out, elt, {x, y},
      {SmallVector<DimExpr>(xd), SmallVector<DimExpr>(yd)},
      [&](OpBuilder &b, Location l, ValueRange a) { return fn(b, l, a[0], a[1]); });
}

template <typename ReduceOpT>
LogicalResult lowerReduce(ReduceOpT op, LoweringState &s, Kind k, bool mean) {
  Location loc = op.getLoc();
  SmallVector<DimExpr> dims = s.dims(op.getData());
  SmallVector<int64_t> axes;
  if (Value a = op.getAxesInput()) {
    auto vals = s.symValues(a);
    if (!vals)
      return op.emitError("the axes must be constant");
    for (auto &v : *vals)
      axes.push_back(*v.getConstant());
  } else if (auto attr = op.getAxes()) {
    axes.assign(attr->begin(), attr->end());
  }
  int64_t rank = dims.size();
  SmallVector<bool> reduced(rank, axes.empty() && !op.getNoopWithEmptyAxes());
  for (int64_t a : axes)
    reduced[a < 0 ? a + rank : a] = true;
  Value in = s.get(op.getData());
  if (llvm::none_of(reduced, [](bool r) { return r; })) {
    s.set(op.getReduced(), in);
    return success();
  }
  Reduced r = reduce(s, loc, in, dims, reduced, k, op.getKeepdims());
  Value v = r.value;
  if (mean) {
    Type elt = cast<ShapedType>(v.getType()).getElementType();
    if (!isa<FloatType>(elt))
      return op.emitError("ReduceMean of integers is not supported");
    Value n = countOf(s, loc, dims, reduced, elt);
    v = buildElementwise(s, loc, r.dims, elt, {v}, {r.dims},
                         [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                           return arith::DivFOp::create(b, l, a[0], n);
                         });
  }
  s.set(op.getReduced(), v);
  return success();
}

LogicalResult lowerSoftmax(SoftmaxOp op, LoweringState &s) {
  Location loc = op.getLoc();
  SmallVector<DimExpr> dims = s.dims(op.getInput());
  int64_t rank = dims.size(), axis = (int64_t)op.getAxis();
  if (axis < 0)
    axis += rank;
  SmallVector<bool> reduced(rank, false);
  reduced[axis] = true;
  Value x = s.get(op.getInput());
  Reduced m = reduce(s, loc, x, dims, reduced, Kind::Max, true);
  Value e = binary(s, loc, dims, x, dims, m.value, m.dims,
                   [](OpBuilder &b, Location l, Value a, Value c) -> Value {
                     return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, a, c));
                   });
  Reduced sum = reduce(s, loc, e, dims, reduced, Kind::Sum, true);
  Value y = binary(s, loc, dims, e, dims, sum.value, sum.dims,
                   [](OpBuilder &b, Location l, Value a, Value c) -> Value {
                     return arith::DivFOp::create(b, l, a, c);
                   });
  s.set(op.getOutput(), y);
  return success();
}

LogicalResult lowerLayerNorm(LayerNormalizationOp op, LoweringState &s) {
  Location loc = op.getLoc();
  SmallVector<DimExpr> dims = s.dims(op.getX());
  int64_t rank = dims.size(), axis = (int64_t)op.getAxis();
  if (axis < 0)
    axis += rank;
  SmallVector<bool> reduced(rank, false);
  for (int64_t i = axis; i < rank; ++i)
    reduced[i] = true;
  Value x = s.get(op.getX());
  Type elt = cast<ShapedType>(x.getType()).getElementType();
  Value n = countOf(s, loc, dims, reduced, elt);
  auto divN = [&](Reduced r) {
    return buildElementwise(s, loc, r.dims, elt, {r.value}, {r.dims},
                            [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                              return arith::DivFOp::create(b, l, a[0], n);
                            });
  };
  Reduced sum = reduce(s, loc, x, dims, reduced, Kind::Sum, true);
  Value mean = divN(sum);
  Value d = binary(s, loc, dims, x, dims, mean, sum.dims,
                   [](OpBuilder &b, Location l, Value a, Value c) -> Value {
                     return arith::SubFOp::create(b, l, a, c);
                   });
  Value sq = binary(s, loc, dims, d, dims, d, dims,
                    [](OpBuilder &b, Location l, Value a, Value c) -> Value {
                      return arith::MulFOp::create(b, l, a, c);
                    });
  Reduced ssq = reduce(s, loc, sq, dims, reduced, Kind::Sum, true);
  Value var = divN(ssq);
  double eps = op.getEpsilon().convertToDouble();
  Value inv = buildElementwise(
      s, loc, ssq.dims, elt, {var}, {ssq.dims},
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value e = arith::ConstantOp::create(b, l, elt, b.getFloatAttr(elt, eps));
        Value sd = math::SqrtOp::create(b, l, arith::AddFOp::create(b, l, a[0], e));
        Value one = arith::ConstantOp::create(b, l, elt, b.getFloatAttr(elt, 1.0));
        return arith::DivFOp::create(b, l, one, sd);
      });
  SmallVector<Value> operands = {d, inv, s.get(op.getScale())};
  SmallVector<SmallVector<DimExpr>> opDims = {dims, ssq.dims, s.dims(op.getScale())};
  if (op.getB()) {
    operands.push_back(s.get(op.getB()));
    opDims.push_back(s.dims(op.getB()));
  }
  Value y = buildElementwise(
      s, loc, dims, elt, operands, opDims,
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value v = arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, a[0], a[1]), a[2]);
        if (a.size() > 3)
          v = arith::AddFOp::create(b, l, v, a[3]);
        return v;
      });
  s.set(op.getY(), y);
  auto stats = op.getStats();
  if (!stats.empty())
    s.set(stats[0], mean);
  if (stats.size() > 1)
    s.set(stats[1], inv);
  return success();
}

} // namespace

std::optional<LogicalResult> lockstep::lowerReduction(Operation *op,
                                                      LoweringState &s) {
  return TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case<ReduceSumOp>([&](auto o) { return lowerReduce(o, s, Kind::Sum, false); })
      .Case<ReduceMeanOp>([&](auto o) { return lowerReduce(o, s, Kind::Sum, true); })
      .Case<ReduceMaxOp>([&](auto o) { return lowerReduce(o, s, Kind::Max, false); })
      .Case<ReduceMinOp>([&](auto o) { return lowerReduce(o, s, Kind::Min, false); })
      .Case<SoftmaxOp>([&](auto o) { return lowerSoftmax(o, s); })
      .Case<LayerNormalizationOp>([&](auto o) { return lowerLayerNorm(o, s); })
      .Default([](Operation *) { return std::nullopt; });
}
