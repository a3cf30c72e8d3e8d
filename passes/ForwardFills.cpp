//===- ForwardFills.cpp - The lockstep-forward-fills pass -----------------===//
//
// A reduction whose output buffer was just filled with `c` starts each
// output's fold from `c` in its body instead (select at index 0 of the
// reduction dims), and the fill is erased: the same value enters the same
// fold, so no bit changes, and the step runs one kernel (GPU) or one pass
// over memory (CPU) fewer. See the pass's description in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"

namespace lockstep {
#define GEN_PASS_DEF_FORWARDFILLS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

/// Whether every reduction dim of `op` has a static, nonzero extent (so
/// that each output's fold runs at least once).
bool reductionsRun(linalg::GenericOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  bool any = false;
  for (auto [range, it] : llvm::zip(ranges, iters)) {
    if (!linalg::isReductionIterator(it))
      continue;
    if (ShapedType::isDynamic(range) || range <= 0)
      return false;
    any = true;
  }
  return any;
}

/// The body's `first`: whether every reduction dim is at index 0, built at
/// the start of the body.
Value firstIteration(OpBuilder &b, linalg::GenericOp op) {
  Location loc = op.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0), first;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (!linalg::isReductionIterator(it))
      continue;
    Value at0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      linalg::IndexOp::create(b, loc, d), zero);
    first = first ? arith::AndIOp::create(b, loc, first, at0).getResult() : at0;
  }
  return first;
}

struct ForwardFillsPass : public lockstep::impl::ForwardFillsBase<ForwardFillsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp g) {
      if (g.getNumReductionLoops() > 0 && reductionsRun(g))
        ops.push_back(g);
    });
    for (linalg::GenericOp g : ops) {
      Block *body = g.getBlock();
      Value first;
      for (unsigned i = 0; i < g.getNumDpsInits(); ++i) {
        linalg::FillOp fill = lockstep::forwardableFill(g, i);
        if (!fill)
          continue;
        BlockArgument acc = g.getMatchingBlockArgument(g.getDpsInitOperand(i));
        Value c = fill.getDpsInputOperand(0)->get();
        OpBuilder b = OpBuilder::atBlockBegin(body);
        if (!first)
          first = firstIteration(b, g);
        else
          b.setInsertionPointAfterValue(first);
        Value start = arith::SelectOp::create(b, g.getLoc(), first, c, acc);
        acc.replaceAllUsesExcept(start, start.getDefiningOp());
        fill.erase();
        ++numForwarded;
      }
    }
  }
};

} // namespace
