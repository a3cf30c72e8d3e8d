//===- Movement.cpp - Lowering data movement onnx ops ---------------------===//
//
// Reshape, Squeeze and Unsqueeze become tensor.reshape to the result's dims;
// Concat, Split and Slice become slices (a Slice that steps down, a generic
// that reads by index); Transpose is linalg.transpose; Gather, GatherND and
// Trilu are linalg.generic ops that read by index; Expand is an elementwise
// copy with broadcasting. ScatterND, whose updates apply in order, is one
// slice update per index tuple, unrolled (its number of tuples is static).
//
//===----------------------------------------------------------------------===//
#include "lockstep/Conversion/ONNXToLinalg.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "lockstep/Shape/ShapeInference.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {


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

/// Whether a tensor of these dims is empty for certain. The slice ops reject
/// an offset at the end of a dim even for a slice of size 0, so an empty
/// slice is never taken.
bool isEmpty(ArrayRef<DimExpr> dims) {
  return llvm::any_of(dims, [](const DimExpr &d) { return d == DimExpr(0); });
}

LogicalResult lowerConcat(ConcatOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  SmallVector<DimExpr> out = s.dims(op.getResult());
  int64_t rank = out.size(), axis = (int64_t)op.getAxis();
  if (axis < 0)
    axis += rank;
  if (Value gathered = concatOfSlices(op, s)) {
    s.set(op.getResult(), gathered);
    return success();
  }
  Value acc = s.empty(op.getResult());
  DimExpr offset(0);
  for (Value in : op.getInputs()) {
    SmallVector<DimExpr> d = s.dims(in);
    if (isEmpty(d))
      continue;
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
    if (isEmpty(d)) {
      s.set(r, s.empty(r));
      continue;
    }
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
  SmallVector<DimExpr> startOf(rank, DimExpr(0));
  SmallVector<int64_t> stepOf(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (steps[i] == 0)
      return op.emitError("a Slice step is 0");
    // The normalization shape inference sized the result with.
    DimExpr start = normalizeSliceIndex(in[ax], (*starts)[i], steps[i],
                                        /*isEnd=*/false);
    startOf[ax] = start;
    stepOf[ax] = steps[i];
    offsets[ax] = fold(s, start);
    strides[ax] = b.getIndexAttr(steps[i]);
  }
  if (isEmpty(s.dims(op.getOutput()))) {
    s.set(op.getOutput(), s.empty(op.getOutput()));
    return success();
  }
  if (llvm::any_of(stepOf, [](int64_t st) { return st < 0; })) {
    // Element i of an axis reads start + i * step of the input.
    SmallVector<Value> startVals;
    for (const DimExpr &st : startOf)
      startVals.push_back(getValueOrCreateConstantIndexOp(b, loc, fold(s, st)));
    Value source = s.get(op.getData());
    Type elt = s.plainType(op.getOutput()).getElementType();
    Value r = buildElementwise(
        s, loc, s.dims(op.getOutput()), elt, {}, {},
        [&](OpBuilder &nb, Location l, ValueRange) -> Value {
          SmallVector<Value> coords;
          for (int64_t d = 0; d < rank; ++d) {
            Value i = linalg::IndexOp::create(nb, l, d);
            if (stepOf[d] != 1)
              i = arith::MulIOp::create(nb, l, i,
                                        arith::ConstantIndexOp::create(nb, l, stepOf[d]));
            coords.push_back(arith::AddIOp::create(nb, l, startVals[d], i));
          }
          return tensor::ExtractOp::create(nb, l, source, coords);
        });
    s.set(op.getOutput(), r);
    return success();
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

/// An index read from an integer tensor, made non-negative by adding `size`
/// when it is negative (ONNX's index wrapping), then clamped to
/// [0, size - 1]: an index out of range is an error in ONNX, and here it
/// reads the nearest element instead of memory outside the tensor.
Value wrappedIndex(OpBuilder &b, Location loc, Value idx, Value size) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), idx);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, zero);
  Value w = arith::AddIOp::create(b, loc, i, size);
  i = arith::SelectOp::create(b, loc, neg, w, i);
  Value last = arith::SubIOp::create(b, loc, size, one);
  i = arith::MinSIOp::create(b, loc, i, last);
  return arith::MaxSIOp::create(b, loc, i, zero);
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
        Value i = wrappedIndex(nb, l, a[0], axisSize);
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

/// GatherND: output element (i_0 .. i_{q-2}, j...) reads data at the first
/// batch_dims indices, then the index tuple indices[i_0 .. i_{q-2}, :], then j.
LogicalResult lowerGatherND(GatherNDOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  SmallVector<DimExpr> data = s.dims(op.getData()), idx = s.dims(op.getIndices());
  int64_t q = idx.size(), batch = op.getBatchDims();
  auto kc = idx.back().getConstant();
  if (!kc)
    return op.emitError("GatherND's index tuples must have a static length");
  int64_t k = *kc;
  SmallVector<Value> sizes;
  for (int64_t j = 0; j < k; ++j)
    sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, fold(s, data[batch + j])));
  Value source = s.get(op.getData()), indices = s.get(op.getIndices());
  Type elt = s.plainType(op.getOutput()).getElementType();
  Value r = buildElementwise(
      s, loc, s.dims(op.getOutput()), elt, {}, {},
      [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        SmallVector<Value> outer;
        for (int64_t d = 0; d < q - 1; ++d)
          outer.push_back(linalg::IndexOp::create(nb, l, d));
        SmallVector<Value> coords(outer.begin(), outer.begin() + batch);
        for (int64_t j = 0; j < k; ++j) {
          SmallVector<Value> at = outer;
          at.push_back(arith::ConstantIndexOp::create(nb, l, j));
          Value v = tensor::ExtractOp::create(nb, l, indices, at);
          coords.push_back(wrappedIndex(nb, l, v, sizes[j]));
        }
        for (int64_t d = batch + k; d < (int64_t)data.size(); ++d)
          coords.push_back(linalg::IndexOp::create(nb, l, q - 1 + d - batch - k));
        return tensor::ExtractOp::create(nb, l, source, coords);
      });
  s.set(op.getOutput(), r);
  return success();
}

/// ScatterND: for each index tuple in order, the slice of data it addresses
/// is replaced by (or combined with) its slice of updates. The tuples are
/// unrolled, so their number must be static; it is bounded to keep code small.
LogicalResult lowerScatterND(ScatterNDOp op, LoweringState &s) {
  constexpr int64_t kMaxUpdates = 256;
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  SmallVector<DimExpr> data = s.dims(op.getData()), idx = s.dims(op.getIndices());
  int64_t r = data.size(), q = idx.size();
  auto kc = idx.back().getConstant();
  if (!kc)
    return op.emitError("ScatterND's index tuples must have a static length");
  int64_t k = *kc;
  SmallVector<int64_t> outerShape;
  int64_t count = 1;
  for (int64_t d = 0; d < q - 1; ++d) {
    auto c = idx[d].getConstant();
    if (!c)
      return op.emitError("ScatterND needs a static number of index tuples");
    outerShape.push_back(*c);
    count *= *c;
  }
  if (count > kMaxUpdates)
    return op.emitError("ScatterND with ")
           << count << " index tuples (more than " << kMaxUpdates
           << ") is not supported";
  StringRef red = op.getReduction();
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return op.emitError("unsupported ScatterND reduction '") << red << "'";
  Type elt = s.plainType(op.getOutput()).getElementType();
  if (red != "none" && !elt.isSignlessIntOrFloat())
    return op.emitError("ScatterND reduction on ") << elt << " is not supported";
  bool isF = isa<FloatType>(elt);

  SmallVector<Value> sizes;
  for (int64_t j = 0; j < k; ++j)
    sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, fold(s, data[j])));
  // A slice has the dims of data after the first k; in data and in updates
  // it is addressed with size-1 leading dims, which the slice drops.
  SmallVector<DimExpr> sliceDims(data.begin() + k, data.end());
  SmallVector<OpFoldResult> sliceSizes = s.mixed(sliceDims);
  auto sliceType = RankedTensorType::get(
      s.plainType(op.getData()).getShape().drop_front(k), elt);
  Value indices = s.get(op.getIndices()), updates = s.get(op.getUpdates());
  // The slices are inserted into a copy of data, of the plain type (data
  // may be an argument that still has its #onnx.dims encoding).
  Value acc = buildElementwise(s, loc, data, elt, {s.get(op.getData())}, {data},
                               [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  SmallVector<int64_t> pos(q - 1, 0);
  for (int64_t u = 0; u < count; ++u) {
    SmallVector<Value> at;
    for (int64_t p : pos)
      at.push_back(arith::ConstantIndexOp::create(b, loc, p));
    SmallVector<OpFoldResult> dataOffsets, dataSizes;
    for (int64_t j = 0; j < k; ++j) {
      SmallVector<Value> ij = at;
      ij.push_back(arith::ConstantIndexOp::create(b, loc, j));
      Value v = tensor::ExtractOp::create(b, loc, indices, ij);
      dataOffsets.push_back(wrappedIndex(b, loc, v, sizes[j]));
      dataSizes.push_back(b.getIndexAttr(1));
    }
    SmallVector<OpFoldResult> updOffsets, updSizes;
    for (int64_t p : pos) {
      updOffsets.push_back(b.getIndexAttr(p));
      updSizes.push_back(b.getIndexAttr(1));
    }
    for (unsigned d = 0; d < sliceDims.size(); ++d) {
      dataOffsets.push_back(b.getIndexAttr(0));
      updOffsets.push_back(b.getIndexAttr(0));
    }
    dataSizes.append(sliceSizes.begin(), sliceSizes.end());
    updSizes.append(sliceSizes.begin(), sliceSizes.end());
    SmallVector<OpFoldResult> dataStrides(r, b.getIndexAttr(1)),
        updStrides(updOffsets.size(), b.getIndexAttr(1));
    Value upd = tensor::ExtractSliceOp::create(b, loc, sliceType, updates, updOffsets,
                                               updSizes, updStrides);
    if (red != "none") {
      Value old = tensor::ExtractSliceOp::create(b, loc, sliceType, acc, dataOffsets,
                                                 dataSizes, dataStrides);
      upd = buildElementwise(
          s, loc, sliceDims, elt, {old, upd}, {sliceDims, sliceDims},
          [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
            if (red == "add")
              return isF ? arith::AddFOp::create(nb, l, a[0], a[1]).getResult()
                         : arith::AddIOp::create(nb, l, a[0], a[1]).getResult();
            if (red == "mul")
              return isF ? arith::MulFOp::create(nb, l, a[0], a[1]).getResult()
                         : arith::MulIOp::create(nb, l, a[0], a[1]).getResult();
            if (red == "max")
              return isF ? arith::MaximumFOp::create(nb, l, a[0], a[1]).getResult()
                         : arith::MaxSIOp::create(nb, l, a[0], a[1]).getResult();
            return isF ? arith::MinimumFOp::create(nb, l, a[0], a[1]).getResult()
                       : arith::MinSIOp::create(nb, l, a[0], a[1]).getResult();
          });
    }
    acc = tensor::InsertSliceOp::create(b, loc, upd, acc, dataOffsets, dataSizes,
                                        dataStrides);
    for (int64_t d = q - 2; d >= 0; --d) {
      if (++pos[d] < outerShape[d])
        break;
      pos[d] = 0;
    }
  }
  s.set(op.getOutput(), acc);
  return success();
}

LogicalResult lowerTrilu(TriluOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  // k is a constant, or read from its tensor when it is an input.
  Value kIndex;
  if (Value kv = op.getK()) {
    auto v = s.symValues(kv);
    if (v && (*v)[0].getConstant()) {
      kIndex = arith::ConstantIndexOp::create(b, loc, *(*v)[0].getConstant());
    } else {
      SmallVector<Value> zeros(s.dims(kv).size(),
                               arith::ConstantIndexOp::create(b, loc, 0));
      Value k = tensor::ExtractOp::create(b, loc, s.get(kv), zeros);
      kIndex = arith::IndexCastOp::create(b, loc, b.getIndexType(), k);
    }
  } else {
    kIndex = arith::ConstantIndexOp::create(b, loc, 0);
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
        Value keep = arith::CmpIOp::create(
            nb, l, upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle, diff, kIndex);
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
      .Case<FlattenOp>([&](auto o) { return lowerReshapeLike(o, o.getInput(), o.getOutput(), s); })
      .Case<ConcatOp>([&](auto o) { return lowerConcat(o, s); })
      .Case<SplitOp>([&](auto o) { return lowerSplit(o, s); })
      .Case<SliceOp>([&](auto o) { return lowerSlice(o, s); })
      .Case<TransposeOp>([&](auto o) { return lowerTranspose(o, s); })
      .Case<GatherOp>([&](auto o) { return lowerGather(o, s); })
      .Case<GatherNDOp>([&](auto o) { return lowerGatherND(o, s); })
      .Case<ScatterNDOp>([&](auto o) { return lowerScatterND(o, s); })
      .Case<TriluOp>([&](auto o) { return lowerTrilu(o, s); })
      .Case<ExpandOp>([&](auto o) { return lowerExpand(o, s); })
      .Default([](Operation *) { return std::nullopt; });
}
