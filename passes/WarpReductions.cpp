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
#include "lockstep/GPU/WarpFold.h"
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

constexpr int64_t kWarp = lockstep::kWarpLanes;

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
    SmallVector<std::pair<scf::ParallelOp, lockstep::WarpFoldPlan>> found;
    getOperation().walk([&](scf::ParallelOp p) {
      if (!atHostLevel(p))
        return;
      if (auto plan = lockstep::planWarpFold(p))
        found.push_back({p, *plan});
    });
    for (auto &[p, plan] : found)
      launch(p, plan);
  }

  void launch(scf::ParallelOp p, const lockstep::WarpFoldPlan &plan) {
    OpBuilder b(p);
    Location loc = p.getLoc();
    auto cst = [&](OpBuilder &at, int64_t v) {
      return arith::ConstantIndexOp::create(at, loc, v).getResult();
    };
    SmallVector<Value> counts;
    Value total = lockstep::parallelPointCounts(b, loc, p, counts);
    Value lanes = arith::MulIOp::create(b, loc, total, cst(b, kWarp));
    lockstep::FlatLaunch fl = lockstep::buildFlatLaunch(b, loc, lanes);
    OpBuilder &kbb = fl.body;
    Value point = arith::DivUIOp::create(kbb, loc, fl.id, cst(kbb, kWarp));
    Value lane = arith::RemUIOp::create(kbb, loc, fl.id, cst(kbb, kWarp));
    // A warp's lanes share their point: the branch is the whole warp's.
    Value in = arith::CmpIOp::create(kbb, loc, arith::CmpIPredicate::ult, point, total);
    auto inside = scf::IfOp::create(kbb, loc, in, /*withElse=*/false);
    OpBuilder ib = OpBuilder::atBlockBegin(&inside.getThenRegion().front());
    IRMapping map;
    lockstep::mapParallelPoint(ib, loc, p, point, counts, map);

    lockstep::buildWarpFold(ib, loc, p, plan, map, lane);
    p.erase();
    ++numWarpReductions;
  }
};

} // namespace
