//===- WarpReductions.cpp - The lockstep-warp-reductions pass -------------===//
//
// A reduction that lockstep-map-to-gpu would give one thread per output
// (a norm's partial sums: T x 8 outputs of 256 values each at a decode
// step) reads its values one after another: a chain of loads that leaves
// the GPU idle. Here a warp owns the output instead. In each slab of 32
// values of the reduction loop, lane l computes what the loop body computes
// without the accumulator for value k0 + l (its loads, the square of a
// norm), and then every lane folds the 32 in order, each received by a
// shuffle from the lane that made it; lane 0 stores the result. The fold is
// the same ops, on the same values, in the same order: only which thread
// computes the values before it changes.
//
//===----------------------------------------------------------------------===//
#include "lockstep/GPU/ParallelPoints.h"
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace lockstep {
#define GEN_PASS_DEF_WARPREDUCTIONS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

constexpr int64_t kWarp = 32;
constexpr int64_t kBlock = 256; // 8 warps, 8 outputs a block

/// How a parallel loop's body splits: the ops before its reduction loop (all
/// lanes run them), the loop, and in its body the ops that do not depend on
/// the accumulators (`pre`: lane l runs them for value k0 + l) and those that
/// do (`fold`: every lane runs them, value after value); `sent` are the
/// values of `pre` that `fold` reads, each sent by a shuffle.
struct Plan {
  scf::ForOp loop;
  SmallVector<Operation *> pre, fold;
  SmallVector<Value> sent;
};

bool writesOrAllocates(Operation *op) {
  return hasEffect<MemoryEffects::Write>(op) || hasEffect<MemoryEffects::Allocate>(op) ||
         hasEffect<MemoryEffects::Free>(op);
}

/// Whether the loop has at least a warp's values: a static trip count of 32
/// or more, or a dynamic one.
bool longEnough(scf::ForOp f) {
  auto lb = getConstantIntValue(f.getLowerBound());
  auto ub = getConstantIntValue(f.getUpperBound());
  return !lb || !ub || *ub - *lb >= kWarp;
}

std::optional<Plan> analyze(scf::ParallelOp p) {
  if (p.getNumResults() != 0)
    return std::nullopt;
  Plan plan;
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

/// Whether `op` runs on the host: at the top level of the function or only
/// inside host-level branches.
bool atHostLevel(Operation *op) {
  for (Operation *p = op->getParentOp(); p && !isa<func::FuncOp>(p); p = p->getParentOp())
    if (!isa<scf::IfOp>(p))
      return false;
  return true;
}

struct WarpReductionsPass : public lockstep::impl::WarpReductionsBase<WarpReductionsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<scf::ParallelOp, Plan>> found;
    getOperation().walk([&](scf::ParallelOp p) {
      if (!atHostLevel(p))
        return;
      if (auto plan = analyze(p))
        found.push_back({p, *plan});
    });
    for (auto &[p, plan] : found)
      launch(p, plan);
  }

  void launch(scf::ParallelOp p, const Plan &plan) {
    OpBuilder b(p);
    Location loc = p.getLoc();
    auto cst = [&](OpBuilder &at, int64_t v) {
      return arith::ConstantIndexOp::create(at, loc, v).getResult();
    };
    SmallVector<Value> counts;
    Value total = lockstep::parallelPointCounts(b, loc, p, counts);
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, total, cst(b, 0));
    auto guard = scf::IfOp::create(b, loc, any, /*withElse=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    Value lanes = arith::MulIOp::create(b, loc, total, cst(b, kWarp));
    Value grid = arith::CeilDivUIOp::create(b, loc, lanes, cst(b, kBlock));
    Value threads = arith::MinUIOp::create(b, loc, lanes, cst(b, kBlock));
    Value one = cst(b, 1);
    auto launch = gpu::LaunchOp::create(b, loc, grid, one, one, threads, one, one);
    Block &kb = launch.getBody().front();
    OpBuilder kbb = OpBuilder::atBlockBegin(&kb);
    Value tid = arith::AddIOp::create(
        kbb, loc, arith::MulIOp::create(kbb, loc, launch.getBlockIds().x, cst(kbb, kBlock)),
        launch.getThreadIds().x);
    Value point = arith::DivUIOp::create(kbb, loc, tid, cst(kbb, kWarp));
    Value lane = arith::RemUIOp::create(kbb, loc, tid, cst(kbb, kWarp));
    // A warp's lanes share their point: the branch is the whole warp's.
    Value in = arith::CmpIOp::create(kbb, loc, arith::CmpIPredicate::ult, point, total);
    auto inside = scf::IfOp::create(kbb, loc, in, /*withElse=*/false);
    gpu::TerminatorOp::create(kbb, loc);
    OpBuilder ib = OpBuilder::atBlockBegin(&inside.getThenRegion().front());
    IRMapping map;
    lockstep::mapParallelPoint(ib, loc, p, point, counts, map);

    scf::ForOp f = plan.loop;
    auto body = p.getBody()->without_terminator();
    auto it = body.begin();
    for (; &*it != f.getOperation(); ++it)
      ib.clone(*it, map);
    Value lb = map.lookupOrDefault(f.getLowerBound());
    Value ub = map.lookupOrDefault(f.getUpperBound());
    SmallVector<Value> inits;
    for (Value v : f.getInitArgs())
      inits.push_back(map.lookupOrDefault(v));
    Type i32 = ib.getI32Type();
    Value width = arith::ConstantIntOp::create(ib, loc, i32, kWarp);
    auto slabs = scf::ForOp::create(ib, loc, lb, ub, cst(ib, kWarp), inits);
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
      Value n = arith::MinUIOp::create(sb, loc, left, cst(sb, kWarp));
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
    Value first = arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::eq, lane, cst(ib, 0));
    auto tail = scf::IfOp::create(ib, loc, first, /*withElse=*/false);
    OpBuilder tb = OpBuilder::atBlockBegin(&tail.getThenRegion().front());
    for (++it; it != body.end(); ++it)
      tb.clone(*it, map);
    p.erase();
    ++numWarpReductions;
  }
};

} // namespace
