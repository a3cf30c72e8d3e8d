//===- Contraction.cpp - Recognising bufferized contractions --------------===//
#include "lockstep/Reductions/Contraction.h"

#include "llvm/ADT/SmallBitVector.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace {

/// The loop dim of `map`'s last result, if it is a dim.
std::optional<unsigned> lastDim(AffineMap map) {
  if (map.getNumResults() == 0)
    return std::nullopt;
  if (auto d = dyn_cast<AffineDimExpr>(map.getResults().back()))
    return d.getPosition();
  return std::nullopt;
}

/// The parallel dim read by `mine` and not by `other`, nearest the end of
/// `mine`'s map (the most contiguous), that the output writes.
std::optional<unsigned> ownDim(AffineMap mine, AffineMap other, AffineMap out) {
  for (AffineExpr e : llvm::reverse(mine.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(e))
      if (!lockstep::readsDim(other, d.getPosition()) &&
          lockstep::readsDim(out, d.getPosition()))
        return d.getPosition();
  return std::nullopt;
}

} // namespace

Value lockstep::rootOf(Value v) {
  while (Operation *d = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(d)) {
      v = view.getViewSource();
      continue;
    }
    if (auto cast = dyn_cast<memref::CastOp>(d)) {
      v = cast.getSource();
      continue;
    }
    break;
  }
  return v;
}

bool lockstep::memoryAccesses(Operation *op,
                              SmallVectorImpl<std::pair<Operation *, Value>> &out) {
  WalkResult r = op->walk([&](Operation *inner) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects)
      return inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() || isMemoryEffectFree(inner)
                 ? WalkResult::advance()
                 : WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (auto &e : list) {
      if (!isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
        continue;
      Value v = e.getValue();
      if (!v || !isa<BaseMemRefType>(v.getType()))
        return WalkResult::interrupt();
      out.push_back({inner, v});
    }
    return WalkResult::advance();
  });
  return !r.wasInterrupted();
}

linalg::FillOp lockstep::forwardableFill(linalg::GenericOp op, unsigned init) {
  if (!op.hasPureBufferSemantics() || init >= op.getNumDpsInits())
    return nullptr;
  OpOperand *out = op.getDpsInitOperand(init);
  auto type = dyn_cast<MemRefType>(out->get().getType());
  AffineMap map = op.getMatchingIndexingMap(out);
  if (!type || map.getNumResults() != type.getRank() || map.getNumResults() == 0)
    return nullptr;
  // Every element written once per point of the parallel dims: the map
  // names each parallel dim once, and no reduction dim.
  llvm::SmallBitVector seen(op.getNumLoops());
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  unsigned parallel = 0;
  for (utils::IteratorType it : iters)
    parallel += linalg::isParallelIterator(it);
  // A dim of size 1 may be indexed by the constant 0 (a reduction's
  // combine writes [t, 0] of [T, 1]).
  unsigned named = 0;
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    auto k = dyn_cast<AffineConstantExpr>(e);
    if (k && k.getValue() == 0 && type.getDimSize(i) == 1)
      continue;
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || seen.test(d.getPosition()) || !linalg::isParallelIterator(iters[d.getPosition()]))
      return nullptr;
    seen.set(d.getPosition());
    ++named;
  }
  if (named != parallel)
    return nullptr;
  Value root = rootOf(out->get());
  for (Operation *o = op->getPrevNode(); o; o = o->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(o)) {
      if (fill.hasPureBufferSemantics() && fill.getDpsInitOperand(0)->get() == out->get())
        // A value of another type (the fill converts it) is not forwarded.
        return fill.getDpsInputOperand(0)->get().getType() == type.getElementType() ? fill
                                                                                    : nullptr;
    }
    // Any use of the buffer, here or nested (a kernel, a loop), reads or
    // writes the filled values.
    WalkResult touches = o->walk([&](Operation *n) {
      for (Value v : n->getOperands())
        if (isa<BaseMemRefType>(v.getType()) && rootOf(v) == root)
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (touches.wasInterrupted())
      return nullptr;
  }
  return nullptr;
}

SmallVector<Value> lockstep::loopSizes(OpBuilder &b, linalg::GenericOp op) {
  Location loc = op.getLoc();
  SmallVector<Value> sizes;
  for (Range r : cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc))
    sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
  return sizes;
}

bool lockstep::lastIs(AffineMap map, unsigned dim) {
  if (map.getNumResults() == 0)
    return false;
  auto d = dyn_cast<AffineDimExpr>(map.getResults().back());
  return d && d.getPosition() == dim;
}

bool lockstep::unitLastStride(Value memref) {
  auto t = dyn_cast<MemRefType>(memref.getType());
  return t && t.getRank() > 0 && t.isLastDimUnitStride();
}

Value lockstep::cstIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

bool lockstep::readsDim(AffineMap map, unsigned dim) {
  for (AffineExpr e : map.getResults())
    if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == dim)
      return true;
  return false;
}

std::optional<lockstep::Contraction> lockstep::matchContraction(linalg::GenericOp op) {
  bool buffers = op.hasPureBufferSemantics() && op->getNumResults() == 0;
  bool tensors = op.hasPureTensorSemantics() && op->getNumResults() == 1;
  if (!(buffers || tensors) || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  unsigned loops = iters.size();
  std::optional<unsigned> k;
  for (unsigned d = 0; d < loops; ++d) {
    if (linalg::isParallelIterator(iters[d]))
      continue;
    if (k || !linalg::isReductionIterator(iters[d]))
      return std::nullopt;
    k = d;
  }
  if (loops < 3 || !k)
    return std::nullopt;
  for (AffineMap m : op.getIndexingMapsArray())
    if (!m.isProjectedPermutation(/*allowZeroInResults=*/true))
      return std::nullopt;
  // The body: pure, with no index reads, yielding one value.
  for (Operation &o : op.getBlock()->without_terminator())
    if (isa<linalg::IndexOp>(o) || !isMemoryEffectFree(&o) || o.getNumRegions())
      return std::nullopt;
  Contraction c;
  c.op = op;
  c.k = *k;
  AffineMap a = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap b = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!readsDim(a, c.k) || !readsDim(b, c.k) || readsDim(out, c.k))
    return std::nullopt;
  std::optional<unsigned> m = ownDim(a, b, out), n = ownDim(b, a, out);
  if (!m || !n)
    return std::nullopt;
  c.m = *m;
  c.n = *n;
  for (unsigned d = 0; d < loops; ++d) {
    if (d == c.k)
      continue;
    if (!readsDim(out, d))
      return std::nullopt; // two points would write one output
    if (d != c.m && d != c.n)
      c.batch.push_back(d);
  }
  c.length = op.getStaticLoopRanges()[c.k];
  c.aKFastest = lastDim(a) == c.k;
  c.bKFastest = lastDim(b) == c.k;
  // In place: one point's stores could feed another point's loads.
  Value o = rootOf(op.getDpsInitOperand(0)->get());
  if (o == rootOf(op.getDpsInputOperand(0)->get()) ||
      o == rootOf(op.getDpsInputOperand(1)->get()))
    return std::nullopt;
  return c;
}

bool lockstep::sameRowsAndK(const Contraction &a, const Contraction &b) {
  linalg::GenericOp ga = a.op, gb = b.op;
  AffineMap map = ga.getMatchingIndexingMap(ga.getDpsInputOperand(0));
  if (map != gb.getMatchingIndexingMap(gb.getDpsInputOperand(0)) || a.m != b.m || a.k != b.k ||
      a.batch != b.batch || a.length != b.length)
    return false;
  return llvm::all_of(a.batch, [&](unsigned d) { return readsDim(map, d); });
}

SmallVector<Value> lockstep::indicesOf(OpBuilder &b, Location loc, AffineMap map,
                                       ArrayRef<Value> dims) {
  SmallVector<Value> idx;
  for (AffineExpr e : map.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      idx.push_back(dims[d.getPosition()]);
    else
      idx.push_back(arith::ConstantIndexOp::create(
          b, loc, cast<AffineConstantExpr>(e).getValue()));
  }
  return idx;
}

Value lockstep::applyBody(OpBuilder &b, linalg::GenericOp op, Value x, Value y, Value acc) {
  Block *body = op.getBlock();
  IRMapping map;
  map.map(body->getArgument(0), x);
  map.map(body->getArgument(1), y);
  map.map(body->getArgument(2), acc);
  for (Operation &o : body->without_terminator())
    b.clone(o, map);
  return map.lookupOrDefault(body->getTerminator()->getOperand(0));
}

std::pair<OpBuilder, SmallVector<Value>>
lockstep::parallelOver(OpBuilder &b, Location loc, ArrayRef<Value> extents) {
  auto cst = [&](OpBuilder &bld, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(bld, loc, v);
  };
  Value total = cst(b, 1);
  for (Value e : extents)
    total = arith::MulIOp::create(b, loc, total, e);
  Value zero = cst(b, 0), one = cst(b, 1);
  auto par = scf::ParallelOp::create(b, loc, ValueRange{zero}, ValueRange{total}, ValueRange{one});
  OpBuilder pb = OpBuilder::atBlockTerminator(par.getBody());
  SmallVector<Value> idx(extents.size());
  Value rem = par.getInductionVars()[0];
  for (int i = (int)extents.size() - 1; i >= 0; --i) {
    idx[i] = i == 0 ? rem : arith::RemUIOp::create(pb, loc, rem, extents[i]).getResult();
    if (i > 0)
      rem = arith::DivUIOp::create(pb, loc, rem, extents[i]);
  }
  return {pb, idx};
}
