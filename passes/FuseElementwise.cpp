//===- FuseElementwise.cpp - The lockstep-fuse-elementwise pass -----------===//
//
// Fuses chains of elementwise linalg.generic ops on tensors (norm scaling,
// RoPE, activations, residual adds) into one op each, so that a backend
// makes one kernel and one pass over memory of a chain. Only a producer
// with one use in all (its results counted together) is fused, into an
// elementwise consumer: one used more often would be computed once per use,
// and a producer of several results (the weights of attention's last merge
// step, say) once per result it gives the consumer. Every element is then
// computed by the same scalar ops, in the same order, from the same
// operands, as before, and an f32 kept in a register equals the f32 stored
// and loaded, so no bit changes. Reductions and their chunked stages are
// left alone.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace lockstep {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

bool elementwise(Operation *op) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  return g && g.getNumLoops() == g.getNumParallelLoops() && g->getNumResults() >= 1;
}

struct FuseElementwisePass
    : public lockstep::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *use) {
      Operation *producer = use->get().getDefiningOp();
      return elementwise(producer) && elementwise(use->getOwner()) && producer->hasOneUse();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
