//===- Movement.cpp - Lowering data movement onnx ops ---------------------===//
//
// Reshape, Squeeze and Unsqueeze become tensor.reshape to the result's dims;
// Concat, Split and Slice become slices; Transpose is linalg.transpose;
// Gather and Trilu are linalg.generic ops that read by index; Expand is an
// elementwise copy with broadcasting.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Conversion/ONNXToLinalg.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

constexpr int64_t kHuge = int64_t(1) << 30;

LogicalResult lowerReshapeLike(Operation *op, Value data, Value result,
                               LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op->getLoc();
  SmallVector<Value> sizes;
  for (OpFoldResult d : s.mixedDims(result))
    sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, d));
  auto shapeType = RankedTensorType::get({(int64_t)sizes.size()}, b.getIndexType());
  Value shape = tensor::FromElementsOp::create(b, loc, shapeType, sizes);
  Value r = tensor::ReshapeOp::create(b, loc, s.plainType(result), s.get(data), shape);
  s.set(result, r);
  return success();
}

OpFoldResult fold(LoweringState &s, const DimExpr &e) {
  if (auto c = e.getConstant())
    return s.builder().getIndexAttr(*c);
  return s.materialize(e);
}

LogicalResult lowerConcat(ConcatOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  SmallVector<DimExpr> out = s.dims(op.getResult());
  int64_t rank = out.size(), axis = (int64_t)op.getAxis();
  if (axis < 0)
    axis += rank;
  Value acc = s.empty(op.getResult());
  DimExpr offset(0);
  for (Value in : op.getInputs()) {
    SmallVector<DimExpr> d = s.dims(in);
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        strides(rank, b.getIndexAttr(1));
    offsets[axis] = fold(s, offset);
    acc = tensor::InsertSliceOp::create(b, loc, s.get(in), acc, offsets,
                                        s.mixed(d), strides);
    offset = offset + d[axis];
  }
  s.set(op.getResult(), acc);
  return success();
}

LogicalResult lowerSplit(SplitOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  SmallVector<DimExpr> in = s.dims(op.getInput());
  int64_t rank = in.size(), axis = (int64_t)op.getAxis();
  if (axis < 0)
    axis += rank;
  DimExpr offset(0);
  for (Value r : op.getOutputs()) {
    SmallVector<DimExpr> d = s.dims(r);
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        strides(rank, b.getIndexAttr(1));
    offsets[axis] = fold(s, offset);
    s.set(r, tensor::ExtractSliceOp::create(b, loc, s.plainType(r),
                                            s.get(op.getInput()), offsets,
                                            s.mixed(d), strides));
    offset = offset + d[axis];
  }
  return success();
}

LogicalResult lowerSlice(SliceOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  SmallVector<DimExpr> in = s.dims(op.getData());
  int64_t rank = in.size();
  auto starts = s.symValues(op.getStarts());
  if (!starts)
    return op.emitError("Slice starts must be known at compile time");
  SmallVector<int64_t> axes, steps;
  if (Value a = op.getAxes()) {
    auto v = s.symValues(a);
    if (!v)
      return op.emitError("Slice axes must be constant");
    for (auto &e : *v)
      axes.push_back(*e.getConstant());
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (Value st = op.getSteps()) {
    auto v = s.symValues(st);
    if (!v)
      return op.emitError("Slice steps must be constant");
    for (auto &e : *v)
      steps.push_back(*e.getConstant());
  } else {
    steps.assign(starts->size(), 1);
  }
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
      strides(rank, b.getIndexAttr(1));
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (steps[i] < 0)
      return op.emitError("Slice with a negative step is not supported yet");
    // The same normalization as shape inference (docs/shapes.md).
    DimExpr start = (*starts)[i];
    if (auto c = start.getConstant()) {
      if (*c >= kHuge)
        start = in[ax];
      else if (*c < 0)
        start = *c <= -kHuge ? DimExpr(0) : in[ax] + DimExpr(*c);
      if (auto d = in[ax].getConstant())
        start = DimExpr(std::clamp<int64_t>(*start.getConstant(), 0, *d));
    }
    offsets[ax] = fold(s, start);
    strides[ax] = b.getIndexAttr(steps[i]);
  }
  Value r = tensor::ExtractSliceOp::create(b, loc, s.plainType(op.getOutput()),
                                           s.get(op.getData()), offsets,
                                           s.mixedDims(op.getOutput()), strides);
  s.set(op.getOutput(), r);
  return success();
}

LogicalResult lowerTranspose(TransposeOp op, LoweringState &s) {
  SmallVector<int64_t> perm;
  int64_t rank = s.dims(op.getData()).size();
  if (auto p = op.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  Value init = s.empty(op.getTransposed());
  auto t = linalg::TransposeOp::create(s.builder(), op.getLoc(),
                                       s.get(op.getData()), init, perm);
  s.set(op.getTransposed(), t.getResult()[0]);
  return success();
}

LogicalResult lowerGather(GatherOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  SmallVector<DimExpr> data = s.dims(op.getData()), idx = s.dims(op.getIndices());
  SmallVector<DimExpr> out = s.dims(op.getOutput());
  int64_t rank = data.size(), axis = (int64_t)op.getAxis();
  if (axis < 0)
    axis += rank;
  unsigned outRank = out.size(), idxRank = idx.size();
  SmallVector<AffineExpr> idxMap;
  for (unsigned i = 0; i < idxRank; ++i)
    idxMap.push_back(b.getAffineDimExpr(axis + i));
  SmallVector<AffineMap> maps = {AffineMap::get(outRank, 0, idxMap, b.getContext()),
                                 b.getMultiDimIdentityMap(outRank)};
  SmallVector<utils::IteratorType> iters(outRank, utils::IteratorType::parallel);
  Value source = s.get(op.getData());
  Value axisSize = getValueOrCreateConstantIndexOp(b, loc, fold(s, data[axis]));
  Value init = s.empty(op.getOutput());
  auto g = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{s.get(op.getIndices())}, ValueRange{init},
      maps, iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value i = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
        Value zero = arith::ConstantIndexOp::create(nb, l, 0);
        Value neg = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, i, zero);
        i = arith::SelectOp::create(nb, l, neg, arith::AddIOp::create(nb, l, i, axisSize), i);
        SmallVector<Value> coords;
        for (int64_t d = 0; d < axis; ++d)
          coords.push_back(linalg::IndexOp::create(nb, l, d));
        coords.push_back(i);
        for (int64_t d = axis + 1; d < rank; ++d)
          coords.push_back(linalg::IndexOp::create(nb, l, d - 1 + idxRank));
        linalg::YieldOp::create(nb, l, tensor::ExtractOp::create(nb, l, source, coords).getResult());
      });
  s.set(op.getOutput(), g.getResult(0));
  return success();
}

LogicalResult lowerTrilu(TriluOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  int64_t k = 0;
  if (Value kv = op.getK()) {
    auto v = s.symValues(kv);
    if (!v || !(*v)[0].getConstant())
      return op.emitError("Trilu's k must be constant");
    k = *(*v)[0].getConstant();
  }
  SmallVector<DimExpr> dims = s.dims(op.getOutput());
  unsigned rank = dims.size();
  bool upper = op.getUpper();
  Type elt = s.plainType(op.getOutput()).getElementType();
  Value r = buildElementwise(
      s, loc, dims, elt, {s.get(op.getInput())}, {s.dims(op.getInput())},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value i = linalg::IndexOp::create(nb, l, rank - 2);
        Value j = linalg::IndexOp::create(nb, l, rank - 1);
        Value diff = arith::SubIOp::create(nb, l, j, i);
        Value kc = arith::ConstantIndexOp::create(nb, l, k);
        Value keep = arith::CmpIOp::create(
            nb, l, upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle, diff, kc);
        Value zero = arith::ConstantOp::create(nb, l, elt, nb.getZeroAttr(elt));
        return arith::SelectOp::create(nb, l, keep, a[0], zero);
      });
  s.set(op.getOutput(), r);
  return success();
}

LogicalResult lowerExpand(ExpandOp op, LoweringState &s) {
  Type elt = s.plainType(op.getOutput()).getElementType();
  Value r = buildElementwise(s, op.getLoc(), s.dims(op.getOutput()), elt,
                             {s.get(op.getInput())}, {s.dims(op.getInput())},
                             [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  s.set(op.getOutput(), r);
  return success();
}

} // namespace

std::optional<LogicalResult> lockstep::lowerMovement(Operation *op,
                                                     LoweringState &s) {
  return TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case<ReshapeOp>([&](auto o) { return lowerReshapeLike(o, o.getData(), o.getReshaped(), s); })
      .Case<SqueezeOp, UnsqueezeOp>([&](auto o) { return lowerReshapeLike(o, o.getData(), o.getOutput(), s); })
      .Case<ConcatOp>([&](auto o) { return lowerConcat(o, s); })
      .Case<SplitOp>([&](auto o) { return lowerSplit(o, s); })
      .Case<SliceOp>([&](auto o) { return lowerSlice(o, s); })
      .Case<TransposeOp>([&](auto o) { return lowerTranspose(o, s); })
      .Case<GatherOp>([&](auto o) { return lowerGather(o, s); })
      .Case<TriluOp>([&](auto o) { return lowerTrilu(o, s); })
      .Case<ExpandOp>([&](auto o) { return lowerExpand(o, s); })
      .Default([](Operation *) { return std::nullopt; });
}
