//===- VerifyInvariance.cpp - The lockstep-verify-invariance pass ---------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Chunking.h"
#include "lockstep/Reductions/PaddedAxes.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace lockstep {
#define GEN_PASS_DEF_VERIFYINVARIANCE
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;

namespace {

/// What a run-time value is computed from, as far as a split may depend on
/// it: a size, tensor values, a call (the thread count, say), or nothing
/// (constants and the reduction's own chunk arithmetic).
struct Source {
  enum Kind { None, Size, Values, Call } kind = None;
  Operation *at = nullptr;
};

/// What the scalar `v` is computed from: the first call, value read or size
/// read met walking its operands back through scalar ops only (a tensor's
/// data reaches a scalar only through tensor.extract or memref.load, and
/// its size through tensor.dim or memref.dim), by that precedence.
Source sourceOf(Value v) {
  SmallVector<Value> work{v};
  DenseSet<Value> seen;
  Source found;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!x || !seen.insert(x).second || isa<ShapedType>(x.getType()))
      continue;
    Operation *d = x.getDefiningOp();
    if (!d) {
      // A scalar argument of the function is a value given at run time.
      if (isa<func::FuncOp>(cast<BlockArgument>(x).getOwner()->getParentOp()))
        found = {Source::Values, cast<BlockArgument>(x).getOwner()->getParentOp()};
      continue;
    }
    StringRef name = d->getName().getStringRef();
    if (isa<CallOpInterface>(d) || name == "llvm.call")
      return {Source::Call, d};
    if (isa<tensor::ExtractOp>(d) || name == "memref.load" || name == "affine.load") {
      found = {Source::Values, d};
      continue;
    }
    if (isa<tensor::DimOp>(d) || name == "memref.dim") {
      if (!found.at)
        found = {Source::Size, d};
      continue;
    }
    work.append(d->getOperands().begin(), d->getOperands().end());
  }
  return found;
}

/// Reports a split of `op` chosen at run time through `steer`, located at
/// `where` (the condition's or the bound's owner), or succeeds when `steer`
/// depends on nothing the batch can change.
LogicalResult checkSteer(Operation *op, Value steer, Operation *where, StringRef what) {
  Source src = sourceOf(steer);
  if (src.kind == Source::None)
    return success();
  static const char *kText[] = {"", "a tensor size", "tensor values (such as seq_starts "
                                "or block_tables)", "a call (such as the thread count)"};
  static const char *kNote[] = {"", "which reads a size here", "which reads a value here",
                                "which calls here"};
  auto diag = op->emitError("the split of this reduction is chosen at run time from ")
              << kText[src.kind] << ", not from its own length";
  diag.attachNote(where->getLoc()) << "by this " << what;
  diag.attachNote(src.at->getLoc()) << kNote[src.kind];
  return failure();
}

/// Fails when `op` sits under control flow that sizes, values or calls can
/// steer (any loop but a linalg op's own is refused outright).
LogicalResult checkControl(Operation *op) {
  for (Operation *p = op->getParentOp(); p && !isa<func::FuncOp>(p); p = p->getParentOp()) {
    if (auto i = dyn_cast<scf::IfOp>(p)) {
      if (failed(checkSteer(op, i.getCondition(), p, "condition")))
        return failure();
      continue;
    }
    if (!isa<linalg::LinalgOp>(p))
      return op->emitError("the reduction is under ")
             << p->getName() << ", which may run it a batch-dependent way";
  }
  return success();
}

/// Fails when a dynamic offset, size or shape that slices or chunks an
/// operand of `op` (seen through elementwise ops, slices and reshapes) is
/// computed from tensor values or a call: the operand's extent, and so the
/// split of the reduction, would then follow the batch's contents.
LogicalResult checkOperandBounds(linalg::LinalgOp op) {
  SmallVector<Value> work = llvm::to_vector(op.getDpsInputs());
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *d = v ? v.getDefiningOp() : nullptr;
    if (!d || !seen.insert(d).second)
      continue;
    SmallVector<Value> bounds;
    if (auto sl = dyn_cast<tensor::ExtractSliceOp>(d)) {
      bounds.append(sl.getOffsets().begin(), sl.getOffsets().end());
      bounds.append(sl.getSizes().begin(), sl.getSizes().end());
      work.push_back(sl.getSource());
    } else if (auto ex = dyn_cast<tensor::ExpandShapeOp>(d)) {
      bounds.append(ex.getOutputShape().begin(), ex.getOutputShape().end());
      work.push_back(ex.getSrc());
    } else if (auto co = dyn_cast<tensor::CollapseShapeOp>(d)) {
      work.push_back(co.getSrc());
    } else if (auto g = dyn_cast<linalg::GenericOp>(d); g && g.getNumReductionLoops() == 0) {
      llvm::append_range(work, g.getDpsInputs());
    }
    for (Value b : bounds) {
      Source src = sourceOf(b);
      if (src.kind != Source::Values && src.kind != Source::Call)
        continue;
      auto diag = op->emitError("the extent of this reduction's operand is computed at run "
                                "time from ")
                  << (src.kind == Source::Call ? "a call (such as the thread count)"
                                               : "tensor values (such as seq_starts or "
                                                 "block_tables)")
                  << ", so its split can follow the batch";
      diag.attachNote(d->getLoc()) << "through this slice or reshape";
      diag.attachNote(src.at->getLoc())
          << (src.kind == Source::Call ? "which calls here" : "which reads a value here");
      return failure();
    }
  }
  return success();
}

/// The op of type `OpT` that `v` is, or that the elementwise (all-parallel)
/// generics computing `v` read at the same rank: the expand_shape that
/// chunks a partial's operand (attention's exp(x - m_j) is computed from the
/// chunked scores), or the extract_slice that cuts a tail's.
template <typename OpT> OpT throughElementwise(Value v, int depth = 0) {
  if (auto op = v.getDefiningOp<OpT>())
    return op;
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || depth > 2 || g.getNumReductionLoops() != 0)
    return {};
  auto rank = cast<ShapedType>(v.getType()).getRank();
  for (Value in : g.getDpsInputs())
    if (cast<ShapedType>(in.getType()).getRank() == rank)
      if (auto op = throughElementwise<OpT>(in, depth + 1))
        return op;
  return {};
}

/// A partial's chunk count must be its reduced dim's length over the width:
/// `divui(tensor.dim(X, a), C)` where X is one of its chunked operands
/// (before slicing; seen through elementwise ops) and a the axis of X that
/// is chunked.
LogicalResult checkChunkCount(linalg::GenericOp op, int64_t width) {
  struct Chunked {
    tensor::ExpandShapeOp expand;
    Value source;
    int64_t axis;
    unsigned group;
  };
  SmallVector<Chunked> chunked;
  for (Value in : op.getDpsInputs()) {
    auto ex = throughElementwise<tensor::ExpandShapeOp>(in);
    if (!ex)
      continue;
    Value src = ex.getSrc();
    if (auto sl = src.getDefiningOp<tensor::ExtractSliceOp>())
      src = sl.getSource();
    for (auto [axis, group] : llvm::enumerate(ex.getReassociationIndices()))
      if (group.size() == 2)
        chunked.push_back({ex, src, (int64_t)axis, (unsigned)group[0]});
  }
  for (Chunked &c : chunked) {
    SmallVector<OpFoldResult> shape = c.expand.getMixedOutputShape();
    if (getConstantIntValue(shape[c.group + 1]) != width)
      return op.emitError("the chunked operand's inner extent is not the chunk width");
    if (getConstantIntValue(shape[c.group]))
      continue;
    auto div = dyn_cast_or_null<arith::DivUIOp>(cast<Value>(shape[c.group]).getDefiningOp());
    auto dim = div ? div.getLhs().getDefiningOp<tensor::DimOp>() : nullptr;
    bool own = dim && llvm::any_of(chunked, [&](const Chunked &o) {
      return o.source == dim.getSource() &&
             getConstantIntValue(dim.getIndex()) == o.axis;
    });
    if (!div || getConstantIntValue(div.getRhs()) != width || !own)
      return op.emitError("the chunk count is not computed from the reduced "
                          "dim's own length");
  }
  return success();
}

/// The position of the result of `map` that is exactly dim `d`, if one.
std::optional<unsigned> positionOf(AffineMap map, unsigned d) {
  for (unsigned i = 0; i < map.getNumResults(); ++i)
    if (auto e = dyn_cast<AffineDimExpr>(map.getResult(i)); e && e.getPosition() == d)
      return i;
  return std::nullopt;
}

/// `v` is `divui(D, w) * w` (the end of the whole chunks of D); sets D.
bool isWholeChunksEnd(Value v, int64_t w, Value &length) {
  auto mul = v.getDefiningOp<arith::MulIOp>();
  if (!mul)
    return false;
  for (auto [a, b] : {std::pair{mul.getLhs(), mul.getRhs()}, {mul.getRhs(), mul.getLhs()}}) {
    auto div = a.getDefiningOp<arith::DivUIOp>();
    if (div && getConstantIntValue(b) == w && getConstantIntValue(div.getRhs()) == w) {
      length = div.getLhs();
      return true;
    }
  }
  return false;
}

/// A tail must cover exactly what its partials leave: every operand it
/// slices along the reduced dim is sliced from `divui(D, w) * w` for
/// `D - divui(D, w) * w` elements, with D the reduced axis's own length
/// (tensor.dim of one of its sliced operands along that axis).
LogicalResult checkTail(linalg::LinalgOp op, int64_t w, unsigned red) {
  struct Cut {
    tensor::ExtractSliceOp slice;
    unsigned axis;
  };
  SmallVector<Cut> cuts;
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto sl = throughElementwise<tensor::ExtractSliceOp>(in->get());
    std::optional<unsigned> axis = positionOf(op.getMatchingIndexingMap(in), red);
    if (sl && axis && sl.getType().getRank() == sl.getSourceType().getRank())
      cuts.push_back({sl, *axis});
  }
  if (cuts.empty())
    return op->emitError("a tail of dynamic length that slices none of its operands: "
                         "its bounds are not the end its partials leave");
  for (Cut &c : cuts) {
    OpFoldResult size = c.slice.getMixedSizes()[c.axis];
    OpFoldResult offset = c.slice.getMixedOffsets()[c.axis];
    Value start, length;
    auto sub = isa<Value>(size) ? cast<Value>(size).getDefiningOp<arith::SubIOp>() : nullptr;
    bool ok = sub && isWholeChunksEnd(sub.getRhs(), w, length) && sub.getLhs() == length &&
              isa<Value>(offset) && cast<Value>(offset) == sub.getRhs();
    auto dim = ok ? length.getDefiningOp<tensor::DimOp>() : nullptr;
    bool own = dim && llvm::any_of(cuts, [&](Cut &o) {
      return o.slice.getSource() == dim.getSource() &&
             getConstantIntValue(dim.getIndex()) == int64_t(o.axis);
    });
    if (!own) {
      auto diag = op->emitError("a tail whose bounds are not the remainder of the reduced "
                                "dim's own length after its whole chunks of ")
                  << w;
      diag.attachNote(c.slice.getLoc()) << "sliced here";
      return failure();
    }
  }
  return success();
}

/// Whether input `in` of the combine `op` is a per-chunk result of the
/// combine `producer`: a value that `producer` writes once at each step of
/// its fold (its map has the reduced dim, and it never reads its init), such
/// as attention's merge weights of each chunk, which `op` reads at the same
/// step of its own fold (its reduced dim in the same place).
bool perChunk(linalg::LinalgOp op, OpOperand *in, linalg::LinalgOp producer) {
  SmallVector<unsigned> red, pred;
  op.getReductionDims(red);
  producer.getReductionDims(pred);
  OpOperand *init = producer.getDpsInitOperand(cast<OpResult>(in->get()).getResultNumber());
  if (pred.size() != 1 || producer.payloadUsesValueFromOperand(init))
    return false;
  std::optional<unsigned> at = positionOf(producer.getMatchingIndexingMap(init), pred[0]);
  return at && at == positionOf(op.getMatchingIndexingMap(in), red[0]);
}

/// A combine folds the chunks' results directly, in chunk order: one
/// reduction dim, which every input has as one of its dims, and every input
/// the result of a chunk reduction (a partial of the same width, an exact
/// reduction over each chunk, as attention's chunk maxima, or a per-chunk
/// result of a combine of the same width, read at its own chunk), not a
/// combine's fold, a slice or a reshape, which would fold the chunks in
/// another order (a tree, say) or leave some out.
LogicalResult checkCombine(linalg::LinalgOp op, int64_t w) {
  SmallVector<unsigned> red;
  op.getReductionDims(red);
  if (red.size() != 1)
    return op->emitError("a combine reduces over several dims");
  bool partial = false;
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto producer = in->get().getDefiningOp<linalg::LinalgOp>();
    auto role = producer ? producer->getAttrOfType<StringAttr>(kChunkRoleAttr) : nullptr;
    bool chunkResult = role && role.getValue() == "combine" && perChunk(op, in, producer);
    if (!producer || producer.getNumReductionLoops() == 0 ||
        (role && role.getValue() != "partial" && !chunkResult)) {
      auto diag = op->emitError("a combine folds a value that is not the chunks' partials "
                                "(the chunks would not be folded once each, in order)");
      if (Operation *d = in->get().getDefiningOp())
        diag.attachNote(d->getLoc()) << "it is made here";
      return failure();
    }
    if (role) {
      auto pw = producer->getAttrOfType<IntegerAttr>(kChunkWidthAttr);
      if (!pw || pw.getInt() != w)
        return op->emitError("a combine of chunks of ")
               << w << " folds chunks of another width";
      partial |= !chunkResult;
    }
    if (!positionOf(op.getMatchingIndexingMap(in), red[0]))
      return op->emitError("a combine whose reduced dim is not a dim of its input");
  }
  if (!partial)
    return op->emitError("a combine with no partial to fold");
  return success();
}

LogicalResult verifyReduction(linalg::LinalgOp op) {
  auto role = op->getAttrOfType<StringAttr>(kChunkRoleAttr);
  auto width = op->getAttrOfType<IntegerAttr>(kChunkWidthAttr);
  if (!role) {
    std::optional<Combiner> c = classifyCombiner(op);
    if (c && *c == Combiner::Exact)
      return success();
    return op->emitError("this reduction is not in the canonical chunked form "
                         "(its order is not fixed by the numerics contract)");
  }
  if (failed(checkControl(op)) || failed(checkOperandBounds(op)))
    return failure();
  if (!width)
    return op->emitError("a chunked reduction without its chunk width");
  int64_t w = width.getInt();
  SmallVector<unsigned> red;
  op.getReductionDims(red);
  StringRef r = role.getValue();
  if (r == "combine")
    return checkCombine(op, w);
  if (red.size() != 1)
    return op->emitError("a ") << r << " chunk reduces over several dims";
  int64_t extent = op.getStaticLoopRanges()[red[0]];
  bool dynamic = ShapedType::isDynamic(extent);
  if (r == "partial" || r == "whole") {
    if (dynamic || extent != w)
      return op->emitError("a ") << r << " chunk of width " << w
                                 << " runs over a reduction of extent "
                                 << (dynamic ? std::string("?") : std::to_string(extent));
    if (r == "partial")
      if (auto g = dyn_cast<linalg::GenericOp>(op.getOperation()))
        return checkChunkCount(g, w);
    return success();
  }
  if (r == "tail") {
    if (!dynamic && extent >= w)
      return op->emitError("a tail of extent ") << extent << " is not shorter than its chunk width " << w;
    return dynamic ? checkTail(op, w, red[0]) : success();
  }
  return op->emitError("unknown chunk role '") << r << "'";
}

struct VerifyInvariancePass
    : public lockstep::impl::VerifyInvarianceBase<VerifyInvariancePass> {
  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](Operation *op) {
      if (isa<linalg::SoftmaxOp, ls::AttentionOp, ls::PagedAttentionOp>(op)) {
        op->emitError() << op->getName()
                        << " is left: its reduction order is "
                           "unspecified (run lockstep-canonical-reductions)";
        failed = true;
        return;
      }
      auto l = dyn_cast<linalg::LinalgOp>(op);
      if (!l || l.getNumReductionLoops() == 0)
        return;
      if (mlir::failed(verifyReduction(l)))
        failed = true;
    });
    getOperation().walk([&](func::FuncOp f) {
      if (mlir::failed(verifyPaddedReductions(f)))
        failed = true;
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
