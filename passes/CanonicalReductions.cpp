//===- CanonicalReductions.cpp - The lockstep-canonical-reductions pass ---===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Chunking.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace lockstep {
#define GEN_PASS_DEF_CANONICALREDUCTIONS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;

namespace {

struct CanonicalReductionsPass
    : public lockstep::impl::CanonicalReductionsBase<CanonicalReductionsPass> {
  using Base::Base;

  /// The product of the dynamic sizes of the parallel dims of `op` (its
  /// rows), or null when all are static.
  Value rows(RewriterBase &rw, Operation *op) {
    Location loc = op->getLoc();
    Value prod;
    auto mul = [&](Value s) {
      prod = prod ? arith::MulIOp::create(rw, loc, prod, s).getResult() : s;
    };
    if (auto sm = dyn_cast<linalg::SoftmaxOp>(op)) {
      auto t = cast<RankedTensorType>(sm.getInput().getType());
      for (unsigned d = 0; d < t.getRank(); ++d)
        if (d != sm.getDimension() && t.isDynamicDim(d))
          mul(tensor::DimOp::create(rw, loc, sm.getInput(), d));
      return prod;
    }
    auto lop = cast<linalg::LinalgOp>(op);
    SmallVector<int64_t> statics = lop.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iters = lop.getIteratorTypesArray();
    for (unsigned d = 0; d < iters.size(); ++d) {
      if (iters[d] != utils::IteratorType::parallel || !ShapedType::isDynamic(statics[d]))
        continue;
      for (OpOperand &o : op->getOpOperands()) {
        AffineMap m = lop.getMatchingIndexingMap(&o);
        std::optional<unsigned> p =
            m.getResultPosition(getAffineDimExpr(d, op->getContext()));
        if (!p)
          continue;
        mul(getValueOrCreateConstantIndexOp(
            rw, loc, tensor::getMixedSize(rw, loc, o.get(), *p)));
        break;
      }
    }
    return prod;
  }

  /// The product of the dynamic dims of an attention's query but the last
  /// (its rows: batch, heads, query tokens), or null when all are static.
  Value queryRows(RewriterBase &rw, Value q, Location loc) {
    auto t = cast<RankedTensorType>(q.getType());
    Value prod;
    for (unsigned d = 0; d + 1 < t.getRank(); ++d)
      if (t.isDynamicDim(d)) {
        Value s = tensor::DimOp::create(rw, loc, q, d);
        prod = prod ? arith::MulIOp::create(rw, loc, prod, s).getResult() : s;
      }
    return prod;
  }

  /// Whether the policy makes `op`'s split depend on its rows (the negative
  /// controls): every reduction (adaptive), attention's key chunks, which
  /// is how a kernel picks split-KV (adaptive-kv), or softmax chunks
  /// (adaptive-softmax).
  bool adaptiveFor(Operation *op) const {
    if (policy == "adaptive" || policy == "adaptive-threads")
      return !isa<ls::AttentionOp, ls::PagedAttentionOp>(op);
    if (policy == "adaptive-kv")
      return isa<ls::AttentionOp, ls::PagedAttentionOp>(op);
    if (policy == "adaptive-softmax")
      return isa<linalg::SoftmaxOp>(op);
    return false;
  }

  /// `few rows ? build(adaptive-chunk) : build(0)` chosen at run time, in
  /// place of `op`: the shape of the negative controls.
  LogicalResult splitByRows(RewriterBase &rw, Operation *op, Value few,
                            function_ref<FailureOr<Value>(Operation *, int64_t)> build) {
    auto ifOp = scf::IfOp::create(rw, op->getLoc(), op->getResultTypes(), few,
                                  /*withElseRegion=*/true);
    for (int branch = 0; branch < 2; ++branch) {
      Block *blk = branch == 0 ? ifOp.thenBlock() : ifOp.elseBlock();
      rw.setInsertionPointToStart(blk);
      Operation *copy = rw.clone(*op);
      rw.setInsertionPoint(copy);
      FailureOr<Value> v = build(copy, branch == 0 ? adaptiveChunk : 0);
      if (failed(v))
        return op->emitError("cannot chunk this reduction");
      rw.setInsertionPointToEnd(blk);
      scf::YieldOp::create(rw, op->getLoc(), *v);
      if (*v != copy->getResult(0))
        rw.eraseOp(copy);
    }
    rw.replaceOp(op, ifOp.getResults());
    return success();
  }

  /// Builds the chunked form of `op` with width `width` before it (width 0:
  /// the op kept whole) and returns its value.
  FailureOr<Value> build(RewriterBase &rw, Operation *op, int64_t width) {
    if (auto sm = dyn_cast<linalg::SoftmaxOp>(op))
      return chunkSoftmax(rw, sm, width);
    auto g = cast<linalg::GenericOp>(op);
    if (width == 0) // folded whole, as the op is
      return op->getResult(0);
    return chunkGeneric(rw, g, width);
  }

  LogicalResult rewrite(RewriterBase &rw, Operation *op, ChunkWidths widths) {
    rw.setInsertionPoint(op);
    std::optional<int64_t> length;
    if (auto sm = dyn_cast<linalg::SoftmaxOp>(op)) {
      int64_t s = cast<ShapedType>(sm.getInput().getType()).getDimSize(sm.getDimension());
      if (!ShapedType::isDynamic(s))
        length = s;
    } else {
      SmallVector<unsigned> red;
      auto lop = cast<linalg::LinalgOp>(op);
      lop.getReductionDims(red);
      int64_t s = lop.getStaticLoopRanges()[red[0]];
      if (!ShapedType::isDynamic(s))
        length = s;
    }
    Value few;
    if (policy == "adaptive-threads") {
      // Split when the code runs on two threads or more: the count the
      // runtime writes into the module's global before a call.
      Location loc = op->getLoc();
      auto type = MemRefType::get({}, rw.getI64Type());
      Value g = memref::GetGlobalOp::create(rw, loc, type, "lockstep_thread_count");
      Value n = memref::LoadOp::create(rw, loc, g, ValueRange());
      few = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::sge, n,
                                  arith::ConstantIntOp::create(rw, loc, 2, 64));
    } else if (adaptiveFor(op))
      if (Value rowCount = rows(rw, op))
        few = arith::CmpIOp::create(
            rw, op->getLoc(), arith::CmpIPredicate::ult, rowCount,
            arith::ConstantIndexOp::create(rw, op->getLoc(), adaptiveRows));
    if (!few) {
      FailureOr<Value> v = build(rw, op, widths.choose(length));
      if (failed(v))
        return op->emitError("cannot put this reduction in the canonical chunked form");
      if (*v != op->getResult(0))
        rw.replaceOp(op, *v);
      return success();
    }
    // The negative control: split with a small chunk when there are few
    // rows, fold whole otherwise, chosen at run time.
    return splitByRows(rw, op, few, [&](Operation *copy, int64_t width) {
      return build(rw, copy, width);
    });
  }

  /// Expands an attention op (the contract's chunks of `width` keys), or,
  /// under adaptive-kv, chunks of adaptive-chunk keys when its query has
  /// few rows and of `width` otherwise.
  template <typename Op>
  LogicalResult expandAttention(RewriterBase &rw, Op op, int64_t width,
                                FailureOr<Value> (*expand)(RewriterBase &, Op, int64_t)) {
    rw.setInsertionPoint(op);
    Value rowCount = adaptiveFor(op) ? queryRows(rw, op.getQuery(), op.getLoc()) : Value();
    if (!rowCount) {
      FailureOr<Value> v = expand(rw, op, width);
      if (failed(v))
        return op.emitError("cannot put this attention in the canonical chunked form");
      rw.replaceOp(op, *v);
      return success();
    }
    Value few = arith::CmpIOp::create(
        rw, op.getLoc(), arith::CmpIPredicate::ult, rowCount,
        arith::ConstantIndexOp::create(rw, op.getLoc(), adaptiveRows));
    return splitByRows(rw, op, few, [&](Operation *copy, int64_t w) {
      return expand(rw, cast<Op>(copy), w ? w : width);
    });
  }

  void runOnOperation() override {
    if (policy != "canonical" && policy != "adaptive" && policy != "adaptive-kv" &&
        policy != "adaptive-softmax" && policy != "adaptive-threads" &&
        policy != "plant-unmasked-padding" && policy != "plant-merge-no-skip") {
      getOperation().emitError("unknown reduction policy '")
          << policy
          << "' (expected canonical, adaptive, adaptive-kv, adaptive-softmax, "
             "adaptive-threads, plant-unmasked-padding or plant-merge-no-skip)";
      return signalPassFailure();
    }
    if (policy == "adaptive-threads" &&
        !SymbolTable::lookupNearestSymbolFrom(getOperation(),
                                              StringAttr::get(&getContext(),
                                                              "lockstep_thread_count"))) {
      getOperation().emitError("policy=adaptive-threads needs the module to declare "
                               "memref.global @lockstep_thread_count");
      return signalPassFailure();
    }
    ChunkWidths widths{maxChunk, minChunk, dynamicChunk};
    IRRewriter rw(&getContext());
    // Attention first: its expansion is marked, except for the score
    // contraction, which the walk below chunks like any other.
    SmallVector<ls::AttentionOp> attention;
    getOperation().walk([&](ls::AttentionOp op) { attention.push_back(op); });
    for (ls::AttentionOp op : attention) {
      int64_t sk = op.getKey().getType().getDimSize(2);
      int64_t width =
          widths.choose(ShapedType::isDynamic(sk) ? std::nullopt : std::optional(sk));
      if (failed(expandAttention<ls::AttentionOp>(rw, op, width, chunkAttention)))
        return signalPassFailure();
    }
    SmallVector<ls::PagedAttentionOp> paged;
    getOperation().walk([&](ls::PagedAttentionOp op) { paged.push_back(op); });
    for (ls::PagedAttentionOp op : paged) {
      if (StringRef(policy).starts_with("plant-"))
        op->setAttr(kPlantAttr, rw.getStringAttr(StringRef(policy).drop_front(6)));
      if (failed(expandAttention<ls::PagedAttentionOp>(rw, op, widths.choose(std::nullopt),
                                                       chunkPagedAttention)))
        return signalPassFailure();
    }
    SmallVector<Operation *> work;
    getOperation().walk([&](Operation *op) {
      if (op->hasAttr(kChunkRoleAttr))
        return; // already in the canonical form
      if (isa<linalg::SoftmaxOp>(op)) {
        work.push_back(op);
        return;
      }
      auto g = dyn_cast<linalg::GenericOp>(op);
      if (!g || g.getNumReductionLoops() == 0)
        return;
      std::optional<Combiner> c = classifyCombiner(g);
      if (c && *c == Combiner::Exact)
        return;
      work.push_back(op);
    });
    for (Operation *op : work) {
      auto g = dyn_cast<linalg::GenericOp>(op);
      if (g && (g.getNumReductionLoops() != 1 || !classifyCombiner(g))) {
        op->emitError("reduction not supported by the canonical form: ")
            << (g.getNumReductionLoops() != 1 ? "it reduces over several dims"
                                              : "its fold is not an add, fma or mul");
        return signalPassFailure();
      }
      if (failed(rewrite(rw, op, widths)))
        return signalPassFailure();
    }
  }
};

} // namespace
