//===- ContextLimit.cpp - The longest context a decoder graph can take ----===//
//
// Exported decoders carry tables sized for a maximum number of positions:
// learned position embeddings or rotary cos/sin caches read by position
// (a Gather), and causal-mask buffers cut to the current length (a Slice).
// Shape inference takes such a Slice to be in range, and a Gather reads
// whatever index it is given, so a longer context would read past a table.
// The limit is found by structure:
//   - a Gather of a weight or constant whose indices are computed from the
//     positions input or from a Range or CumSum (positions built in the
//     graph): the
//     table's length along the gathered axis, less a constant added to the
//     positions (OPT's learned positions start at row 2);
//   - a Slice of a tensor with a static axis whose result along that axis is
//     a symbolic length in the new tokens or the past: that axis's size.
// The smallest one, with the node it comes from, bounds prompt plus
// generation; the runtime refuses longer requests instead of reading out of
// bounds.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Serving/ServingRoles.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

std::string nodeOf(Operation *op) {
  if (auto n = dyn_cast<NameLoc>(op->getLoc()))
    return n.getName().str();
  return op->getName().getStringRef().str();
}

/// Whether `v` is computed from the block argument `arg`, or from a Range or
/// a CumSum (positions that the graph counts itself).
bool fromPositions(Value v, BlockArgument arg) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 32> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (arg && x == arg)
      return true;
    Operation *d = x.getDefiningOp();
    if (!d || !seen.insert(d).second)
      continue;
    if (isa<RangeOp, CumSumOp>(d))
      return true;
    if (isa<WeightOp, ConstantOp>(d))
      continue;
    for (Value o : d->getOperands())
      work.push_back(o);
  }
  return false;
}

/// The integer scalar value of a constant, if `v` is one.
std::optional<int64_t> scalarConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseIntElementsAttr>(c.getValue()) : nullptr;
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  return (*dense.begin()).getSExtValue();
}

/// The constant c in `index = position + c`, read through Add and Sub of
/// constants and the ops that keep values (Cast, reshapes, Expand); 0 when
/// the index is not of that form.
int64_t offsetOf(Value v) {
  int64_t c = 0;
  for (int steps = 0; steps < 32; ++steps) {
    Operation *d = v.getDefiningOp();
    if (!d)
      break;
    if (isa<CastOp, IdentityOp, ReshapeOp, UnsqueezeOp, SqueezeOp, ExpandOp>(d)) {
      v = d->getOperand(0);
      continue;
    }
    // position + past (a size read with Shape, as lockstep-introduce-kv-cache
    // builds it): the past is part of the context already.
    if (isa<AddOp>(d) && d->getOperand(1).getDefiningOp<ShapeOp>()) {
      v = d->getOperand(0);
      continue;
    }
    if (isa<AddOp, SubOp>(d)) {
      std::optional<int64_t> rhs = scalarConstant(d->getOperand(1));
      std::optional<int64_t> lhs = isa<AddOp>(d) ? scalarConstant(d->getOperand(0)) : std::nullopt;
      if (rhs && *rhs > -(1 << 20) && *rhs < (1 << 20)) {
        c += isa<AddOp>(d) ? *rhs : -*rhs;
        v = d->getOperand(0);
        continue;
      }
      if (lhs && *lhs > -(1 << 20) && *lhs < (1 << 20)) {
        c += *lhs;
        v = d->getOperand(1);
        continue;
      }
    }
    break;
  }
  return c;
}

} // namespace

void lockstep::findContextLimit(func::FuncOp main, ServingRoles &r) {
  BlockArgument positions = r.positions ? main.getArgument(*r.positions) : BlockArgument();
  auto consider = [&](int64_t n, Operation *op, const char *what) {
    if (n <= 0 || (r.maxContext && *r.maxContext <= n))
      return;
    r.maxContext = n;
    r.maxContextAt = nodeOf(op) + ": " + what;
  };
  main.walk([&](Operation *op) {
    if (auto g = dyn_cast<GatherOp>(op)) {
      Operation *table = g.getData().getDefiningOp();
      auto t = dyn_cast<RankedTensorType>(g.getData().getType());
      if (!table || !isa<WeightOp, ConstantOp>(table) || !t)
        return;
      int64_t axis = g.getAxis() < 0 ? g.getAxis() + t.getRank() : g.getAxis();
      if (axis < 0 || axis >= t.getRank() || t.isDynamicDim(axis))
        return;
      if (g.getIndices() != main.getArgument(r.tokenIds) &&
          fromPositions(g.getIndices(), positions))
        consider(t.getDimSize(axis) - std::max<int64_t>(0, offsetOf(g.getIndices())), op,
                 "a table read by position");
      return;
    }
    if (auto s = dyn_cast<SliceOp>(op)) {
      auto in = dimsOf(s.getData()), out = dimsOf(s.getOutput());
      if (!in || !out || in->size() != out->size())
        return;
      for (size_t i = 0; i < in->size(); ++i)
        if (auto n = (*in)[i].getConstant())
          if (!(*out)[i].getConstant() && ((*out)[i].mentions(r.seq) || (*out)[i].mentions(r.past)))
            consider(*n, op, "a fixed-size tensor cut to the context length");
    }
  });
}
