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
// Two rewrites feed it: an element read from a transpose (tensor.extract,
// as RoPE's rotate-half gathers) is read from the transpose's input at the
// permuted index, and a transpose then used once, by an elementwise
// consumer, becomes a generic that fuses into it. A copy is exact, so these
// change no bit either.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
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

/// An element of a transpose is the element of its input at the permuted
/// index: a gather (RoPE's rotate-half, ConcatSlices.cpp) reads the input,
/// and the transpose loses a use.
struct ExtractThroughTranspose : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractOp op, PatternRewriter &rw) const override {
    auto t = op.getTensor().getDefiningOp<linalg::TransposeOp>();
    if (!t)
      return failure();
    // Result dim i is input dim perm[i].
    ArrayRef<int64_t> perm = t.getPermutation();
    SmallVector<Value> at(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      at[p] = op.getIndices()[i];
    rw.replaceOpWithNewOp<tensor::ExtractOp>(op, t.getInput(), at);
    return success();
  }
};

/// A transpose used once, as an input of an elementwise generic, becomes a
/// generic itself, so that the elementwise fusion reads its input through
/// the permuted map instead of copying it.
struct GeneralizeFusableTranspose : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::TransposeOp op, PatternRewriter &rw) const override {
    if (!op->hasOneUse() || op.hasPureBufferSemantics())
      return failure();
    OpOperand &use = *op->getResult(0).getUses().begin();
    auto g = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!elementwise(g) || !g.isDpsInput(&use))
      return failure();
    return linalg::generalizeNamedOp(rw, op);
  }
};

struct FuseElementwisePass
    : public lockstep::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExtractThroughTranspose, GeneralizeFusableTranspose>(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *use) {
      Operation *producer = use->get().getDefiningOp();
      return elementwise(producer) && elementwise(use->getOwner()) && producer->hasOneUse();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
