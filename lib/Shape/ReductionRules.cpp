//===- ReductionRules.cpp - Shapes of contractions and reductions ---------===//
#include "RuleUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::shape;
using namespace lockstep::onnxir;

namespace {

// numpy matmul: 1-D operands are promoted, leading dims broadcast.
LogicalResult inferMatMul(RuleCtx &c, MatMulOp op) {
  const SymTensor &ta = c.in(op.getA()), &tb = c.in(op.getB());
  Dims a = ta.dims, b = tb.dims;
  if (a.empty() || b.empty())
    return c.fail("MatMul operands must have rank >= 1");
  bool va = a.size() == 1, vb = b.size() == 1;
  if (va)
    a.insert(a.begin(), DimExpr(1));
  if (vb)
    b.push_back(DimExpr(1));
  DimExpr k1 = a.back(), k2 = b[b.size() - 2];
  if (k1 != k2 && k1.isConstant() && k2.isConstant())
    return c.fail("contraction dims differ: " + k1.str() + " and " + k2.str());
  if (k1 != k2 && !(k1.isConstant() || k2.isConstant()))
    return c.fail("contraction dims are not provably equal: " + k1.str() +
                  " and " + k2.str());
  auto batch = broadcast(c, {Dims(a.begin(), a.end() - 2),
                             Dims(b.begin(), b.end() - 2)});
  if (failed(batch))
    return failure();
  Dims out = *batch;
  if (!va)
    out.push_back(a[a.size() - 2]);
  if (!vb)
    out.push_back(b.back());
  c.set(0, ta.elementType, out);
  return success();
}

LogicalResult inferGemm(RuleCtx &c, GemmOp op) {
  const SymTensor &ta = c.in(op.getA()), &tb = c.in(op.getB());
  if (ta.rank() != 2 || tb.rank() != 2)
    return c.fail("Gemm operands must be 2-D");
  DimExpr m = op.getTransA() ? ta.dims[1] : ta.dims[0];
  DimExpr n = op.getTransB() ? tb.dims[0] : tb.dims[1];
  c.set(0, ta.elementType, {m, n});
  return success();
}

template <typename ReduceOpT>
LogicalResult inferReduce(RuleCtx &c, ReduceOpT op) {
  const SymTensor &t = c.in(op.getData());
  SmallVector<int64_t> axes;
  if (Value ax = op.getAxesInput()) {
    // An axes input of static size 0 is empty, whatever produces it (the
    // node tests pass it as a graph input).
    const SymTensor &ta = c.in(ax);
    bool empty = ta.rank() == 1 && ta.dims[0] == DimExpr(0);
    auto k = c.constInts(ax);
    if (!k && !empty)
      return c.fail("the axes input must be a constant");
    if (k)
      axes = *k;
  } else if (auto attr = op.getAxes()) {
    axes.assign(attr->begin(), attr->end());
  }
  if (axes.empty()) {
    if (op.getNoopWithEmptyAxes()) {
      c.set(0, t.elementType, t.dims);
      return success();
    }
    for (int64_t i = 0; i < t.rank(); ++i)
      axes.push_back(i);
  }
  SmallVector<bool> reduced(t.rank(), false);
  for (int64_t a : axes) {
    auto n = normAxis(a, t.rank());
    if (!n)
      return c.fail("axis " + Twine(a) + " is out of range for rank " +
                    Twine(t.rank()));
    reduced[*n] = true;
  }
  Dims out;
  for (int64_t i = 0; i < t.rank(); ++i) {
    if (!reduced[i])
      out.push_back(t.dims[i]);
    else if (op.getKeepdims())
      out.push_back(DimExpr(1));
  }
  c.set(0, t.elementType, out);
  return success();
}

LogicalResult inferLayerNorm(RuleCtx &c, LayerNormalizationOp op) {
  const SymTensor &t = c.in(op.getX());
  auto axis = normAxis((int64_t)op.getAxis(), t.rank());
  if (!axis)
    return c.fail("axis is out of range");
  c.set(0, t.elementType, t.dims);
  Dims stats = t.dims;
  for (int64_t i = *axis; i < t.rank(); ++i)
    stats[i] = DimExpr(1);
  for (unsigned i = 1; i < c.op->getNumResults(); ++i)
    c.set(i, FloatType(Float32Type::get(c.op->getContext())), stats);
  return success();
}

} // namespace

LogicalResult lockstep::shape::inferContraction(RuleCtx &c) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(c.op)
      .Case<MatMulOp>([&](MatMulOp o) { return inferMatMul(c, o); })
      .Case<GemmOp>([&](GemmOp o) { return inferGemm(c, o); })
      .Default([](Operation *) { return failure(); });
}

LogicalResult lockstep::shape::inferReduction(RuleCtx &c) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(c.op)
      .Case<ReduceMeanOp>([&](auto o) { return inferReduce(c, o); })
      .Case<ReduceSumOp>([&](auto o) { return inferReduce(c, o); })
      .Case<ReduceMaxOp>([&](auto o) { return inferReduce(c, o); })
      .Case<ReduceMinOp>([&](auto o) { return inferReduce(c, o); })
      .Case<LayerNormalizationOp>([&](auto o) { return inferLayerNorm(c, o); })
      .Default([](Operation *) { return failure(); });
}
