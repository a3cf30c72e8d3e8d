//===- MovementRules.cpp - Shapes of data movement onnx ops ---------------===//
//
// Concat, Split, Slice, Gather, GatherND, Squeeze, Unsqueeze, Flatten and
// Transpose.
// Slice clamps as the ONNX spec says when a dim is constant (as numpy does,
// except that stepping down a start before the first element is clamped to
// it, as onnxruntime does); against a symbolic dim, an index is assumed to lie
// within it (see docs/shapes.md).
//
//===----------------------------------------------------------------------===//
#include "RuleUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::shape;
using namespace lockstep::onnxir;

namespace {

LogicalResult inferConcat(RuleCtx &c, ConcatOp op) {
  if (op.getInputs().empty())
    return c.fail("Concat needs at least one input");
  const SymTensor &first = c.in(op.getInputs()[0]);
  auto axis = normAxis((int64_t)op.getAxis(), first.rank());
  if (!axis)
    return c.fail("axis is out of range");
  Dims out = first.dims;
  out[*axis] = DimExpr(0);
  std::optional<Vals> vals = Vals();
  for (Value v : op.getInputs()) {
    const SymTensor &t = c.in(v);
    if (t.rank() != first.rank())
      return c.fail("Concat inputs have different ranks");
    out[*axis] = out[*axis] + t.dims[*axis];
    if (vals && t.values && first.rank() == 1)
      vals->append(t.values->begin(), t.values->end());
    else
      vals.reset();
  }
  c.set(0, first.elementType, out, vals);
  return success();
}

LogicalResult inferSplit(RuleCtx &c, SplitOp op) {
  const SymTensor &t = c.in(op.getInput());
  auto axis = normAxis((int64_t)op.getAxis(), t.rank());
  if (!axis)
    return c.fail("axis is out of range");
  unsigned n = op->getNumResults();
  Dims sizes;
  if (Value s = op.getSplitInput()) {
    const SymTensor &st = c.in(s);
    auto all = st.allValues();
    if (!all)
      return c.fail("the split input's values are not known");
    sizes = *all;
  } else if (auto attr = op.getSplit()) {
    for (int64_t v : *attr)
      sizes.push_back(DimExpr(v));
  } else {
    DimExpr d = t.dims[*axis];
    auto dc = d.getConstant();
    if (dc && *dc % n != 0) {
      // opset 18: the last chunk is smaller.
      int64_t chunk = (*dc + n - 1) / n;
      if (chunk * (n - 1) >= *dc)
        return c.fail("dim " + d.str() + " cannot be split in " + Twine(n) +
                      " parts of " + Twine(chunk) + " and a smaller last one");
      for (unsigned i = 0; i < n; ++i)
        sizes.push_back(DimExpr(std::min<int64_t>(chunk, *dc - chunk * i)));
    } else {
      auto part = d.divExact(DimExpr((int64_t)n));
      if (!part)
        return c.fail("dim " + d.str() + " cannot be split in " + Twine(n) +
                      " equal parts");
      sizes.assign(n, *part);
    }
  }
  if (sizes.size() != n)
    return c.fail("split has " + Twine(sizes.size()) + " sizes for " +
                  Twine(n) + " outputs");
  for (unsigned i = 0; i < n; ++i) {
    Dims out = t.dims;
    out[*axis] = sizes[i];
    c.set(i, t.elementType, out);
  }
  return success();
}

} // namespace

DimExpr lockstep::normalizeSliceIndex(const DimExpr &dim, const DimExpr &index,
                                      int64_t step, bool isEnd) {
  auto k = index.getConstant();
  if (!k)
    return index; // a symbolic index lies within the dim
  auto d = dim.getConstant();
  DimExpr v = index;
  if (step > 0) {
    if (*k >= kHugeSliceIndex)
      v = dim;
    else if (*k < 0)
      v = *k <= -kHugeSliceIndex ? DimExpr(0) : dim + DimExpr(*k);
    if (d)
      v = DimExpr(std::clamp<int64_t>(*v.getConstant(), 0, *d));
    return v;
  }
  int64_t lo = isEnd ? -1 : 0;
  if (*k >= kHugeSliceIndex)
    v = dim - DimExpr(1);
  else if (*k <= -kHugeSliceIndex)
    v = DimExpr(lo);
  else if (*k < 0)
    v = dim + DimExpr(*k);
  if (d)
    v = DimExpr(std::min<int64_t>(std::max<int64_t>(*v.getConstant(), lo), *d - 1));
  return v;
}

namespace {

/// The size of a slice of `dim` from `start` to `end` by `step`.
std::optional<DimExpr> sliceSize(const DimExpr &dim, DimExpr start, DimExpr end,
                                 int64_t step, DimExpr *startOut) {
  start = normalizeSliceIndex(dim, start, step, /*isEnd=*/false);
  end = normalizeSliceIndex(dim, end, step, /*isEnd=*/true);
  *startOut = start;
  std::optional<DimExpr> n = step > 0 ? (end - start).ceilDiv(DimExpr(step))
                                      : (start - end).ceilDiv(-DimExpr(step));
  if (n)
    if (auto k = n->getConstant(); k && *k < 0)
      n = DimExpr(0);
  // A size whose symbolic terms are all negative (64 - seq) is negative, as a
  // symbol is larger than any constant: the slice is empty.
  if (n && !n->isConstant() &&
      llvm::all_of(n->getTerms(), [](const auto &t) {
        return t.first.empty() || t.second < 0;
      }))
    n = DimExpr(0);
  return n;
}

LogicalResult inferSlice(RuleCtx &c, SliceOp op) {
  const SymTensor &t = c.in(op.getData());
  auto starts = c.in(op.getStarts()).allValues();
  auto ends = c.in(op.getEnds()).allValues();
  if (!starts || !ends)
    return c.fail("the values of starts and ends must be known");
  SmallVector<int64_t> axes, steps;
  if (Value a = op.getAxes()) {
    auto k = c.constInts(a);
    if (!k)
      return c.fail("axes must be constant");
    axes = *k;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (Value s = op.getSteps()) {
    auto k = c.constInts(s);
    if (!k)
      return c.fail("steps must be constant");
    steps = *k;
  } else {
    steps.assign(starts->size(), 1);
  }
  if (axes.size() != starts->size() || ends->size() != starts->size() ||
      steps.size() != starts->size())
    return c.fail("starts, ends, axes and steps differ in length");
  Dims out = t.dims;
  SmallVector<std::tuple<int64_t, int64_t, int64_t>> valueSlices;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto ax = normAxis(axes[i], t.rank());
    if (!ax)
      return c.fail("axis " + Twine(axes[i]) + " is out of range");
    if (steps[i] == 0)
      return c.fail("a step is 0");
    DimExpr start(0);
    auto n = sliceSize(t.dims[*ax], (*starts)[i], (*ends)[i], steps[i], &start);
    if (!n)
      return c.fail("cannot compute the slice size of dim " + Twine(*ax) +
                    " (" + t.dims[*ax].str() + ")");
    out[*ax] = *n;
    auto sc = start.getConstant(), nc = n->getConstant();
    if (sc && nc)
      valueSlices.push_back({*sc, *nc, steps[i]});
  }
  std::optional<Vals> vals;
  if (t.values && t.rank() == 1 && valueSlices.size() == 1) {
    auto [s, n, st] = valueSlices[0];
    vals.emplace();
    for (int64_t j = 0; j < n; ++j)
      vals->push_back((*t.values)[s + j * st]);
  }
  c.set(0, t.elementType, out, vals);
  return success();
}

LogicalResult inferGather(RuleCtx &c, GatherOp op) {
  const SymTensor &t = c.in(op.getData()), &ti = c.in(op.getIndices());
  auto axis = normAxis((int64_t)op.getAxis(), t.rank());
  if (!axis)
    return c.fail("axis is out of range");
  Dims out(t.dims.begin(), t.dims.begin() + *axis);
  out.append(ti.dims.begin(), ti.dims.end());
  out.append(t.dims.begin() + *axis + 1, t.dims.end());
  std::optional<Vals> vals;
  auto idx = c.constInts(op.getIndices());
  auto n = t.dims[0].getConstant();
  if (t.values && t.rank() == 1 && idx && n) {
    vals.emplace();
    for (int64_t i : *idx) {
      if (i < -*n || i >= *n)
        return c.fail("index " + Twine(i) + " is out of range");
      vals->push_back((*t.values)[i < 0 ? i + *n : i]);
    }
  }
  c.set(0, t.elementType, out, vals);
  return success();
}

LogicalResult inferGatherND(RuleCtx &c, GatherNDOp op) {
  const SymTensor &t = c.in(op.getData()), &ti = c.in(op.getIndices());
  int64_t b = op.getBatchDims();
  if (ti.rank() < 1)
    return c.fail("indices must have rank >= 1");
  auto last = ti.dims.back().getConstant();
  if (!last)
    return c.fail("the last dim of indices must be constant");
  if (b + *last > t.rank())
    return c.fail("index tuples are longer than the data's rank");
  Dims out(ti.dims.begin(), ti.dims.end() - 1);
  out.append(t.dims.begin() + b + *last, t.dims.end());
  c.set(0, t.elementType, out);
  return success();
}

template <typename OpT>
FailureOr<SmallVector<int64_t>> axesOf(RuleCtx &c, OpT op) {
  if (Value a = op.getAxesInput()) {
    auto k = c.constInts(a);
    if (!k)
      return c.fail("the axes input must be a constant");
    return *k;
  }
  if (auto attr = op.getAxes())
    return SmallVector<int64_t>(attr->begin(), attr->end());
  return SmallVector<int64_t>();
}

LogicalResult inferFlatten(RuleCtx &c, FlattenOp op) {
  const SymTensor &t = c.in(op.getInput());
  int64_t rank = t.rank(), axis = (int64_t)op.getAxis();
  if (axis < -rank || axis > rank)
    return c.fail("axis " + Twine(axis) + " is out of range for rank " + Twine(rank));
  if (axis < 0)
    axis += rank;
  DimExpr outer(1), inner(1);
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) = (i < axis ? outer : inner) * t.dims[i];
  c.set(0, t.elementType, {outer, inner}, t.values);
  return success();
}

LogicalResult inferSqueeze(RuleCtx &c, SqueezeOp op) {
  const SymTensor &t = c.in(op.getData());
  auto axes = axesOf(c, op);
  if (failed(axes))
    return failure();
  SmallVector<bool> drop(t.rank(), false);
  if (axes->empty()) {
    for (int64_t i = 0; i < t.rank(); ++i)
      drop[i] = t.dims[i] == DimExpr(1);
  }
  for (int64_t a : *axes) {
    auto n = normAxis(a, t.rank());
    if (!n)
      return c.fail("axis " + Twine(a) + " is out of range");
    if (auto k = t.dims[*n].getConstant(); k && *k != 1)
      return c.fail("cannot squeeze dim " + Twine(*n) + " of size " + Twine(*k));
    drop[*n] = true;
  }
  Dims out;
  for (int64_t i = 0; i < t.rank(); ++i)
    if (!drop[i])
      out.push_back(t.dims[i]);
  c.set(0, t.elementType, out, t.values);
  return success();
}

LogicalResult inferUnsqueeze(RuleCtx &c, UnsqueezeOp op) {
  const SymTensor &t = c.in(op.getData());
  auto axes = axesOf(c, op);
  if (failed(axes))
    return failure();
  int64_t r = t.rank() + axes->size();
  SmallVector<bool> inserted(r, false);
  for (int64_t a : *axes) {
    auto n = normAxis(a, r);
    if (!n || inserted[*n])
      return c.fail("invalid or repeated axis " + Twine(a));
    inserted[*n] = true;
  }
  Dims out;
  size_t j = 0;
  for (int64_t i = 0; i < r; ++i)
    out.push_back(inserted[i] ? DimExpr(1) : t.dims[j++]);
  c.set(0, t.elementType, out, t.values);
  return success();
}

LogicalResult inferTranspose(RuleCtx &c, TransposeOp op) {
  const SymTensor &t = c.in(op.getData());
  SmallVector<int64_t> perm;
  if (auto p = op.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = t.rank() - 1; i >= 0; --i)
      perm.push_back(i);
  if ((int64_t)perm.size() != t.rank())
    return c.fail("perm has " + Twine(perm.size()) + " entries for rank " +
                  Twine(t.rank()));
  Dims out;
  SmallVector<bool> seen(t.rank(), false);
  for (int64_t p : perm) {
    auto n = normAxis(p, t.rank());
    if (!n || seen[*n])
      return c.fail("perm is not a permutation");
    seen[*n] = true;
    out.push_back(t.dims[*n]);
  }
  c.set(0, t.elementType, out);
  return success();
}

} // namespace

LogicalResult lockstep::shape::inferMovement(RuleCtx &c) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(c.op)
      .Case<ConcatOp>([&](auto o) { return inferConcat(c, o); })
      .Case<SplitOp>([&](auto o) { return inferSplit(c, o); })
      .Case<SliceOp>([&](auto o) { return inferSlice(c, o); })
      .Case<GatherOp>([&](auto o) { return inferGather(c, o); })
      .Case<GatherNDOp>([&](auto o) { return inferGatherND(c, o); })
      .Case<SqueezeOp>([&](auto o) { return inferSqueeze(c, o); })
      .Case<FlattenOp>([&](auto o) { return inferFlatten(c, o); })
      .Case<UnsqueezeOp>([&](auto o) { return inferUnsqueeze(c, o); })
      .Case<TransposeOp>([&](auto o) { return inferTranspose(c, o); })
      .Default([](Operation *) { return failure(); });
}
