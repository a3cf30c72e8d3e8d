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

/// Whether fusing the producer of `use` into its owner keeps every element
/// of the fused op's results written once. A producer whose body reads its
/// init (a chunked sum's tail added into its combine, `out + in`) keeps that
/// result in the fused op, its init indexed at the consumer's loops through
/// the consumer's map of `use`: a broadcast one (an embedding gather over
/// the hidden dim of a row's position) makes the fused op, its loops all
/// parallel, read and write one element at many iterations, each reading
/// what the last wrote (the CPU's loops added the tail 64 times).
bool initsStayInjective(OpOperand *use) {
  auto producer = use->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(use->getOwner());
  if (!producer || !consumer)
    return false;
  AffineMap inverse = inversePermutation(
      producer.getIndexingMapMatchingResult(cast<OpResult>(use->get())));
  if (!inverse)
    return false;
  AffineMap consumerMap = consumer.getMatchingIndexingMap(use);
  for (int i : linalg::getPreservedProducerResults(producer, consumer, use)) {
    OpOperand *init = producer.getDpsInitOperand(i);
    if (!producer.payloadUsesValueFromOperand(init))
      continue;
    AffineMap fused = producer.getMatchingIndexingMap(init).compose(inverse).compose(consumerMap);
    if (!fused.isPermutation())
      return false;
  }
  return true;
}

/// Whether the producer of `use` fuses into its owner: an elementwise op
/// used once, into an elementwise op, or, when cheap, into a reduction of
/// one input (a contraction, two inputs, reads stored operands in its tiled
/// kernels), unless an init it reads would be read and written at several
/// of the fused op's iterations.
bool fusable(OpOperand *use) {
  Operation *producer = use->get().getDefiningOp();
  Operation *consumer = use->getOwner();
  return elementwise(producer) && producer->hasOneUse() &&
         (elementwise(consumer) || (plainReduction(consumer) && cheap(producer))) &&
         initsStayInjective(use);
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

/// Whether every result of `m` is a distinct dim or the constant 0 (a
/// broadcast of a size-1 dim).
bool dimsOrZeros(AffineMap m) {
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

/// The reduction behind `v`, when a generic of one input and one init,
/// one reduction loop, on tensors, writing each of its elements once and
/// reading its input through a projected permutation, with a body of
/// plain ops.
linalg::GenericOp reductionOf(Value v) {
  auto r = v.getDefiningOp<linalg::GenericOp>();
  if (!r || r.getNumDpsInputs() != 1 || r.getNumDpsInits() != 1 ||
      r.getNumReductionLoops() != 1 || r.hasPureBufferSemantics() ||
      !dimsOrZeros(r.getMatchingIndexingMap(r.getDpsInitOperand(0))) ||
      !r.getMatchingIndexingMap(r.getDpsInputOperand(0)).isProjectedPermutation())
    return nullptr;
  if (llvm::any_of(r.getBody()->getOperations(),
                   [](Operation &op) { return op.getNumRegions() || isa<linalg::IndexOp>(op); }))
    return nullptr;
  return r;
}

/// Whether `t` transposes a reduction's result (directly or through a
/// tensor.reshape) that it alone reads: a projection's chunk combine,
/// which InlineReduction folds into the transpose once it is a generic.
bool readsCombine(linalg::TransposeOp t) {
  Value v = t.getInput();
  if (auto reshape = v.getDefiningOp<tensor::ReshapeOp>()) {
    if (!reshape.getShape().getDefiningOp<tensor::FromElementsOp>() ||
        llvm::any_of(reshape->getUsers(), [&](Operation *u) {
          return u != t.getOperation() && !isa<tensor::DimOp>(u);
        }))
      return false;
    v = reshape.getSource();
  }
  return v.hasOneUse() && reductionOf(v);
}

/// A transpose used once, as an input of an elementwise generic, becomes a
/// generic itself, so that the elementwise fusion reads its input through
/// the permuted map instead of copying it; so does one of a chunk combine
/// (readsCombine), which then folds into it.
struct GeneralizeFusableTranspose : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::TransposeOp op, PatternRewriter &rw) const override {
    if (op.hasPureBufferSemantics())
      return failure();
    auto fuses = [&] {
      if (!op->hasOneUse())
        return false;
      OpOperand &use = *op->getResult(0).getUses().begin();
      auto g = dyn_cast<linalg::GenericOp>(use.getOwner());
      return elementwise(g) && g.isDpsInput(&use);
    };
    if (!fuses() && !readsCombine(op))
      return failure();
    return linalg::generalizeNamedOp(rw, op);
  }
};

/// Reductions read through a broadcast are folded again at every read:
/// only those of at most this many elements (a norm's mean over 2048 in
/// chunks of 256 combines 8 partials).
constexpr int64_t kMaxRefolded = 32;

/// A reduction of one input (a contraction's chunk combine, folding its
/// partials in chunk order) whose result only an elementwise generic reads
/// is computed in that consumer's body: an scf.for over the reduced dim,
/// from the reduction's init (its fill value, or its element), folding the
/// input's elements with the reduction's own body in the same order. One
/// kernel fewer, and the combined tensor is never stored. The consumer
/// reads it as an input once per element (a permutation map: the residual
/// add after a projection, the MLP's activation product), or through a
/// broadcast (a norm's combine, read at every column), and may also gather
/// elements of it with tensor.extract in its body (RoPE's rotate-half of a
/// q or k projection); a broadcast or a gather folds again at each read, so
/// only when the fold takes at most kMaxRefolded elements. The result may
/// reach the consumer through a tensor.reshape (the exporters' [1, T, H·D]
/// -> [1, T, H, D]), whose element at an index is the result's element at
/// the same row-major position; its sizes (tensor.dim) are then read from
/// the reshape's shape operand. A transpose of such a result (v's, into
/// the KV cache's layout) becomes a generic first, so it folds too.
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


  /// A reduction the consumer folds in its body, with how it reads it.
  struct Candidate {
    OpOperand *use = nullptr;         // the consumer's input operand
    linalg::GenericOp r;              // the reduction
    tensor::ReshapeOp reshape;        // between them, or null
    tensor::FromElementsOp shape;     // the reshape's sizes
    SmallVector<tensor::ExtractOp> gathers; // in the consumer's body
    SmallVector<tensor::DimOp> dims;  // of the reshape, anywhere
  };


  static std::optional<Candidate> candidate(linalg::GenericOp g) {
    for (OpOperand *o : g.getDpsInputOperands()) {
      Candidate c;
      c.use = o;
      Value v = o->get();
      c.reshape = v.getDefiningOp<tensor::ReshapeOp>();
      if (c.reshape) {
        c.shape = c.reshape.getShape().getDefiningOp<tensor::FromElementsOp>();
        if (!c.shape || !c.reshape.getSource().hasOneUse())
          continue;
      }
      c.r = reductionOf(c.reshape ? c.reshape.getSource() : v);
      if (!c.r)
        continue;
      // Every use of v: this operand, gathers in g's body, sizes of a reshape.
      bool plain = true;
      unsigned reads = 0;
      for (OpOperand &u : v.getUses()) {
        Operation *user = u.getOwner();
        if (user == g.getOperation())
          reads += g.isDpsInput(&u) ? 1 : 2; // read as an init: not plain
        else if (auto x = dyn_cast<tensor::ExtractOp>(user); x && x->getParentOp() == g)
          c.gathers.push_back(x);
        else if (auto d = dyn_cast<tensor::DimOp>(user); d && c.reshape && d.getConstantIndex())
          c.dims.push_back(d);
        else
          plain = false;
      }
      if (!plain || reads != 1)
        continue;
      // Read once per element; or through a broadcast (a norm's mean at
      // every column) or a gather, each read folding again, when the fold
      // is short.
      AffineMap gm = g.getMatchingIndexingMap(o);
      std::optional<int64_t> n = reducedExtent(c.r);
      bool shortFold = n && *n <= kMaxRefolded;
      if (!(gm.isPermutation() || (dimsOrZeros(gm) && shortFold)) ||
          (!c.gathers.empty() && !shortFold))
        continue;
      return c;
    }
    return std::nullopt;
  }

  LogicalResult matchAndRewrite(linalg::GenericOp g, PatternRewriter &rw) const override {
    if (!elementwise(g) || g.hasPureBufferSemantics())
      return failure();
    std::optional<Candidate> found = candidate(g);
    if (!found)
      return failure();
    Candidate &c = *found;
    linalg::GenericOp r = c.r;
    OpOperand *use = c.use;
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
    // Through a reshape: the sizes of what g reads (the shape's elements)
    // and of the reduction's result, outside the body.
    SmallVector<Value> readSizes, resultSizes;
    if (c.reshape) {
      readSizes.assign(c.shape.getElements().begin(), c.shape.getElements().end());
      auto rt = cast<RankedTensorType>(r->getResult(0).getType());
      for (int64_t d = 0; d < rt.getRank(); ++d)
        resultSizes.push_back(rt.isDynamicDim(d)
                                  ? tensor::DimOp::create(rw, loc, init, d).getResult()
                                  : arith::ConstantIndexOp::create(rw, loc, rt.getDimSize(d))
                                        .getResult());
    }
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
    bool initRead = !initValue;
    if (initRead) {
      // The element's own init, read at the reduction's result index.
      if (c.reshape || !c.gathers.empty())
        return failure();
      inputs.push_back(init);
      maps.push_back(gm);
    }
    for (OpOperand &o : g.getDpsInitsMutable())
      maps.push_back(g.getMatchingIndexingMap(&o));
    unsigned useArg = use->getOperandNumber();
    auto fused = linalg::GenericOp::create(
        rw, loc, g.getResultTypes(), inputs, g.getDpsInits(), maps, g.getIteratorTypesArray(),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value zero = arith::ConstantIndexOp::create(b, l, 0),
                one = arith::ConstantIndexOp::create(b, l, 1);
          // The fold of the element at `at` (an index of what g reads).
          auto foldAt = [&](SmallVector<Value> at) -> Value {
            if (c.reshape) { // the same row-major position in the result
              Value pos = zero;
              for (auto [i, size] : llvm::zip_equal(at, readSizes))
                pos = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, pos, size), i);
              SmallVector<Value> res(resultSizes.size());
              for (int64_t d = resultSizes.size() - 1; d >= 0; --d) {
                res[d] = arith::RemUIOp::create(b, l, pos, resultSizes[d]);
                pos = arith::DivUIOp::create(b, l, pos, resultSizes[d]);
              }
              at = res;
            }
            // The reduction's loop indices: its parallel dims from the
            // element's index, the reduced one the loop's.
            SmallVector<Value> loops(r.getNumLoops());
            for (auto [i, e] : llvm::enumerate(om.getResults()))
              if (auto d = dyn_cast<AffineDimExpr>(e))
                loops[d.getPosition()] = at[i];
            Value acc0 = initValue ? initValue : args[inputs.size() - 1];
            auto loop = scf::ForOp::create(
                b, l, zero, extent, one, ValueRange{acc0},
                [&](OpBuilder &fb, Location fl, Value j, ValueRange acc) {
                  loops[red] = j;
                  SmallVector<Value> coords;
                  for (AffineExpr e : pm.getResults())
                    coords.push_back(loops[cast<AffineDimExpr>(e).getPosition()]);
                  IRMapping m;
                  m.map(r.getBody()->getArgument(0),
                        tensor::ExtractOp::create(fb, fl, partials, coords).getResult());
                  m.map(r.getBody()->getArgument(1), acc[0]);
                  for (Operation &op : r.getBody()->without_terminator())
                    fb.clone(op, m);
                  scf::YieldOp::create(
                      fb, fl, m.lookup(r.getBody()->getTerminator()->getOperand(0)));
                });
            return loop.getResult(0);
          };
          // The element g reads as its input: at g's index through its map.
          SmallVector<Value> at;
          for (AffineExpr e : gm.getResults())
            at.push_back(isa<AffineDimExpr>(e)
                             ? linalg::IndexOp::create(b, l, cast<AffineDimExpr>(e).getPosition())
                                   .getResult()
                             : zero); // a broadcast size-1 dim
          Value direct = foldAt(at);
          IRMapping m;
          unsigned next = 0;
          for (unsigned a = 0; a < g.getNumDpsInputs(); ++a)
            m.map(g.getBody()->getArgument(a), a == useArg ? direct : args[next++]);
          for (unsigned o = 0; o < g.getNumDpsInits(); ++o)
            m.map(g.getBody()->getArgument(g.getNumDpsInputs() + o), args[inputs.size() + o]);
          for (Operation &op : g.getBody()->without_terminator()) {
            auto x = dyn_cast<tensor::ExtractOp>(op);
            if (x && llvm::is_contained(c.gathers, x)) {
              SmallVector<Value> idx;
              for (Value v : x.getIndices())
                idx.push_back(m.lookupOrDefault(v));
              m.map(x.getResult(), foldAt(idx));
              continue;
            }
            b.clone(op, m);
          }
          SmallVector<Value> yields;
          for (Value v : g.getBody()->getTerminator()->getOperands())
            yields.push_back(m.lookupOrDefault(v));
          linalg::YieldOp::create(b, l, yields);
        });
    fused->setDiscardableAttrs(g->getDiscardableAttrDictionary());
    for (tensor::DimOp d : c.dims)
      rw.replaceOp(d, c.shape.getElements()[*d.getConstantIndex()]);
    rw.replaceOp(g, fused.getResults());
    if (c.reshape)
      rw.eraseOp(c.reshape);
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
