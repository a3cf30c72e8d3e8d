//===- PaddedAxes.cpp - Reductions over the ragged step's padding --------===//
#include "lockstep/Reductions/PaddedAxes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace {

constexpr int kMaxDepth = 64;

/// Which axes of which tensors are padded: their length is computed from
/// the block tables' second dim (max_blocks).
struct Padding {
  Value tables;
  DenseMap<std::pair<Value, unsigned>, bool> memo;

  bool axis(Value t, unsigned a, int depth = 0) {
    if (t == tables)
      return a == 1;
    auto ty = dyn_cast<RankedTensorType>(t.getType());
    Operation *d = t.getDefiningOp();
    if (!ty || !d || depth > kMaxDepth || a >= ty.getRank())
      return false;
    auto key = std::make_pair(t, a);
    if (auto it = memo.find(key); it != memo.end())
      return it->second;
    memo[key] = false;
    bool r = false;
    auto size = [&](OpFoldResult s) {
      auto v = dyn_cast<Value>(s);
      return v && scalar(v, depth + 1);
    };
    if (auto e = dyn_cast<tensor::EmptyOp>(d)) {
      r = ty.isDynamicDim(a) && scalar(e.getDynamicSize(a), depth + 1);
    } else if (auto l = dyn_cast<linalg::LinalgOp>(d)) {
      // A result's axis runs over a loop dim: padded when its init's axis
      // is, or when an input reads that dim along a padded axis (a static
      // chunk of a padded axis keeps no trace in the init's sizes).
      unsigned i = cast<OpResult>(t).getResultNumber();
      OpOperand *init = l.getDpsInitOperand(i);
      r = axis(init->get(), a, depth + 1);
      auto dimExpr = dyn_cast<AffineDimExpr>(l.getMatchingIndexingMap(init).getResult(a));
      for (OpOperand *in : l.getDpsInputOperands()) {
        if (r || !dimExpr)
          break;
        AffineMap m = l.getMatchingIndexingMap(in);
        for (unsigned p = 0; p < m.getNumResults() && !r; ++p)
          if (auto e = dyn_cast<AffineDimExpr>(m.getResult(p)); e && e == dimExpr)
            r = axis(in->get(), p, depth + 1);
      }
    } else if (auto dps = dyn_cast<DestinationStyleOpInterface>(d)) {
      unsigned i = cast<OpResult>(t).getResultNumber();
      r = i < dps.getNumDpsInits() && axis(dps.getDpsInitOperand(i)->get(), a, depth + 1);
    } else if (auto s = dyn_cast<tensor::ExtractSliceOp>(d)) {
      // A slice of a padded axis is padded (a tail of it, say); so is one
      // whose length is computed from the padding.
      r = s.getType().getRank() == s.getSourceType().getRank() &&
          (axis(s.getSource(), a, depth + 1) || size(s.getMixedSizes()[a]));
    } else if (auto ex = dyn_cast<tensor::ExpandShapeOp>(d)) {
      // Both the chunk index and the position in a chunk of a padded axis.
      for (auto [src, group] : llvm::enumerate(ex.getReassociationIndices()))
        if (llvm::is_contained(group, int64_t(a)))
          r = axis(ex.getSrc(), src, depth + 1);
      r = r || size(ex.getMixedOutputShape()[a]);
    } else if (auto co = dyn_cast<tensor::CollapseShapeOp>(d)) {
      for (int64_t s : co.getReassociationIndices()[a])
        r = r || axis(co.getSrc(), s, depth + 1);
    } else if (auto c = dyn_cast<tensor::CastOp>(d)) {
      r = axis(c.getSource(), a, depth + 1);
    }
    return memo[key] = r;
  }

  /// Whether the index `v` is computed (through scalar ops) from the size
  /// of a padded axis.
  bool scalar(Value v, int depth) {
    if (depth > kMaxDepth)
      return false;
    Operation *d = v.getDefiningOp();
    if (!d)
      return false;
    if (auto dim = dyn_cast<tensor::DimOp>(d)) {
      std::optional<int64_t> i = getConstantIntValue(dim.getIndex());
      return i && axis(dim.getSource(), unsigned(*i), depth + 1);
    }
    if (!isa<arith::ArithDialect>(d->getDialect()))
      return false;
    return llvm::any_of(d->getOperands(), [&](Value o) { return scalar(o, depth + 1); });
  }

  /// Whether input `in` of `op` has a padded axis where it reads reduction
  /// dim `r`.
  bool reads(linalg::LinalgOp op, OpOperand *in, unsigned r) {
    AffineMap m = op.getMatchingIndexingMap(in);
    for (unsigned p = 0; p < m.getNumResults(); ++p)
      if (auto e = dyn_cast<AffineDimExpr>(m.getResult(p)); e && e.getPosition() == r)
        if (axis(in->get(), p))
          return true;
    return false;
  }
};

bool isNegInf(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : nullptr;
  return f && f.getValue().isInfinity() && f.getValue().isNegative();
}

bool isZero(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : nullptr;
  return f && f.getValue().isZero();
}

/// The input operand of `g` whose block argument `v` is, if it is one.
OpOperand *inputOf(linalg::GenericOp g, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != g.getBody() || arg.getArgNumber() >= g.getNumDpsInputs())
    return nullptr;
  return g.getDpsInputOperand(arg.getArgNumber());
}

/// `cond` (an i1, through andi) includes `index(k) <= v` or `index(k) < v`
/// (or the same mirrored) with v read from an input of `g` that does not
/// depend on k: a per-row bound on the position. Sets `k`.
bool boundsIndex(linalg::GenericOp g, Value cond, unsigned &k) {
  if (auto a = cond.getDefiningOp<arith::AndIOp>())
    return boundsIndex(g, a.getLhs(), k) || boundsIndex(g, a.getRhs(), k);
  auto cmp = cond.getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return false;
  using P = arith::CmpIPredicate;
  Value idx, bound;
  switch (cmp.getPredicate()) {
  case P::ule: case P::ult: case P::sle: case P::slt:
    idx = cmp.getLhs(), bound = cmp.getRhs();
    break;
  case P::uge: case P::ugt: case P::sge: case P::sgt:
    idx = cmp.getRhs(), bound = cmp.getLhs();
    break;
  default:
    return false;
  }
  auto index = idx.getDefiningOp<linalg::IndexOp>();
  if (!index)
    return false;
  k = index.getDim();
  // The bound: a value of an input (through casts), whose map does not
  // read dim k.
  while (Operation *d = bound.getDefiningOp()) {
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp>(d))
      return false;
    bound = d->getOperand(0);
  }
  OpOperand *in = inputOf(g, bound);
  return in && !g.getMatchingIndexingMap(in).isFunctionOfDim(k);
}

/// `v` is a masked value: computed (through slices and reshapes) by a
/// generic that yields select(keep, s, -inf) with keep bounding a padded
/// axis's index by a per-row value.
bool masked(Padding &pad, Value v, int depth = 0) {
  if (depth > 8)
    return false;
  Operation *d = v.getDefiningOp();
  if (!d)
    return false;
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(d))
    return masked(pad, s.getSource(), depth + 1);
  if (auto e = dyn_cast<tensor::ExpandShapeOp>(d))
    return masked(pad, e.getSrc(), depth + 1);
  auto g = dyn_cast<linalg::GenericOp>(d);
  if (!g || g.getNumReductionLoops() != 0)
    return false;
  unsigned i = cast<OpResult>(v).getResultNumber();
  auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
  auto sel = yield.getOperand(i).getDefiningOp<arith::SelectOp>();
  unsigned k = 0;
  if (!sel || !isNegInf(sel.getFalseValue()) || !boundsIndex(g, sel.getCondition(), k))
    return false;
  // The bounded index is a padded axis of the result.
  AffineMap out = g.getMatchingIndexingMap(g.getDpsInitOperand(i));
  for (unsigned p = 0; p < out.getNumResults(); ++p)
    if (auto e = dyn_cast<AffineDimExpr>(out.getResult(p)); e && e.getPosition() == k)
      return pad.axis(v, p);
  return false;
}

/// `v` is select(m == -inf, 0, exp(x - m)) of a masked x: exactly 0 at every
/// masked position.
bool shiftedExpOfMasked(Padding &pad, Value v) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumReductionLoops() != 0)
    return false;
  auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
  auto sel = yield.getOperand(cast<OpResult>(v).getResultNumber()).getDefiningOp<arith::SelectOp>();
  if (!sel || !isZero(sel.getTrueValue()))
    return false;
  auto cmp = sel.getCondition().getDefiningOp<arith::CmpFOp>();
  auto exp = sel.getFalseValue().getDefiningOp<math::ExpOp>();
  auto sub = exp ? exp.getOperand().getDefiningOp<arith::SubFOp>() : nullptr;
  if (!cmp || cmp.getPredicate() != arith::CmpFPredicate::OEQ || !isNegInf(cmp.getRhs()) ||
      !sub || sub.getRhs() != cmp.getLhs())
    return false;
  OpOperand *x = inputOf(g, sub.getLhs());
  return x && masked(pad, x->get());
}

/// Whether the generic `g` reads one of its inits: it folds into a state.
bool foldsState(linalg::GenericOp g) {
  return llvm::any_of(g.getDpsInitsMutable(),
                      [&](OpOperand &o) { return g.payloadUsesValueFromOperand(&o); });
}

/// Every running state of the merge `g` (an output whose init it reads) is
/// select(mj == -inf, out, _), mj the block argument of the input read from
/// `max`: a chunk of padding only leaves the state exactly as it was. An
/// output that reads no init is a value of each merge step (a chunk's
/// weights, say; see perStepReader) when its map has every reduced dim; one
/// without is the last step's value, which a chunk of padding would set.
bool skipsPadding(linalg::GenericOp g, Value max) {
  auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
  SmallVector<unsigned> red;
  g.getReductionDims(red);
  for (unsigned i = 0; i < g.getNumDpsInits(); ++i) {
    OpOperand *init = g.getDpsInitOperand(i);
    if (!g.payloadUsesValueFromOperand(init)) {
      AffineMap map = g.getMatchingIndexingMap(init);
      if (!llvm::all_of(red, [&](unsigned d) { return map.isFunctionOfDim(d); }))
        return false;
      continue;
    }
    auto sel = yield.getOperand(i).getDefiningOp<arith::SelectOp>();
    auto cmp = sel ? sel.getCondition().getDefiningOp<arith::CmpFOp>() : nullptr;
    OpOperand *in = cmp ? inputOf(g, cmp.getLhs()) : nullptr;
    if (!in || in->get() != max || cmp.getPredicate() != arith::CmpFPredicate::OEQ ||
        !isNegInf(cmp.getRhs()) || sel.getTrueValue() != g.getMatchingBlockArgument(init))
      return false;
  }
  return true;
}

/// A value of each merge step of `g` (an output that reads no init, such as
/// a chunk's weights) is not a state, so it may be read only by a merge that
/// folds it with `max` too, which is checked as `g` is. Returns the first op
/// that reads one otherwise, or null.
Operation *perStepReader(linalg::GenericOp g, Value max) {
  for (OpOperand &init : g.getDpsInitsMutable()) {
    if (g.payloadUsesValueFromOperand(&init))
      continue;
    for (Operation *u : g.getTiedOpResult(&init).getUsers()) {
      auto m = dyn_cast<linalg::GenericOp>(u);
      if (!m || !foldsState(m) || !llvm::is_contained(m.getDpsInputs(), max))
        return u;
    }
  }
  return nullptr;
}

bool isMax(Operation *op) { return isa<arith::MaximumFOp, arith::MaxNumFOp>(op); }

InFlightDiagnostic refuse(Operation *op, StringRef why) {
  return op->emitError("a reduction over a padded axis (max_blocks * block_size key "
                       "positions, a length that changes with the batch): ")
         << why;
}

} // namespace

LogicalResult lockstep::verifyPaddedReductions(func::FuncOp func) {
  Padding pad;
  for (BlockArgument a : func.getArguments())
    if (auto role = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), "lockstep.role"))
      if (role.getValue() == "ragged.block_tables")
        pad.tables = a;
  if (!pad.tables)
    return success();
  bool failed = false;
  SmallVector<Value> paddedMaxima;
  func.walk([&](linalg::GenericOp g) {
    SmallVector<unsigned> red;
    g.getReductionDims(red);
    if (red.size() != 1 || !isa<FloatType>(getElementTypeOrSelf(g->getResult(0).getType())))
      return;
    SmallVector<OpOperand *> padded;
    for (OpOperand *in : g.getDpsInputOperands())
      if (pad.reads(g, in, red[0]))
        padded.push_back(in);
    if (padded.empty())
      return;
    auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
    auto role = g->getAttrOfType<StringAttr>("lockstep.chunk_role");
    if (role && role.getValue() == "combine")
      return; // a merge: checked below, with the tail's
    for (unsigned i = 0; i < g.getNumDpsInits(); ++i) {
      Operation *fold = yield.getOperand(i).getDefiningOp();
      if (fold && isMax(fold)) {
        bool ok = llvm::any_of(padded, [&](OpOperand *in) { return masked(pad, in->get()); });
        if (!ok) {
          refuse(g, "its max reads positions past the row's own that are not masked to -inf "
                    "(the padding would take part)");
          failed = true;
          return;
        }
        paddedMaxima.push_back(g->getResult(i));
        continue;
      }
      bool ok = llvm::any_of(padded, [&](OpOperand *in) {
        return shiftedExpOfMasked(pad, in->get());
      });
      if (!ok) {
        refuse(g, "its sum does not reduce exp(x - m) of scores masked to -inf past the "
                  "row's position, so the padding could add something");
        failed = true;
        return;
      }
    }
  });
  // Merges of the chunks' statistics into a running state.
  for (Value max : paddedMaxima)
    for (Operation *user : max.getUsers()) {
      auto g = dyn_cast<linalg::GenericOp>(user);
      if (!g || !foldsState(g))
        continue;
      if (!skipsPadding(g, max)) {
        refuse(g, "this merge of its chunks does not keep its state exactly when a chunk is "
                  "all padding (its max -inf)");
        failed = true;
      } else if (Operation *reader = perStepReader(g, max)) {
        refuse(g, "this merge of its chunks writes a value of each chunk that is not folded "
                  "with the chunk's max, so a chunk of padding only could change a state")
                .attachNote(reader->getLoc())
            << "it is read here";
        failed = true;
      }
    }
  return failure(failed);
}
