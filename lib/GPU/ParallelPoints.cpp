//===- ParallelPoints.cpp - An scf.parallel's points, flattened -----------===//
#include "lockstep/GPU/ParallelPoints.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

Value lockstep::parallelPointCounts(OpBuilder &b, Location loc, scf::ParallelOp p,
                                    SmallVectorImpl<Value> &counts) {
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  for (unsigned d = 0; d < p.getNumLoops(); ++d) {
    Value span = arith::SubIOp::create(b, loc, p.getUpperBound()[d], p.getLowerBound()[d]);
    Value c = arith::CeilDivUIOp::create(b, loc, span, p.getStep()[d]);
    // An empty range (upper below lower) is zero points.
    Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                        p.getUpperBound()[d], p.getLowerBound()[d]);
    c = arith::SelectOp::create(b, loc, empty, zero, c);
    counts.push_back(c);
    total = arith::MulIOp::create(b, loc, total, c);
  }
  return total;
}

void lockstep::mapParallelPoint(OpBuilder &b, Location loc, scf::ParallelOp p, Value id,
                                ArrayRef<Value> counts, IRMapping &map) {
  unsigned n = p.getNumLoops();
  Value rest = id;
  for (int d = (int)n - 1; d >= 0; --d) {
    Value k = d == 0 ? rest : arith::RemUIOp::create(b, loc, rest, counts[d]).getResult();
    if (d > 0)
      rest = arith::DivUIOp::create(b, loc, rest, counts[d]);
    Value iv = arith::AddIOp::create(b, loc, p.getLowerBound()[d],
                                     arith::MulIOp::create(b, loc, k, p.getStep()[d]));
    map.map(p.getInductionVars()[d], iv);
  }
}

lockstep::FlatLaunch lockstep::buildFlatLaunch(OpBuilder &b, Location loc, Value threads) {
  auto cst = [&](OpBuilder &at, int64_t v) {
    return arith::ConstantIndexOp::create(at, loc, v).getResult();
  };
  Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, threads, cst(b, 0));
  auto guard = scf::IfOp::create(b, loc, any, /*withElse=*/false);
  OpBuilder gb = OpBuilder::atBlockBegin(&guard.getThenRegion().front());
  Value grid = arith::CeilDivUIOp::create(gb, loc, threads, cst(gb, kFlatLaunchBlock));
  Value block = arith::MinUIOp::create(gb, loc, threads, cst(gb, kFlatLaunchBlock));
  Value one = cst(gb, 1);
  auto launch = gpu::LaunchOp::create(gb, loc, grid, one, one, block, one, one);
  Block &kb = launch.getBody().front();
  OpBuilder kbb = OpBuilder::atBlockBegin(&kb);
  Value id = arith::AddIOp::create(
      kbb, loc,
      arith::MulIOp::create(kbb, loc, launch.getBlockIds().x, cst(kbb, kFlatLaunchBlock)),
      launch.getThreadIds().x);
  gpu::TerminatorOp::create(kbb, loc);
  kbb.setInsertionPoint(kb.getTerminator());
  return {launch, id, kbb};
}
