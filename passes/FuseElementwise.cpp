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
// and loaded, so no bit changes.
//
// An elementwise producer used once by a reduction of one input (a norm's
// square before its mean's chunk partials) is fused into that reduction
// too, through the tensor.expand_shape that splits the reduced dim into
// chunks: the producer is first expanded to the chunked shape, then fused.
// Each folded value is then computed in the reduction's body by the same
// ops from the same operands and folded in the same order. Contractions (two
// inputs or more) are left alone: their tiled kernels read stored operands.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

/// A reduction of one input into one output.
bool plainReduction(Operation *op) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  return g && g.getNumReductionLoops() > 0 && g.getNumDpsInputs() == 1 &&
         g.getNumDpsInits() == 1;
}

bool fusable(OpOperand *use) {
  Operation *producer = use->get().getDefiningOp();
  Operation *consumer = use->getOwner();
  return elementwise(producer) && producer->hasOneUse() &&
         (elementwise(consumer) || plainReduction(consumer));
}

/// An expand_shape of an elementwise op's only result, read only by plain
/// reductions: the op is rewritten in the expanded shape (so that it can
/// fuse into them).
bool expandable(OpOperand *use) {
  auto expand = dyn_cast<tensor::ExpandShapeOp>(use->getOwner());
  Operation *producer = use->get().getDefiningOp();
  if (!expand || !elementwise(producer) || !producer->hasOneUse() || expand->use_empty())
    return false;
  return llvm::all_of(expand->getUsers(), plainReduction);
}

struct FuseElementwisePass
    : public lockstep::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, fusable);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, expandable);
    // A tensor.dim of a producer's result (the chunked reshape's sizes) is
    // a use: read it from the producer's operands instead.
    memref::populateResolveRankedShapedTypeResultDimsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
