//===- Reduction.cpp - Lowering reductions, Softmax and LayerNormalization ===//
//
// Reductions become linalg.generic ops with reduction iterators over the
// reduced axes and an explicit initial value. Softmax and LayerNormalization
// are decomposed into reductions and elementwise ops, so that every reduction
// of the model is visible to the canonical reduction pass. CumSum is a sum
// too: output i along the axis reduces over the whole axis from index 0 with
// the elements outside its prefix masked to zero.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Conversion/ONNXToLinalg.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
  if (w == 1) // bool: max is or, min is and
    return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, k == Kind::Min ? 1 : 0));
  APInt v = k == Kind::Sum   ? APInt(w, 0)
            : k == Kind::Max ? APInt::getSignedMinValue(w)
                             : APInt::getSignedMaxValue(w);
  return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, v));
}

Value combine(OpBuilder &b, Location loc, Kind k, Value acc, Value x) {
  bool f = isa<FloatType>(x.getType());
  // On bool, max is or and min is and (maxsi would take true, -1, as the
  // smaller).
  if (x.getType().isInteger(1) && k != Kind::Sum)
    return k == Kind::Max ? arith::OrIOp::create(b, loc, acc, x).getResult()
                          : arith::AndIOp::create(b, loc, acc, x).getResult();
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

/// The groups that expand the reduction of a tensor without its reduced
/// axes back to its rank with 1s there: each kept axis takes the reduced
/// axes that follow it, and the first kept axis those before it too. With
/// every axis reduced there is no group (a 0-d tensor expands to all 1s).
SmallVector<ReassociationIndices> expandGroups(ArrayRef<bool> reduced) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices leading;
  for (int64_t i = 0; i < (int64_t)reduced.size(); ++i) {
    if (reduced[i]) {
      if (groups.empty())
        leading.push_back(i);
      else
        groups.back().push_back(i);
      continue;
    }
    groups.push_back(leading);
    groups.back().push_back(i);
    leading.clear();
  }
  return groups;
}

/// Reduces `in` (dims `inDims`) over the axes marked in `reduced`; the
/// reduced axes are kept with size 1 or dropped.
Reduced reduce(LoweringState &s, Location loc, Value in,
               ArrayRef<DimExpr> inDims, ArrayRef<bool> reduced, Kind k,
               bool keepdims) {
  OpBuilder &b = s.builder();
  unsigned rank = inDims.size();
  // The output dims: the input's with the reduced ones dropped or kept as 1.
  SmallVector<DimExpr> outDims;
  for (unsigned i = 0; i < rank; ++i)
    if (!reduced[i] || keepdims)
      outDims.push_back(reduced[i] ? DimExpr(1) : inDims[i]);
  // The canonical form reduces over one dim: the reduced axes are moved
  // together (a transpose, when they are not adjacent) and collapsed.
  unsigned nRed = llvm::count(reduced, true);
  if (nRed > 1) {
    SmallVector<int64_t> perm;
    for (unsigned i = 0; i < rank; ++i)
      if (!reduced[i])
        perm.push_back(i);
    for (unsigned i = 0; i < rank; ++i)
      if (reduced[i])
        perm.push_back(i);
    unsigned first = llvm::find(reduced, true) - reduced.begin();
    bool adjacent = llvm::all_of(llvm::seq(first, first + nRed),
                                 [&](unsigned i) { return reduced[i]; });
    SmallVector<DimExpr> dims(inDims);
    SmallVector<bool> red(reduced);
    Type elt = cast<ShapedType>(in.getType()).getElementType();
    if (!adjacent) {
      SmallVector<DimExpr> pd;
      SmallVector<bool> pr;
      for (int64_t p : perm) {
        pd.push_back(inDims[p]);
        pr.push_back(reduced[p]);
      }
      in = linalg::TransposeOp::create(b, loc, in, s.empty(loc, pd, elt), perm)
               .getResult()[0];
      dims = pd;
      red = pr;
      first = rank - nRed;
    }
    SmallVector<ReassociationIndices> assoc;
    SmallVector<DimExpr> cd;
    SmallVector<bool> cr;
    for (unsigned i = 0; i < rank; ++i) {
      if (red[i] && i != first) {
        assoc.back().push_back(i);
        cd.back() = cd.back() * dims[i];
        continue;
      }
      assoc.push_back({(int64_t)i});
      cd.push_back(dims[i]);
      cr.push_back(red[i]);
    }
    SmallVector<int64_t> shape;
    for (const DimExpr &d : cd)
      shape.push_back(d.getConstant().value_or(ShapedType::kDynamic));
    in = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get(shape, elt), in, assoc);
    // Reduce the collapsed tensor, keeping the one reduced dim when keepdims
    // is set, then give the result the output's dims.
    Reduced r = reduce(s, loc, in, cd, cr, k, /*keepdims=*/false);
    if (!keepdims)
      return r;
    SmallVector<int64_t> outShape;
    for (const DimExpr &d : outDims)
      outShape.push_back(d.getConstant().value_or(ShapedType::kDynamic));
    Value v = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(outShape, elt), r.value,
        expandGroups(reduced), s.mixed(outDims));
    return {v, outDims};
  }
  outDims.clear();
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
    SmallVector<DimExpr> ad = s.dims(a);
    if (!vals && ad.size() == 1 && ad[0] == DimExpr(0))
      vals.emplace(); // an axes input of size 0 is empty
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

/// The axes that Softmax (`axis` alone) or LayerNormalization (`axis` to the
/// last) reduce over, with a negative `axis` counted from the end.
SmallVector<bool> reducedAxes(int64_t axis, int64_t rank, bool toLast) {
  if (axis < 0)
    axis += rank;
  SmallVector<bool> reduced(rank, false);
  for (int64_t i = axis; i < (toLast ? rank : axis + 1); ++i)
    reduced[i] = true;
  return reduced;
}

LogicalResult lowerSoftmax(SoftmaxOp op, LoweringState &s) {
  // linalg.softmax leaves the order of its sums open; the canonical
  // reduction pass gives it the contract's chunk-local statistics.
  int64_t rank = s.dims(op.getInput()).size();
  int64_t axis = (int64_t)op.getAxis();
  if (axis < 0)
    axis += rank;
  Value x = s.get(op.getInput());
  Value out = s.empty(op.getOutput());
  auto sm = linalg::SoftmaxOp::create(s.builder(), op.getLoc(), out.getType(), x,
                                      out, axis);
  s.set(op.getOutput(), sm.getResult()[0]);
  return success();
}

LogicalResult lowerLayerNorm(LayerNormalizationOp op, LoweringState &s) {
  Location loc = op.getLoc();
  SmallVector<DimExpr> dims = s.dims(op.getX());
  SmallVector<bool> reduced =
      reducedAxes((int64_t)op.getAxis(), dims.size(), /*toLast=*/true);
  Value x = s.get(op.getX());
  Type xElt = cast<ShapedType>(x.getType()).getElementType();
  // As ONNX's function body: the statistics and the normalized x are
  // computed in the stash type, float32 (the type that shape inference gives
  // Mean and InvStdDev), and the scale and bias are applied in x's type.
  if (op.getStashType() != 1)
    return op.emitError("stash_type ") << op.getStashType() << " is not supported";
  if (!isa<FloatType>(xElt))
    return op.emitError("LayerNormalization of ") << xElt << " is not supported";
  Type elt = s.builder().getF32Type();
  if (xElt != elt)
    x = buildElementwise(s, loc, dims, elt, {x}, {dims},
                         [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                           return castScalar(b, l, a[0], elt);
                         });
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
      s, loc, dims, xElt, operands, opDims,
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value v = castScalar(b, l, arith::MulFOp::create(b, l, a[0], a[1]), xElt);
        v = arith::MulFOp::create(b, l, v, a[2]);
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

/// The running sums of `x` along `axis`: a generic over the output dims and
/// a reduction dim k over the axis, summing x[.., k, ..] where k is in the
/// prefix of i (k <= i; k < i when exclusive; k >= i or k > i reversed) and
/// 0 elsewhere. Adding the zeros of the mask leaves every sum as it is (the
/// accumulator starts at +0 and never becomes -0), so each output is the sum
/// of its prefix from index 0.
Value cumSum(LoweringState &s, Location loc, Value x, ArrayRef<DimExpr> dims,
             int64_t axis, bool exclusive, bool reverse) {
  OpBuilder &b = s.builder();
  unsigned rank = dims.size();
  Type elt = cast<ShapedType>(x.getType()).getElementType();
  SmallVector<AffineExpr> inExprs;
  for (unsigned d = 0; d < rank; ++d)
    inExprs.push_back(b.getAffineDimExpr(d == axis ? rank : d));
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank + 1, 0, inExprs, b.getContext()),
      AffineMap::getMultiDimIdentityMap(rank + 1, b.getContext()).getMajorSubMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Value init = linalg::FillOp::create(b, loc, identity(b, loc, elt, Kind::Sum),
                                      s.empty(loc, dims, elt))
                   .getResult(0);
  using P = arith::CmpIPredicate;
  P pred = reverse ? (exclusive ? P::ugt : P::uge) : (exclusive ? P::ult : P::ule);
  auto g = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{x}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value i = linalg::IndexOp::create(nb, l, axis);
        Value k = linalg::IndexOp::create(nb, l, rank);
        Value in = arith::CmpIOp::create(nb, l, pred, k, i);
        Value masked = arith::SelectOp::create(nb, l, in, a[0],
                                               identity(nb, l, elt, Kind::Sum));
        linalg::YieldOp::create(nb, l, combine(nb, l, Kind::Sum, a[1], masked));
      });
  return g.getResult(0);
}

LogicalResult lowerCumSum(CumSumOp op, LoweringState &s) {
  Location loc = op.getLoc();
  SmallVector<DimExpr> dims = s.dims(op.getX());
  int64_t rank = dims.size();
  Type elt = s.plainType(op.getY()).getElementType();
  if (!elt.isSignlessIntOrFloat() || elt.isInteger(1))
    return op.emitError("CumSum of ") << elt << " is not supported";
  Value x = s.get(op.getX());
  bool exclusive = op.getExclusive(), reverse = op.getReverse();
  auto vals = s.symValues(op.getAxis());
  if (rank == 1 || (vals && (*vals)[0].getConstant())) {
    int64_t axis = rank == 1 ? 0 : *(*vals)[0].getConstant();
    if (axis < -rank || axis >= rank)
      return op.emitError("CumSum axis ") << axis << " is out of range";
    if (axis < 0)
      axis += rank;
    s.set(op.getY(), cumSum(s, loc, x, dims, axis, exclusive, reverse));
    return success();
  }
  // An axis known only at run time: the running sums along every axis, and
  // the one of the axis picked elementwise (a graph input axis is rare; a
  // model's is a constant).
  OpBuilder &b = s.builder();
  SmallVector<Value> zeros(s.dims(op.getAxis()).size(),
                           arith::ConstantIndexOp::create(b, loc, 0));
  Value a = tensor::ExtractOp::create(b, loc, s.get(op.getAxis()), zeros);
  Type at = a.getType();
  Value rankV = arith::ConstantOp::create(b, loc, at, b.getIntegerAttr(at, rank));
  Value zero = arith::ConstantOp::create(b, loc, at, b.getIntegerAttr(at, 0));
  Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, zero);
  a = arith::SelectOp::create(b, loc, neg, arith::AddIOp::create(b, loc, a, rankV), a);
  SmallVector<Value> all;
  SmallVector<SmallVector<DimExpr>> allDims;
  for (int64_t axis = 0; axis < rank; ++axis) {
    all.push_back(cumSum(s, loc, x, dims, axis, exclusive, reverse));
    allDims.push_back(SmallVector<DimExpr>(dims));
  }
  Value y = buildElementwise(
      s, loc, dims, elt, all, allDims,
      [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
        Value r = v[rank - 1];
        for (int64_t axis = rank - 2; axis >= 0; --axis) {
          Value is = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq, a,
              arith::ConstantOp::create(nb, l, at, nb.getIntegerAttr(at, axis)));
          r = arith::SelectOp::create(nb, l, is, v[axis], r);
        }
        return r;
      });
  s.set(op.getY(), y);
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
      .Case<CumSumOp>([&](auto o) { return lowerCumSum(o, s); })
      .Case<LayerNormalizationOp>([&](auto o) { return lowerLayerNorm(o, s); })
      .Default([](Operation *) { return std::nullopt; });
}
