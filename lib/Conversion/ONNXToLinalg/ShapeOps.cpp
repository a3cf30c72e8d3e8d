//===- ShapeOps.cpp - Lowering constants and shape computations -----------===//
//
// An integer op whose values shape inference knows (`onnx.sym`) is lowered to
// those values, computed from the entry's dims: the exporter's shape subgraph
// is never run. Constants become arith.constant, ConstantOfShape a fill, and
// Range a generic over the index.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Conversion/ONNXToLinalg.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

/// A scalar of element type `t` holding the value of `e`.
Value scalarOf(LoweringState &s, Location loc, const DimExpr &e, Type t) {
  OpBuilder &b = s.builder();
  if (auto c = e.getConstant()) {
    if (isa<FloatType>(t))
      return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, double(*c)));
    return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, *c));
  }
  Value idx = s.materialize(e);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
  if (isa<FloatType>(t))
    return arith::SIToFPOp::create(b, loc, t, i64);
  if (t.getIntOrFloatBitWidth() < 64)
    return arith::TruncIOp::create(b, loc, t, i64);
  return i64;
}

/// The scalar value of a rank-0 or one-element onnx value: from its known
/// values, or read from the lowered tensor.
Value scalarValue(LoweringState &s, Location loc, Value old) {
  Type t = s.plainType(old).getElementType();
  if (auto v = s.symValues(old))
    return scalarOf(s, loc, (*v)[0], t);
  OpBuilder &b = s.builder();
  int64_t rank = s.dims(old).size();
  SmallVector<Value> zeros(rank, arith::ConstantIndexOp::create(b, loc, 0));
  return tensor::ExtractOp::create(b, loc, s.get(old), zeros);
}

LogicalResult lowerKnownValues(Operation *op, ArrayRef<DimExpr> values,
                               LoweringState &s) {
  Location loc = op->getLoc();
  RankedTensorType t = s.plainType(op->getResult(0));
  SmallVector<Value> elems;
  for (const DimExpr &e : values)
    elems.push_back(scalarOf(s, loc, e, t.getElementType()));
  s.set(op->getResult(0), tensor::FromElementsOp::create(s.builder(), loc, t, elems));
  return success();
}

LogicalResult lowerRange(RangeOp op, LoweringState &s) {
  Location loc = op.getLoc();
  Value start = scalarValue(s, loc, op.getStart());
  Value delta = scalarValue(s, loc, op.getDelta());
  Type elt = s.plainType(op.getOutput()).getElementType();
  Value r = buildElementwise(
      s, loc, s.dims(op.getOutput()), elt, {}, {},
      [&](OpBuilder &b, Location l, ValueRange) -> Value {
        Value i = linalg::IndexOp::create(b, l, 0);
        Value i64 = arith::IndexCastOp::create(b, l, b.getI64Type(), i);
        if (isa<FloatType>(elt)) {
          Value f = arith::SIToFPOp::create(b, l, elt, i64);
          return arith::AddFOp::create(b, l, start, arith::MulFOp::create(b, l, f, delta));
        }
        Value iv = elt.getIntOrFloatBitWidth() < 64
                       ? arith::TruncIOp::create(b, l, elt, i64).getResult()
                       : i64;
        return arith::AddIOp::create(b, l, start, arith::MulIOp::create(b, l, iv, delta));
      });
  s.set(op.getOutput(), r);
  return success();
}

LogicalResult lowerConstantOfShape(ConstantOfShapeOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  Type elt = s.plainType(op.getOutput()).getElementType();
  Attribute fill = b.getZeroAttr(elt);
  if (auto v = op.getValue()) {
    auto dense = dyn_cast<DenseElementsAttr>(*v);
    if (!dense || dense.getNumElements() != 1)
      return op.emitError("ConstantOfShape value must be one element");
    fill = *dense.value_begin<Attribute>();
  }
  Value c = arith::ConstantOp::create(b, loc, elt, cast<TypedAttr>(fill));
  Value r = linalg::FillOp::create(b, loc, c, s.empty(op.getOutput())).getResult(0);
  s.set(op.getOutput(), r);
  return success();
}

} // namespace

std::optional<LogicalResult> lockstep::lowerShapeOp(Operation *op,
                                                    LoweringState &s) {
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense)
      return op->emitError("unsupported constant");
    RankedTensorType t = s.plainType(c.getOutput());
    s.set(c.getOutput(), arith::ConstantOp::create(s.builder(), op->getLoc(), t,
                                                   dense.reshape(t)));
    return success();
  }
  if (op->getNumResults() == 1 && isa<ONNXNodeOpInterface>(op))
    if (auto sym = op->getAttrOfType<DimsAttr>("onnx.sym"))
      return lowerKnownValues(op, sym.getExprs(), s);
  return TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case<RangeOp>([&](auto o) { return lowerRange(o, s); })
      .Case<ConstantOfShapeOp>([&](auto o) { return lowerConstantOfShape(o, s); })
      .Case<ShapeOp>([&](auto o) -> LogicalResult {
        return o.emitError("the values of Shape are not known");
      })
      .Default([](Operation *) { return std::nullopt; });
}
