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
