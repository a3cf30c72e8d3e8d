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
// and loaded, so no bit changes. A cheap elementwise producer (a few ops:
// a norm's square) used once by a reduction of one input is fused into it
// too, through the tensor.expand_shape that splits the reduced dim into
// chunks (the producer is first rewritten in the chunked shape): each
// folded value is then computed in the fold by the same ops and folded in
// the same order. Contractions (two inputs) are not fused into.
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
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
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

/// An elementwise body of a few ops (a norm's square): cheap enough to be
/// computed in a reduction's fold. An expanded pow or exp is not: fused
/// into a norm's partials, one thread a chunk of 256, the H200 took 63 us
/// against 14 for the two kernels (run 14 in bench/RESULTS.md).
constexpr unsigned kMaxOpsInFold = 4;
bool cheap(Operation *op) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  return g && g.getBody()->getOperations().size() <= kMaxOpsInFold + 1;
}

/// Whether the producer of `use` fuses into its owner: an elementwise op
/// used once, into an elementwise op, or, when cheap, into a reduction of
/// one input (a contraction, two inputs, reads stored operands in its tiled
/// kernels).
bool fusable(OpOperand *use) {
  Operation *producer = use->get().getDefiningOp();
  Operation *consumer = use->getOwner();
  return elementwise(producer) && producer->hasOneUse() &&
         (elementwise(consumer) || (plainReduction(consumer) && cheap(producer)));
}

/// An expand_shape of a cheap elementwise op's only result, read only by
/// plain reductions (the chunks of a norm's mean): the op is rewritten in
/// the expanded shape, so that it can fuse into them.
bool expandable(OpOperand *use) {
  auto expand = dyn_cast<tensor::ExpandShapeOp>(use->getOwner());
  Operation *producer = use->get().getDefiningOp();
  if (!expand || !elementwise(producer) || !cheap(producer) || !producer->hasOneUse() ||
      expand->use_empty())
    return false;
  return llvm::all_of(expand->getUsers(), plainReduction);
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

/// Reductions read through a broadcast are folded again at every read:
/// only those of at most this many elements (a norm's mean over 2048 in
/// chunks of 256 combines 8 partials).
constexpr int64_t kMaxRefolded = 32;

/// A reduction of one input (a contraction's chunk combine, folding its
/// partials in chunk order) whose only use is an input of an elementwise
/// generic that reads each of its elements once (a permutation map: the
/// residual add after a projection, the MLP's activation product), or
/// reads it through a broadcast when it folds at most kMaxRefolded
/// elements (a norm's combine, read at every column), is computed in the
/// consumer's body: an scf.for over the reduced dim, from
/// the reduction's init (its fill value, or its element), folding the
/// input's elements with the reduction's own body in the same order. One
/// kernel fewer, and the combined tensor is never stored.
struct InlineReduction : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  /// The reduced extent when static (from the input dim the reduced loop
  /// reads), else nullopt.
  static std::optional<int64_t> reducedExtent(linalg::GenericOp r) {
    unsigned red = 0;
    for (auto [d, it] : llvm::enumerate(r.getIteratorTypesArray()))
      if (it == utils::IteratorType::reduction)
        red = d;
    OpOperand *in = r.getDpsInputOperand(0);
    auto type = cast<RankedTensorType>(in->get().getType());
    for (auto [q, e] : llvm::enumerate(r.getMatchingIndexingMap(in).getResults()))
      if (cast<AffineDimExpr>(e).getPosition() == red && !type.isDynamicDim(q))
        return type.getDimSize(q);
    return std::nullopt;
  }

  /// Whether every result of `m` is a distinct dim or the constant 0 (a
  /// broadcast of a size-1 dim).
  static bool dimsOrZeros(AffineMap m) {
    llvm::SmallDenseSet<unsigned> seen;
    for (AffineExpr e : m.getResults()) {
      if (auto c = dyn_cast<AffineConstantExpr>(e)) {
        if (c.getValue() != 0)
          return false;
      } else if (auto d = dyn_cast<AffineDimExpr>(e)) {
        if (!seen.insert(d.getPosition()).second)
          return false;
      } else {
        return false;
      }
    }
    return true;
  }

  static OpOperand *candidate(linalg::GenericOp g) {
    for (OpOperand *o : g.getDpsInputOperands()) {
      auto r = o->get().getDefiningOp<linalg::GenericOp>();
      if (!r || !r->hasOneUse() || r.getNumDpsInputs() != 1 || r.getNumDpsInits() != 1 ||
          r.getNumReductionLoops() != 1 || r.hasPureBufferSemantics())
        continue;
      if (!dimsOrZeros(r.getMatchingIndexingMap(r.getDpsInitOperand(0))) ||
          !r.getMatchingIndexingMap(r.getDpsInputOperand(0)).isProjectedPermutation())
        continue;
      // Read once per element; or through a broadcast (a norm's mean at
      // every column), each read folding again, when the fold is short.
      AffineMap gm = g.getMatchingIndexingMap(o);
      std::optional<int64_t> n = reducedExtent(r);
      if (!gm.isPermutation() && !(dimsOrZeros(gm) && n && *n <= kMaxRefolded))
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
          for (auto [i, e] : llvm::enumerate(om.getResults())) {
            if (!isa<AffineDimExpr>(e))
              continue; // a size-1 dim of the result (a keepdims mean)
            Value v;
            if (auto d = dyn_cast<AffineDimExpr>(gm.getResult(i)))
              v = linalg::IndexOp::create(b, l, d.getPosition());
            else // a broadcast size-1 dim
              v = arith::ConstantIndexOp::create(b, l, 0);
            at[cast<AffineDimExpr>(e).getPosition()] = v;
          }
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
