//===- ChunkGeneric.cpp - A reduction generic in the canonical form -------===//
//
// A linalg.generic with one reduction dim r of length L and an add (or fma,
// or mul) fold becomes, for a chunk width C:
//
//   partial  over (.., j, k, ..): r split into the parallel chunk dim j
//            (floor(L/C) whole chunks) and the reduction dim k (extent C).
//            The operands that r indexes are sliced to [0, floor(L/C)·C) and
//            expanded, so element jC + k is read; nothing is copied. Each
//            partial folds its chunk left to right from the identity.
//   combine  over (.., j, ..): folds the partials in increasing j into the
//            op's own init.
//   tail     when L mod C may be nonzero: the op over [floor(L/C)·C, L)
//            from the identity, then added to the combine elementwise.
//
// With the init +0.0 this is exactly the contract: +0.0 + p0 = p0 because a
// fold from +0.0 never yields -0.0 under round-to-nearest, and adding an
// empty tail (+0.0) changes nothing for the same reason.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Reductions/Chunking.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace lockstep;

std::optional<Combiner> lockstep::classifyCombiner(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1)
    return std::nullopt;
  BlockArgument acc = op.getRegionOutputArgs()[0];
  if (!isa<FloatType>(acc.getType()))
    return Combiner::Exact; // integer add, mul, max, min, and, or: associative
  Block *body = op.getBlock();
  Operation *comb = body->getTerminator()->getOperand(0).getDefiningOp();
  if (!comb || comb->getBlock() != body || !acc.hasOneUse() ||
      acc.getUses().begin()->getOwner() != comb)
    return std::nullopt;
  if (isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
          arith::MinNumFOp>(comb))
    return Combiner::Exact;
  if (isa<arith::AddFOp>(comb))
    return Combiner::Add;
  if (auto f = dyn_cast<math::FmaOp>(comb))
    if (f.getC() == acc)
      return Combiner::Add;
  if (isa<arith::MulFOp>(comb))
    return Combiner::Mul;
  return std::nullopt;
}

int64_t ChunkWidths::choose(std::optional<int64_t> length) const {
  if (!length)
    return dynamicChunk;
  if (*length <= maxChunk)
    return std::max<int64_t>(*length, 1);
  for (int64_t c = maxChunk; c >= minChunk; --c)
    if (*length % c == 0)
      return c;
  return maxChunk;
}

/// The size of loop dim `dim`: static, or the dim of the first operand that
/// indexes it plainly (inputs first).
static OpFoldResult loopSize(RewriterBase &rw, linalg::LinalgOp op, unsigned dim) {
  SmallVector<int64_t> statics = op.getStaticLoopRanges();
  if (!ShapedType::isDynamic(statics[dim]))
    return rw.getIndexAttr(statics[dim]);
  for (OpOperand &o : op->getOpOperands()) {
    AffineMap m = op.getMatchingIndexingMap(&o);
    for (unsigned p = 0; p < m.getNumResults(); ++p)
      if (auto d = dyn_cast<AffineDimExpr>(m.getResult(p)))
        if (d.getPosition() == dim) // a plain dim op, not folded: the
          // verifier checks that a chunk count comes from this read
          return tensor::DimOp::create(rw, op.getLoc(), o.get(), p).getResult();
  }
  return {};
}

OpFoldResult lockstep::reductionLength(RewriterBase &rw, linalg::LinalgOp op,
                                       unsigned dim) {
  return loopSize(rw, op, dim);
}

ChunkSplit lockstep::splitLength(RewriterBase &rw, Location loc, OpFoldResult length,
                                int64_t width) {
  std::optional<int64_t> ls = getConstantIntValue(length);
  Value c = arith::ConstantIndexOp::create(rw, loc, width);
  if (ls)
    return {rw.getIndexAttr(*ls / width), rw.getIndexAttr(*ls / width * width),
            *ls % width == 0};
  Value whole = arith::DivUIOp::create(rw, loc, cast<Value>(length), c);
  return {whole, arith::MulIOp::create(rw, loc, whole, c).getResult(), false};
}

OpFoldResult ChunkSplit::tail(RewriterBase &rw, Location loc,
                              OpFoldResult length) const {
  std::optional<int64_t> ls = getConstantIntValue(length);
  if (ls)
    return rw.getIndexAttr(*ls - *getConstantIntValue(covered));
  return arith::SubIOp::create(rw, loc, cast<Value>(length), cast<Value>(covered))
      .getResult();
}

Value lockstep::expandChunks(RewriterBase &rw, Location loc, Value x,
                             ArrayRef<OpFoldResult> sizes, unsigned axis,
                             OpFoldResult count, int64_t width) {
  auto xt = cast<RankedTensorType>(x.getType());
  SmallVector<ReassociationIndices> assoc;
  SmallVector<OpFoldResult> outShape;
  SmallVector<int64_t> shape;
  for (unsigned a = 0; a < xt.getRank(); ++a) {
    unsigned base = a <= axis ? a : a + 1;
    if (a == axis) {
      assoc.push_back({base, base + 1});
      outShape.append({count, rw.getIndexAttr(width)});
      shape.append({getConstantIntValue(count).value_or(ShapedType::kDynamic), width});
      continue;
    }
    assoc.push_back({base});
    outShape.push_back(sizes[a]);
    shape.push_back(getConstantIntValue(sizes[a]).value_or(ShapedType::kDynamic));
  }
  auto et = RankedTensorType::get(shape, xt.getElementType());
  return tensor::ExpandShapeOp::create(rw, loc, et, x, assoc, outShape);
}

namespace {

Value identityOf(OpBuilder &b, Location loc, Type t, Combiner c) {
  return arith::ConstantOp::create(b, loc, t,
                                   b.getFloatAttr(t, c == Combiner::Mul ? 1.0 : 0.0));
}

Value fold(OpBuilder &b, Location loc, Combiner c, Value acc, Value x) {
  if (c == Combiner::Mul)
    return arith::MulFOp::create(b, loc, acc, x);
  return arith::AddFOp::create(b, loc, acc, x);
}

Value fillOf(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Type elt,
             Value scalar) {
  Value e = tensor::EmptyOp::create(b, loc, sizes, elt);
  return linalg::FillOp::create(b, loc, scalar, e).getResult(0);
}

/// The position of the plain result `d<dim>` in `m`; nullopt when `dim` does
/// not occur; failure when it occurs other than as one plain result.
FailureOr<std::optional<unsigned>> plainPosition(AffineMap m, unsigned dim) {
  std::optional<unsigned> pos;
  for (unsigned p = 0; p < m.getNumResults(); ++p) {
    AffineExpr e = m.getResult(p);
    if (!e.isFunctionOfDim(dim))
      continue;
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || pos)
      return failure();
    pos = p;
  }
  return pos;
}

/// Clones the body of `op` into the body being built, with `index(d)`
/// replaced by `index(b, loc, d)`, and returns the mapped yielded values.
SmallVector<Value> cloneBody(OpBuilder &b, Location loc, linalg::GenericOp op,
                             ValueRange args,
                             function_ref<Value(OpBuilder &, Location, unsigned)> index) {
  IRMapping map;
  Block *body = op.getBlock();
  map.map(body->getArguments(), args);
  for (Operation &o : body->without_terminator()) {
    if (auto idx = dyn_cast<linalg::IndexOp>(o)) {
      map.map(idx.getResult(), index(b, loc, idx.getDim()));
      continue;
    }
    b.clone(o, map);
  }
  SmallVector<Value> out;
  for (Value v : body->getTerminator()->getOperands())
    out.push_back(map.lookupOrDefault(v));
  return out;
}

void mark(Operation *op, int64_t width, StringRef role) {
  Builder b(op->getContext());
  op->setAttr(kChunkWidthAttr, b.getI64IntegerAttr(width));
  op->setAttr(kChunkRoleAttr, b.getStringAttr(role));
}

} // namespace

FailureOr<Value> lockstep::chunkGeneric(RewriterBase &rw, linalg::GenericOp op,
                                        int64_t C) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  SmallVector<unsigned> red;
  op.getReductionDims(red);
  std::optional<Combiner> comb = classifyCombiner(op);
  if (red.size() != 1 || !comb || *comb == Combiner::Exact || op->getNumResults() != 1)
    return rw.notifyMatchFailure(op, "not a single-dim add or mul reduction");
  unsigned r = red[0], n = op.getNumLoops();
  OpFoldResult L = loopSize(rw, op, r);
  if (!L)
    return rw.notifyMatchFailure(op, "no operand gives the reduction length");
  std::optional<int64_t> Ls = getConstantIntValue(L);
  if (Ls && *Ls <= C) {
    mark(op, *Ls, "whole");
    return op->getResult(0);
  }
  // Operands indexed by r: where, and the output's dims.
  SmallVector<std::optional<unsigned>> pos;
  for (OpOperand *o : op.getDpsInputOperands()) {
    auto p = plainPosition(op.getMatchingIndexingMap(o), r);
    if (failed(p))
      return rw.notifyMatchFailure(op, "the reduction dim is not indexed plainly");
    pos.push_back(*p);
  }
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  SmallVector<unsigned> outDims; // the dims of the output map, constants dropped
  for (AffineExpr e : outMap.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      outDims.push_back(d.getPosition());
    else if (!isa<AffineConstantExpr>(e))
      return rw.notifyMatchFailure(op, "the output map is not a projection");
  }
  Type elt = getElementTypeOrSelf(init->get().getType());

  ChunkSplit split = splitLength(rw, loc, L, C);
  bool divisible = split.divisible;
  OpFoldResult nFull = split.whole, lFull = split.covered;

  // The partial: dims (.., j = r, k = r + 1, ..).
  auto shift = [&](unsigned d) { return d < r ? d : d + 1; };
  SmallVector<AffineExpr> shiftDims;
  for (unsigned d = 0; d < n; ++d)
    shiftDims.push_back(getAffineDimExpr(shift(d), ctx));
  SmallVector<Value> pIns;
  SmallVector<AffineMap> pMaps;
  for (auto [i, o] : llvm::enumerate(op.getDpsInputOperands())) {
    AffineMap m = op.getMatchingIndexingMap(o);
    Value x = o->get();
    if (!pos[i]) {
      pIns.push_back(x);
      pMaps.push_back(m.replaceDimsAndSymbols(shiftDims, {}, n + 1, 0));
      continue;
    }
    unsigned p = *pos[i];
    auto xt = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rw, loc, x);
    if (!divisible) {
      SmallVector<OpFoldResult> offs(xt.getRank(), rw.getIndexAttr(0)),
          strides(xt.getRank(), rw.getIndexAttr(1));
      sizes[p] = lFull;
      x = tensor::ExtractSliceOp::create(rw, loc, x, offs, sizes, strides);
    }
    SmallVector<AffineExpr> exprs;
    for (unsigned a = 0; a < xt.getRank(); ++a) {
      if (a == p)
        exprs.append({getAffineDimExpr(r, ctx), getAffineDimExpr(r + 1, ctx)});
      else
        exprs.push_back(m.getResult(a).replaceDims(shiftDims));
    }
    pIns.push_back(expandChunks(rw, loc, x, sizes, p, nFull, C));
    pMaps.push_back(AffineMap::get(n + 1, 0, exprs, ctx));
  }
  // The partials: the output dims with j inserted before the first dim after
  // r. When no dim comes after r and some input is broadcast along the
  // output's last dim (a contraction's rows, as in X·Wᵀ), j goes before that
  // dim instead, so that the partials keep the output's columns contiguous.
  SmallVector<unsigned> partDims;
  bool placed = false;
  for (unsigned d : outDims) {
    if (!placed && d > r) {
      partDims.push_back(r);
      placed = true;
    }
    partDims.push_back(d);
  }
  if (!placed && !outDims.empty() &&
      llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *o) {
        return !op.getMatchingIndexingMap(o).isFunctionOfDim(outDims.back());
      })) {
    partDims.insert(partDims.end() - 1, r);
    placed = true;
  }
  if (!placed)
    partDims.push_back(r);
  SmallVector<OpFoldResult> partSizes;
  SmallVector<AffineExpr> partInPartial, partInCombine;
  for (unsigned d : partDims) {
    partSizes.push_back(d == r ? nFull : loopSize(rw, op, d));
    partInPartial.push_back(getAffineDimExpr(d == r ? r : shift(d), ctx));
    partInCombine.push_back(getAffineDimExpr(d, ctx));
  }
  Value partInit = fillOf(rw, loc, partSizes, elt, identityOf(rw, loc, elt, *comb));
  pMaps.push_back(AffineMap::get(n + 1, 0, partInPartial, ctx));
  SmallVector<utils::IteratorType> pIters;
  for (unsigned d = 0; d < n; ++d) {
    if (d == r)
      pIters.append({utils::IteratorType::parallel, utils::IteratorType::reduction});
    else
      pIters.push_back(op.getIteratorTypesArray()[d]);
  }
  auto partial = linalg::GenericOp::create(
      rw, loc, partInit.getType(), pIns, ValueRange{partInit}, pMaps, pIters,
      [&](OpBuilder &b, Location l, ValueRange args) {
        auto vals = cloneBody(b, l, op, args, [&](OpBuilder &ib, Location il, unsigned d) -> Value {
          if (d != r)
            return linalg::IndexOp::create(ib, il, shift(d));
          Value j = linalg::IndexOp::create(ib, il, r);
          Value k = linalg::IndexOp::create(ib, il, r + 1);
          Value c = arith::ConstantIndexOp::create(ib, il, C);
          return arith::AddIOp::create(ib, il, arith::MulIOp::create(ib, il, j, c), k);
        });
        linalg::YieldOp::create(b, l, vals);
      });
  mark(partial, C, "partial");

  // The combine: the partials folded over j into the op's init.
  SmallVector<AffineMap> cMaps = {AffineMap::get(n, 0, partInCombine, ctx), outMap};
  auto combine = linalg::GenericOp::create(
      rw, loc, init->get().getType(), ValueRange{partial.getResult(0)},
      ValueRange{init->get()}, cMaps, op.getIteratorTypesArray(),
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, fold(b, l, *comb, args[1], args[0]));
      });
  mark(combine, C, "combine");
  if (divisible)
    return combine.getResult(0);

  // The tail: the op over [lFull, L), from the identity.
  OpFoldResult tailLen = split.tail(rw, loc, L);
  SmallVector<Value> tIns;
  for (auto [i, o] : llvm::enumerate(op.getDpsInputOperands())) {
    Value x = o->get();
    if (pos[i]) {
      auto xt = cast<RankedTensorType>(x.getType());
      SmallVector<OpFoldResult> offs(xt.getRank(), rw.getIndexAttr(0)),
          strides(xt.getRank(), rw.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rw, loc, x);
      offs[*pos[i]] = lFull;
      sizes[*pos[i]] = tailLen;
      x = tensor::ExtractSliceOp::create(rw, loc, x, offs, sizes, strides);
    }
    tIns.push_back(x);
  }
  Value tailInit = fillOf(rw, loc, tensor::getMixedSizes(rw, loc, init->get()), elt,
                          identityOf(rw, loc, elt, *comb));
  auto tail = linalg::GenericOp::create(
      rw, loc, tailInit.getType(), tIns, ValueRange{tailInit},
      op.getIndexingMapsArray(), op.getIteratorTypesArray(),
      [&](OpBuilder &b, Location l, ValueRange args) {
        auto vals = cloneBody(b, l, op, args, [&](OpBuilder &ib, Location il, unsigned d) -> Value {
          Value i = linalg::IndexOp::create(ib, il, d);
          if (d != r)
            return i;
          return arith::AddIOp::create(
              ib, il, i, getValueOrCreateConstantIndexOp(ib, il, lFull));
        });
        linalg::YieldOp::create(b, l, vals);
      });
  mark(tail, C, "tail");
  unsigned rank = cast<RankedTensorType>(tailInit.getType()).getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  auto merged = linalg::GenericOp::create(
      rw, loc, tailInit.getType(), ValueRange{tail.getResult(0)},
      ValueRange{combine.getResult(0)}, SmallVector<AffineMap>{id, id},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, fold(b, l, *comb, args[1], args[0]));
      });
  return merged.getResult(0);
}
