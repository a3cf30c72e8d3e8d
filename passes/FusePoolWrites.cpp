//===- FusePoolWrites.cpp - The lockstep-fuse-pool-writes pass ------------===//
//
// The ragged step writes each new key and value row into its slot of the
// paged pool with a loop of its own (a disjoint scf.for whose body copies
// one row), after the parallel loop that computed the rows (RoPE of k, the
// transpose of v). Here that copy is done by the producer's own threads:
// each stores its element where it did and also at the element's place in
// the pool. The value stored is the same f32 (no op is added between it and
// either store), so no bit changes; the step loses a kernel (GPU) per pool
// per layer. See the pass's description in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "lockstep/GPU/StepBuffers.h"
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Chunking.h"
#include "lockstep/Reductions/Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace lockstep {
#define GEN_PASS_DEF_FUSEPOOLWRITES
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using lockstep::rootOf;

namespace {

/// The rows' copy of a disjoint pool-write loop: `x = load src[ivs]; store
/// x, dst[ivs]` in a parallel loop from 0 by 1 over static bounds, the last
/// op of the loop's body; `src` a subview of a buffer defined outside the
/// loop at the loop's iteration in one dim and 0 in the others.
struct RowCopy {
  scf::ForOp loop;
  scf::ParallelOp copy;
  memref::SubViewOp src;
  memref::LoadOp load;
  memref::StoreOp store;
  /// The buffer the rows are read from, and its dim indexed by the loop.
  Value rows;
  unsigned rowDim = 0;
  /// The dims of `rows` that the copy's loops run over, in their order.
  SmallVector<unsigned> copyDims;
};

std::optional<RowCopy> matchCopy(scf::ForOp f) {
  RowCopy c;
  c.loop = f;
  Block *body = f.getBody();
  if (f.getNumResults() || !f->hasAttr(lockstep::kDisjointIterationsAttr) ||
      getConstantIntValue(f.getLowerBound()) != 0 || getConstantIntValue(f.getStep()) != 1 ||
      body->without_terminator().empty())
    return std::nullopt;
  c.copy = dyn_cast<scf::ParallelOp>(*std::prev(body->without_terminator().end()));
  if (!c.copy || c.copy.getNumResults())
    return std::nullopt;
  // Before the copy: reads and pure ops only (the slot's computation).
  for (Operation &o : body->without_terminator())
    if (&o != c.copy.getOperation() &&
        (o.getNumRegions() || (!isMemoryEffectFree(&o) && !isa<memref::LoadOp>(o))))
      return std::nullopt;
  Block *inner = c.copy.getBody();
  auto ops = inner->without_terminator();
  if (std::distance(ops.begin(), ops.end()) != 2)
    return std::nullopt;
  c.load = dyn_cast<memref::LoadOp>(*ops.begin());
  c.store = dyn_cast<memref::StoreOp>(*std::next(ops.begin()));
  if (!c.load || !c.store || c.store.getValue() != c.load.getResult() ||
      c.load.getIndices() != c.copy.getInductionVars() ||
      c.store.getIndices() != c.copy.getInductionVars())
    return std::nullopt;
  c.src = c.load.getMemRef().getDefiningOp<memref::SubViewOp>();
  if (!c.src || c.src->getBlock() != body || !c.src->hasOneUse())
    return std::nullopt;
  c.rows = c.src.getSource();
  auto rowsType = dyn_cast<MemRefType>(c.rows.getType());
  if (!rowsType || (c.rows.getParentBlock() == body))
    return std::nullopt;
  // Offsets: the loop's iteration in one dim, 0 elsewhere; sizes: 1 in the
  // dropped dims, the whole static dim elsewhere; strides 1.
  llvm::SmallBitVector dropped = c.src.getDroppedDims();
  bool found = false;
  for (unsigned d = 0; d < rowsType.getRank(); ++d) {
    OpFoldResult off = c.src.getMixedOffsets()[d], size = c.src.getMixedSizes()[d],
                 stride = c.src.getMixedStrides()[d];
    if (getConstantIntValue(stride) != 1)
      return std::nullopt;
    if (auto v = dyn_cast<Value>(off); v && v == f.getInductionVar()) {
      if (found || !dropped.test(d) || getConstantIntValue(size) != 1)
        return std::nullopt;
      found = true;
      c.rowDim = d;
      continue;
    }
    if (getConstantIntValue(off) != 0)
      return std::nullopt;
    if (dropped.test(d)) {
      if (rowsType.getDimSize(d) != 1)
        return std::nullopt;
      continue;
    }
    if (rowsType.isDynamicDim(d) || getConstantIntValue(size) != rowsType.getDimSize(d))
      return std::nullopt;
    c.copyDims.push_back(d);
  }
  if (!found || c.copyDims.size() != c.copy.getNumLoops())
    return std::nullopt;
  for (auto [i, d] : llvm::enumerate(c.copyDims))
    if (getConstantIntValue(c.copy.getLowerBound()[i]) != 0 || getConstantIntValue(c.copy.getStep()[i]) != 1 ||
        getConstantIntValue(c.copy.getUpperBound()[i]) != rowsType.getDimSize(d))
      return std::nullopt;
  return c;
}

/// The producer's one store of `rows`: directly in the body of a parallel
/// loop from 0 by 1 whose induction variables are its indices in order;
/// every dim but the rows' own has the buffer's static size as its bound.
memref::StoreOp producerStore(scf::ParallelOp p, const RowCopy &c) {
  auto type = cast<MemRefType>(c.rows.getType());
  if (p.getNumResults() || p.getNumLoops() != (unsigned)type.getRank())
    return nullptr;
  memref::StoreOp store;
  SmallVector<std::pair<Operation *, Value>> accesses;
  if (!lockstep::memoryAccesses(p, accesses))
    return nullptr;
  for (auto [op, m] : accesses) {
    if (!lockstep::stepBuffersMayOverlap(rootOf(m), rootOf(c.rows)))
      continue;
    auto s = dyn_cast<memref::StoreOp>(op);
    if (!s || store || s->getBlock() != p.getBody() || s.getMemRef() != c.rows)
      return nullptr;
    store = s;
  }
  if (!store || store.getIndices() != p.getInductionVars())
    return nullptr;
  for (unsigned d = 0; d < p.getNumLoops(); ++d) {
    if (getConstantIntValue(p.getLowerBound()[d]) != 0 || getConstantIntValue(p.getStep()[d]) != 1)
      return nullptr;
    if (d != c.rowDim && getConstantIntValue(p.getUpperBound()[d]) != type.getDimSize(d))
      return nullptr;
  }
  return store;
}

/// Whether `op` may touch a buffer in `roots` (writes only, or any access).
bool touches(Operation *op, ArrayRef<Value> roots, bool writesOnly) {
  SmallVector<std::pair<Operation *, Value>> accesses;
  if (!lockstep::memoryAccesses(op, accesses))
    return true;
  for (auto [inner, m] : accesses) {
    if (writesOnly && !hasEffect<MemoryEffects::Write>(inner))
      continue;
    for (Value r : roots)
      if (lockstep::stepBuffersMayOverlap(rootOf(m), r))
        return true;
  }
  return false;
}

struct FusePoolWritesPass : public lockstep::impl::FusePoolWritesBase<FusePoolWritesPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    for (Block &b : getOperation().getFunctionBody())
      for (Operation &o : b)
        if (auto f = dyn_cast<scf::ForOp>(o))
          loops.push_back(f);
    for (scf::ForOp f : loops)
      if (std::optional<RowCopy> c = matchCopy(f))
        fuse(*c);
  }

  /// Finds the loop that computed the rows, moves it down to the copy and
  /// gives it the copy's stores; the copy goes.
  void fuse(RowCopy &c) {
    scf::ForOp f = c.loop;
    Value root = rootOf(c.rows);
    // The nearest op before the copy that touches the rows' buffer.
    SmallVector<Operation *> between;
    Operation *producer = nullptr;
    for (Operation *o = f->getPrevNode(); o; o = o->getPrevNode()) {
      if (touches(o, root, /*writesOnly=*/false)) {
        producer = o;
        break;
      }
      between.push_back(o);
    }
    auto p = dyn_cast_or_null<scf::ParallelOp>(producer);
    memref::StoreOp store = p ? producerStore(p, c) : nullptr;
    if (!store)
      return;
    // Moving the producer down past `between` must change nothing: none of
    // those ops writes what it reads, or reads or writes what it writes.
    SmallVector<Value> reads, writes;
    SmallVector<std::pair<Operation *, Value>> accesses;
    if (!lockstep::memoryAccesses(p, accesses))
      return;
    for (auto [op, m] : accesses)
      (hasEffect<MemoryEffects::Write>(op) ? writes : reads).push_back(rootOf(m));
    for (Operation *o : between)
      if (touches(o, reads, /*writesOnly=*/true) || touches(o, writes, /*writesOnly=*/false))
        return;
    // Nor may the copy's slot computation read what the producer writes.
    for (Operation &o : f.getBody()->without_terminator())
      if (&o != c.copy.getOperation() && touches(&o, writes, /*writesOnly=*/false))
        return;

    p->moveBefore(f);
    OpBuilder b(store->getBlock(), std::next(Block::iterator(store)));
    Location loc = f.getLoc();
    Value t = p.getInductionVars()[c.rowDim];
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, t, f.getUpperBound());
    scf::IfOp::create(b, loc, inRange, [&](OpBuilder &ib, Location il) {
      IRMapping map;
      map.map(f.getInductionVar(), t);
      for (Operation &o : f.getBody()->without_terminator()) {
        if (&o == c.copy.getOperation())
          break;
        if (&o != c.src.getOperation())
          ib.clone(o, map);
      }
      for (auto [iv, d] : llvm::zip(c.copy.getInductionVars(), c.copyDims))
        map.map(iv, p.getInductionVars()[d]);
      map.map(c.load.getResult(), store.getValue());
      ib.clone(*c.store, map);
      scf::YieldOp::create(ib, il);
    });
    f.erase();
    ++numFused;
  }
};

} // namespace
