//===- ReductionsInnermost.cpp - The lockstep-reductions-innermost pass ---===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace lockstep {
#define GEN_PASS_DEF_REDUCTIONSINNERMOST
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

struct ReductionsInnermostPass
    : public lockstep::impl::ReductionsInnermostBase<ReductionsInnermostPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp g) { generics.push_back(g); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp g : generics) {
      // The new loop order: the parallel dims, then the reduction dims, each
      // in their old order (interchangeGenericOp's vector names, for each
      // new loop, the old dim it is).
      SmallVector<unsigned> order, reductions;
      for (auto [i, type] : llvm::enumerate(g.getIteratorTypesArray()))
        (linalg::isReductionIterator(type) ? reductions : order).push_back(i);
      order.append(reductions);
      bool identity = true;
      for (auto [i, d] : llvm::enumerate(order))
        identity &= i == d;
      if (identity)
        continue;
      rewriter.setInsertionPoint(g);
      if (failed(linalg::interchangeGenericOp(rewriter, g, order))) {
        g.emitOpError("could not move its reduction dims innermost");
        return signalPassFailure();
      }
      ++numInterchanged;
    }
  }
};

} // namespace
