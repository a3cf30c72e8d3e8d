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
// and loaded, so no bit changes. Nothing is fused into a reduction.
//
// Two rewrites feed it: an element read from a transpose (tensor.extract,
// as RoPE's rotate-half gathers) is read from the transpose's input at the
// permuted index, and a transpose then used once, by an elementwise
// consumer, becomes a generic that fuses into it. A copy is exact, so these
// change no bit either. And a reduction of one input read once per element
// by an elementwise consumer (a projection's chunk combine before the
// residual add) is folded in the consumer's body, in its own order.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
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

/// A reduction of one input (a contraction's chunk combine, folding its
/// partials in chunk order) whose only use is an input of an elementwise
/// generic that reads each of its elements once (a permutation map: the
/// residual add after a projection, the MLP's activation product) is
/// computed in the consumer's body: an scf.for over the reduced dim, from
/// the reduction's init (its fill value, or its element), folding the
/// input's elements with the reduction's own body in the same order. One
/// kernel fewer, and the combined tensor is never stored.
struct InlineReduction : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  static OpOperand *candidate(linalg::GenericOp g) {
    for (OpOperand *o : g.getDpsInputOperands()) {
      auto r = o->get().getDefiningOp<linalg::GenericOp>();
      if (!r || !r->hasOneUse() || r.getNumDpsInputs() != 1 || r.getNumDpsInits() != 1 ||
          r.getNumReductionLoops() != 1 || r.hasPureBufferSemantics())
        continue;
      if (!g.getMatchingIndexingMap(o).isPermutation() ||
          !r.getMatchingIndexingMap(r.getDpsInitOperand(0)).isProjectedPermutation() ||
          !r.getMatchingIndexingMap(r.getDpsInputOperand(0)).isProjectedPermutation())
        continue;
      if (llvm::any_of(r.getBody()->getOperations(),
                       [](Operation &op) { return op.getNumRegions() || isa<linalg::IndexOp>(op); }))
        continue;
      return o;
    }
    return nullptr;
  }

  LogicalResult matchAndRewrite(linalg::GenericOp g, PatternRewriter &rw) const override {
    if (!elementwise(g) || g.hasPureBufferSemantics())
      return failure();
    OpOperand *use = candidate(g);
    if (!use)
      return failure();
    auto r = use->get().getDefiningOp<linalg::GenericOp>();
    Location loc = g.getLoc();
    AffineMap gm = g.getMatchingIndexingMap(use);
    AffineMap om = r.getMatchingIndexingMap(r.getDpsInitOperand(0));
    AffineMap pm = r.getMatchingIndexingMap(r.getDpsInputOperand(0));
    Value partials = r.getDpsInputOperand(0)->get(), init = r.getDpsInitOperand(0)->get();
    unsigned red = 0;
    for (auto [d, it] : llvm::enumerate(r.getIteratorTypesArray()))
      if (it == utils::IteratorType::reduction)
        red = d;
    // The reduced extent, from the input's dim that the reduced loop reads.
    Value extent;
    for (auto [q, e] : llvm::enumerate(pm.getResults()))
      if (cast<AffineDimExpr>(e).getPosition() == red)
        extent = tensor::DimOp::create(rw, loc, partials, q);
    if (!extent)
      return failure();
    Value initValue;
    if (auto fill = init.getDefiningOp<linalg::FillOp>())
      initValue = fill.getDpsInputOperand(0)->get();
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    for (OpOperand *o : g.getDpsInputOperands())
      if (o != use) {
        inputs.push_back(o->get());
        maps.push_back(g.getMatchingIndexingMap(o));
      }
    if (!initValue) {
      inputs.push_back(init);
      maps.push_back(gm);
    }
    for (OpOperand &o : g.getDpsInitsMutable())
      maps.push_back(g.getMatchingIndexingMap(&o));
    unsigned useArg = use->getOperandNumber();
    auto fused = linalg::GenericOp::create(
        rw, loc, g.getResultTypes(), inputs, g.getDpsInits(), maps, g.getIteratorTypesArray(),
        [&](OpBuilder &b, Location l, ValueRange args) {
          // The reduction's loop indices at this point: its parallel dims
          // from the consumer's (the element the consumer reads), the
          // reduced one the loop's.
          SmallVector<Value> at(r.getNumLoops());
          for (auto [i, e] : llvm::enumerate(om.getResults()))
            at[cast<AffineDimExpr>(e).getPosition()] = linalg::IndexOp::create(
                b, l, cast<AffineDimExpr>(gm.getResult(i)).getPosition());
          Value acc0 = initValue ? initValue : args[inputs.size() - 1];
          Value zero = arith::ConstantIndexOp::create(b, l, 0),
                one = arith::ConstantIndexOp::create(b, l, 1);
          auto loop = scf::ForOp::create(
              b, l, zero, extent, one, ValueRange{acc0},
              [&](OpBuilder &fb, Location fl, Value j, ValueRange acc) {
                at[red] = j;
                SmallVector<Value> coords;
                for (AffineExpr e : pm.getResults())
                  coords.push_back(at[cast<AffineDimExpr>(e).getPosition()]);
                IRMapping m;
                m.map(r.getBody()->getArgument(0),
                      tensor::ExtractOp::create(fb, fl, partials, coords).getResult());
                m.map(r.getBody()->getArgument(1), acc[0]);
                for (Operation &op : r.getBody()->without_terminator())
                  fb.clone(op, m);
                scf::YieldOp::create(
                    fb, fl, m.lookup(r.getBody()->getTerminator()->getOperand(0)));
              });
          IRMapping m;
          unsigned next = 0;
          for (unsigned a = 0; a < g.getNumDpsInputs(); ++a)
            m.map(g.getBody()->getArgument(a), a == useArg ? loop.getResult(0) : args[next++]);
          for (unsigned o = 0; o < g.getNumDpsInits(); ++o)
            m.map(g.getBody()->getArgument(g.getNumDpsInputs() + o), args[inputs.size() + o]);
          for (Operation &op : g.getBody()->without_terminator())
            b.clone(op, m);
          SmallVector<Value> yields;
          for (Value v : g.getBody()->getTerminator()->getOperands())
            yields.push_back(m.lookupOrDefault(v));
          linalg::YieldOp::create(b, l, yields);
        });
    fused->setDiscardableAttrs(g->getDiscardableAttrDictionary());
    rw.replaceOp(g, fused.getResults());
    rw.eraseOp(r);
    return success();
  }
};

struct FuseElementwisePass
    : public lockstep::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExtractThroughTranspose, GeneralizeFusableTranspose, InlineReduction>(
        &getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *use) {
      Operation *producer = use->get().getDefiningOp();
      return elementwise(producer) && elementwise(use->getOwner()) && producer->hasOneUse();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
