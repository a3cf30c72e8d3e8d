//===- VerifyInvariance.cpp - The lockstep-verify-invariance pass ---------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Chunking.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace lockstep {
#define GEN_PASS_DEF_VERIFYINVARIANCE
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;

namespace {

/// The first tensor.dim (or memref.dim) in the backward slice of `v`.
Operation *sizeRead(Value v) {
  SetVector<Operation *> slice;
  BackwardSliceOptions opts;
  opts.inclusive = true;
  (void)getBackwardSlice(v, &slice, opts);
  for (Operation *op : slice)
    if (isa<tensor::DimOp>(op) || op->getName().getStringRef() == "memref.dim")
      return op;
  return nullptr;
}

/// Fails when `op` sits under control flow that sizes can steer.
LogicalResult checkControl(Operation *op) {
  for (Operation *p = op->getParentOp(); p && !isa<func::FuncOp>(p); p = p->getParentOp()) {
    Value steer;
    if (auto i = dyn_cast<scf::IfOp>(p))
      steer = i.getCondition();
    else if (!isa<linalg::LinalgOp>(p))
      return op->emitError("the reduction is under ")
             << p->getName() << ", which may run it a batch-dependent way";
    if (!steer)
      continue;
    if (Operation *dim = sizeRead(steer)) {
      auto diag = op->emitError(
          "the split of this reduction is chosen at run time from a tensor "
          "size, not from its own length");
      diag.attachNote(p->getLoc()) << "by this condition";
      diag.attachNote(dim->getLoc()) << "which reads a size here";
      return failure();
    }
  }
  return success();
}

/// The expand_shape that chunks `v`: `v` itself, or an operand of the
/// elementwise (all-parallel) generic that computes `v` from it, as the
/// attention's exp(x - m_j) is computed from the chunked scores.
tensor::ExpandShapeOp chunkedSource(Value v, int depth = 0) {
  if (auto ex = v.getDefiningOp<tensor::ExpandShapeOp>())
    return ex;
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || depth > 2 || g.getNumReductionLoops() != 0)
    return {};
  auto rank = cast<ShapedType>(v.getType()).getRank();
  for (Value in : g.getDpsInputs())
    if (cast<ShapedType>(in.getType()).getRank() == rank)
      if (auto ex = chunkedSource(in, depth + 1))
        return ex;
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
    auto ex = chunkedSource(in);
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
  if (failed(checkControl(op)))
    return failure();
  if (!width)
    return op->emitError("a chunked reduction without its chunk width");
  int64_t w = width.getInt();
  SmallVector<unsigned> red;
  op.getReductionDims(red);
  StringRef r = role.getValue();
  if (r == "combine")
    return success();
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
    return success();
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
    if (failed)
      signalPassFailure();
  }
};

} // namespace
