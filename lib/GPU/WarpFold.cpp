//===- WarpFold.cpp - A parallel loop's reduction folded by a warp --------===//
//
// See lockstep/GPU/WarpFold.h.
//
//===----------------------------------------------------------------------===//
#include "lockstep/GPU/WarpFold.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace lockstep;

namespace {

bool writesOrAllocates(Operation *op) {
  return hasEffect<MemoryEffects::Write>(op) || hasEffect<MemoryEffects::Allocate>(op) ||
         hasEffect<MemoryEffects::Free>(op);
}

/// Whether the loop has at least a warp's values: a static trip count of 32
/// or more, or a dynamic one.
bool longEnough(scf::ForOp f) {
  auto lb = getConstantIntValue(f.getLowerBound());
  auto ub = getConstantIntValue(f.getUpperBound());
  return !lb || !ub || *ub - *lb >= kWarpLanes;
}

}  // namespace

std::optional<WarpFoldPlan> lockstep::planWarpFold(scf::ParallelOp p) {
  if (p.getNumResults() != 0)
    return std::nullopt;
  WarpFoldPlan plan;
  for (Operation &op : p.getBody()->without_terminator()) {
    if (auto f = dyn_cast<scf::ForOp>(op); f && !plan.loop && f.getNumRegionIterArgs() > 0) {
      plan.loop = f;
      continue;
    }
    if (op.getNumRegions() != 0)
      return std::nullopt;
    // Before the loop every lane runs the op: reads only.
    if (!plan.loop && writesOrAllocates(&op))
      return std::nullopt;
  }
  scf::ForOp f = plan.loop;
  if (!f || !longEnough(f) || getConstantIntValue(f.getStep()) != int64_t(1))
    return std::nullopt;
  // Split the body by dependence on the accumulators. Pure ops of the
  // induction variable and values from outside alone (k == 0, an index)
  // are recomputed in the fold rather than sent.
  llvm::SmallPtrSet<Operation *, 16> onAcc, ofK;
  auto inBody = [&](Value v) -> Operation * {
    Operation *d = v.getDefiningOp();
    return d && d->getBlock() == f.getBody() ? d : nullptr;
  };
  auto isAcc = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == f.getBody() && arg != f.getInductionVar();
  };
  for (Operation &op : f.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return std::nullopt;
    bool acc = llvm::any_of(op.getOperands(), [&](Value v) {
      Operation *d = inBody(v);
      return isAcc(v) || (d && onAcc.contains(d));
    });
    if (acc) {
      if (!isPure(&op))
        return std::nullopt;
      onAcc.insert(&op);
      plan.fold.push_back(&op);
      continue;
    }
    if (writesOrAllocates(&op))
      return std::nullopt;
    plan.pre.push_back(&op);
    if (isPure(&op) && llvm::all_of(op.getOperands(), [&](Value v) {
          Operation *d = inBody(v);
          return !d || ofK.contains(d);
        })) {
      ofK.insert(&op);
      plan.fold.push_back(&op);
    }
  }
  // The fold in program order.
  llvm::sort(plan.fold, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  llvm::SetVector<Value> sent;
  for (Operation *op : plan.fold)
    for (Value v : op->getOperands())
      if (Operation *d = inBody(v); d && !onAcc.contains(d) && !ofK.contains(d))
        sent.insert(v);
  for (Value v : f.getBody()->getTerminator()->getOperands())
    if (Operation *d = inBody(v); d && !onAcc.contains(d))
      return std::nullopt; // a value the fold does not make
  for (Value v : sent) {
    Type t = v.getType();
    if (!t.isF32() && !t.isInteger(32))
      return std::nullopt; // a shuffle moves 32 bits
  }
  plan.sent.assign(sent.begin(), sent.end());
  return plan;
}

void lockstep::buildWarpFold(OpBuilder &b, Location loc, scf::ParallelOp p,
                             const WarpFoldPlan &plan, IRMapping &map, Value lane) {
  auto cst = [&](OpBuilder &at, int64_t v) {
    return arith::ConstantIndexOp::create(at, loc, v).getResult();
  };
  scf::ForOp f = plan.loop;
  auto body = p.getBody()->without_terminator();
  auto it = body.begin();
  for (; &*it != f.getOperation(); ++it)
    b.clone(*it, map);
  Value lb = map.lookupOrDefault(f.getLowerBound());
  Value ub = map.lookupOrDefault(f.getUpperBound());
  SmallVector<Value> inits;
  for (Value v : f.getInitArgs())
    inits.push_back(map.lookupOrDefault(v));
  Type i32 = b.getI32Type();
  Value width = arith::ConstantIntOp::create(b, loc, i32, kWarpLanes);
  auto slabs = scf::ForOp::create(b, loc, lb, ub, cst(b, kWarpLanes), inits);
  {
    OpBuilder sb = OpBuilder::atBlockBegin(slabs.getBody());
    Value k0 = slabs.getInductionVar();
    // This lane's value of the slab, where the loop has one.
    Value k = arith::AddIOp::create(sb, loc, k0, lane);
    Value valid = arith::CmpIOp::create(sb, loc, arith::CmpIPredicate::ult, k, ub);
    SmallVector<Type> sentTypes;
    for (Value v : plan.sent)
      sentTypes.push_back(v.getType());
    auto mine = scf::IfOp::create(sb, loc, sentTypes, valid, /*withElse=*/true);
    {
      OpBuilder tb = OpBuilder::atBlockBegin(&mine.getThenRegion().front());
      IRMapping pm = map;
      pm.map(f.getInductionVar(), k);
      for (Operation *op : plan.pre)
        tb.clone(*op, pm);
      SmallVector<Value> out;
      for (Value v : plan.sent)
        out.push_back(pm.lookup(v));
      scf::YieldOp::create(tb, loc, out);
      OpBuilder eb = OpBuilder::atBlockBegin(&mine.getElseRegion().front());
      SmallVector<Value> zeros;
      for (Type t : sentTypes)
        zeros.push_back(arith::ConstantOp::create(eb, loc, t, eb.getZeroAttr(t)));
      scf::YieldOp::create(eb, loc, zeros);
    }
    // Every lane folds the slab's values in order.
    Value left = arith::SubIOp::create(sb, loc, ub, k0);
    Value n = arith::MinUIOp::create(sb, loc, left, cst(sb, kWarpLanes));
    auto fold = scf::ForOp::create(sb, loc, cst(sb, 0), n, cst(sb, 1),
                                   slabs.getRegionIterArgs());
    {
      OpBuilder fb = OpBuilder::atBlockBegin(fold.getBody());
      Value j = fold.getInductionVar();
      IRMapping fm = map;
      fm.map(f.getInductionVar(), arith::AddIOp::create(fb, loc, k0, j).getResult());
      for (auto [from, to] : llvm::zip(f.getRegionIterArgs(), fold.getRegionIterArgs()))
        fm.map(from, to);
      Value from = arith::IndexCastUIOp::create(fb, loc, i32, j);
      for (auto [v, got] : llvm::zip(plan.sent, mine.getResults()))
        fm.map(v, gpu::ShuffleOp::create(fb, loc, got, from, width, gpu::ShuffleMode::IDX)
                      .getResult(0));
      for (Operation *op : plan.fold)
        fb.clone(*op, fm);
      SmallVector<Value> yields;
      for (Value v : f.getBody()->getTerminator()->getOperands())
        yields.push_back(fm.lookupOrDefault(v));
      scf::YieldOp::create(fb, loc, yields);
    }
    scf::YieldOp::create(sb, loc, fold.getResults());
  }
  for (auto [from, to] : llvm::zip(f.getResults(), slabs.getResults()))
    map.map(from, to);
  // Lane 0 runs what follows the loop (the store of the result).
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, cst(b, 0));
  auto tail = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  OpBuilder tb = OpBuilder::atBlockBegin(&tail.getThenRegion().front());
  for (++it; it != body.end(); ++it)
    tb.clone(*it, map);
}
