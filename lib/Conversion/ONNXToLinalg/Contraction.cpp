//===- Contraction.cpp - Lowering MatMul and Gemm -------------------------===//
//
// A contraction is one linalg.generic with the batch, row and column dims
// parallel and the contraction dim a reduction; batch broadcasting is in the
// indexing maps. The body of a float contraction is the contract's
// `acc = fma(a, b, acc)`, one rounding per term; how the sum is ordered and
// split is decided later, by the canonical reduction pass.
// The loop dims are ordered (batch, row, k, column): each output element
// still sums over k in increasing order, but the innermost loop runs over
// contiguous columns, independent lanes that vectorize without reassociation.
// A B read transposed (k contiguous) is ordered (batch, row, column, k).
//
//===----------------------------------------------------------------------===//
#include "lockstep/Conversion/ONNXToLinalg.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

Value zeroOf(OpBuilder &b, Location loc, Type t) {
  return arith::ConstantOp::create(b, loc, t, b.getZeroAttr(t));
}

Value mulAdd(OpBuilder &b, Location loc, Value a, Value x, Value acc) {
  if (isa<FloatType>(a.getType()))
    return math::FmaOp::create(b, loc, a, x, acc);
  return arith::AddIOp::create(b, loc, acc, arith::MulIOp::create(b, loc, a, x));
}

/// The contraction generic: out[...] += a[...] * b[...] over `maps` and
/// `iters`, from a zero-filled accumulator of dims `out`.
Value contract(LoweringState &s, Location loc, Value a, Value bv,
               ArrayRef<DimExpr> out, Type elt, ArrayRef<AffineMap> maps,
               ArrayRef<utils::IteratorType> iters) {
  OpBuilder &b = s.builder();
  Value init = linalg::FillOp::create(b, loc, zeroOf(b, loc, elt),
                                      s.empty(loc, out, elt))
                   .getResult(0);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{a, bv}, ValueRange{init}, maps,
             iters,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, mulAdd(nb, l, args[0], args[1], args[2]));
             })
      .getResult(0);
}

/// The input of `v`'s producer when that is a Transpose that swaps the two
/// trailing dims and nothing else (a tied lm_head's `x @ wte^T`, as the
/// dynamo exporter writes it): the contraction reads it with the two dims
/// swapped in its map, and no transposed copy is made. The terms and their
/// order are the same.
Value swappedTrailing(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !type || type.getRank() < 2 || !t.getPerm())
    return nullptr;
  ArrayRef<int64_t> perm = *t.getPerm();
  int64_t r = type.getRank();
  if (int64_t(perm.size()) != r)
    return nullptr;
  for (int64_t i = 0; i < r; ++i)
    if (perm[i] != (i < r - 2 ? i : i == r - 2 ? r - 1 : r - 2))
      return nullptr;
  return t.getData();
}

LogicalResult lowerMatMul(MatMulOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  SmallVector<DimExpr> a = s.dims(op.getA()), bd = s.dims(op.getB());
  Value bSource = swappedTrailing(op.getB());
  SmallVector<DimExpr> out = s.dims(op.getY());
  bool va = a.size() == 1, vb = bd.size() == 1;
  unsigned batch = out.size() - (va ? 0 : 1) - (vb ? 0 : 1);
  // Loop dims: batch..., m (unless A is 1-D), k, n (unless B is 1-D); with
  // B read transposed, k is contiguous in B and comes last: (..., m, n, k).
  unsigned m = batch, rows = batch + (va ? 0 : 1);
  unsigned k = bSource ? rows + 1 : rows, n = bSource ? rows : k + 1;
  unsigned loops = rows + 1 + (vb ? 0 : 1);
  auto dim = [&](unsigned i) { return b.getAffineDimExpr(i); };
  auto batchExprs = [&](ArrayRef<DimExpr> ds, unsigned own) {
    SmallVector<AffineExpr> e;
    unsigned off = batch - own;
    for (unsigned i = 0; i < own; ++i)
      e.push_back(ds[i] == DimExpr(1) && out[off + i] != DimExpr(1)
                      ? b.getAffineConstantExpr(0)
                      : dim(off + i));
    return e;
  };
  unsigned aBatch = va ? 0 : a.size() - 2, bBatch = vb ? 0 : bd.size() - 2;
  SmallVector<AffineExpr> aMap = batchExprs(a, aBatch);
  if (!va)
    aMap.push_back(dim(m));
  aMap.push_back(dim(k));
  SmallVector<AffineExpr> bMap = batchExprs(bd, bBatch);
  bMap.push_back(dim(k));
  if (!vb)
    bMap.push_back(dim(n));
  if (bSource)
    std::swap(bMap[bMap.size() - 2], bMap.back());
  SmallVector<AffineExpr> cMap;
  for (unsigned i = 0; i < rows; ++i)
    cMap.push_back(dim(i));
  if (!vb)
    cMap.push_back(dim(n));
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, aMap, b.getContext()),
                                 AffineMap::get(loops, 0, bMap, b.getContext()),
                                 AffineMap::get(loops, 0, cMap, b.getContext())};
  SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::parallel);
  iters[k] = utils::IteratorType::reduction;
  Type elt = s.plainType(op.getY()).getElementType();
  s.set(op.getY(), contract(s, loc, s.get(op.getA()), s.get(bSource ? bSource : op.getB()),
                            out, elt, maps, iters));
  return success();
}

LogicalResult lowerGemm(GemmOp op, LoweringState &s) {
  OpBuilder &b = s.builder();
  Location loc = op.getLoc();
  SmallVector<DimExpr> out = s.dims(op.getY());
  auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
  // Loops (m, k, n).
  SmallVector<AffineExpr> aMap = op.getTransA() ? SmallVector<AffineExpr>{d(1), d(0)}
                                                : SmallVector<AffineExpr>{d(0), d(1)};
  SmallVector<AffineExpr> bMap = op.getTransB() ? SmallVector<AffineExpr>{d(2), d(1)}
                                                : SmallVector<AffineExpr>{d(1), d(2)};
  SmallVector<AffineMap> maps = {AffineMap::get(3, 0, aMap, b.getContext()),
                                 AffineMap::get(3, 0, bMap, b.getContext()),
                                 AffineMap::get(3, 0, {d(0), d(2)}, b.getContext())};
  SmallVector<utils::IteratorType> iters = {utils::IteratorType::parallel,
                                            utils::IteratorType::reduction,
                                            utils::IteratorType::parallel};
  Type elt = s.plainType(op.getY()).getElementType();
  if (!isa<FloatType>(elt))
    return op.emitError("Gemm on ") << elt << " is not supported";
  Value ab = contract(s, loc, s.get(op.getA()), s.get(op.getB()), out, elt,
                      maps, iters);
  float alpha = op.getAlpha().convertToFloat(), beta = op.getBeta().convertToFloat();
  SmallVector<Value> operands = {ab};
  SmallVector<SmallVector<DimExpr>> dims = {out};
  if (op.getC()) {
    operands.push_back(s.get(op.getC()));
    dims.push_back(s.dims(op.getC()));
  }
  if (alpha == 1.0f && (!op.getC() || beta == 0.0f)) {
    s.set(op.getY(), ab);
    return success();
  }
  Value r = buildElementwise(
      s, loc, out, elt, operands, dims,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value v = a[0];
        if (alpha != 1.0f)
          v = arith::MulFOp::create(nb, l, arith::ConstantOp::create(nb, l, elt, nb.getFloatAttr(elt, alpha)), v);
        if (a.size() > 1 && beta != 0.0f) {
          Value c = a[1];
          if (beta != 1.0f)
            c = arith::MulFOp::create(nb, l, arith::ConstantOp::create(nb, l, elt, nb.getFloatAttr(elt, beta)), c);
          v = arith::AddFOp::create(nb, l, v, c);
        }
        return v;
      });
  s.set(op.getY(), r);
  return success();
}

} // namespace

std::optional<LogicalResult> lockstep::lowerContraction(Operation *op,
                                                        LoweringState &s) {
  if (auto mm = dyn_cast<MatMulOp>(op))
    return lowerMatMul(mm, s);
  if (auto g = dyn_cast<GemmOp>(op))
    return lowerGemm(g, s);
  return std::nullopt;
}
