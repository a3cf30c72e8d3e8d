//===- ShapeOpRules.cpp - Shapes of shape-computing onnx ops --------------===//
//
// Shape, Constant, ConstantOfShape, Range, Reshape and Expand: the ops where
// values of shape tensors become dims, and dims become values.
//
//===----------------------------------------------------------------------===//
#include "RuleUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::shape;
using namespace lockstep::onnxir;

namespace {

std::optional<Vals> intValues(ElementsAttr attr) {
  if (!attr.getElementType().isIntOrIndex() ||
      attr.getNumElements() > kMaxTrackedElements)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  Vals out;
  for (APInt v : dense.getValues<APInt>())
    out.push_back(DimExpr(attr.getElementType().isInteger(1)
                              ? (int64_t)v.getZExtValue()
                              : v.getSExtValue()));
  return out;
}

Dims staticDims(ShapedType t) {
  Dims out;
  for (int64_t d : t.getShape())
    out.push_back(DimExpr(d));
  return out;
}

/// True when `e` is negative: a negative constant, or an expression whose
/// symbolic terms are all negative (a symbol is larger than any constant).
bool isNegative(const DimExpr &e) {
  if (auto k = e.getConstant())
    return *k < 0;
  return llvm::all_of(e.getTerms(), [](const auto &t) {
    return t.first.empty() || t.second < 0;
  });
}

/// Fails when a dim of an output shape is negative.
LogicalResult checkDims(RuleCtx &c, ArrayRef<DimExpr> dims, StringRef what) {
  for (const DimExpr &d : dims)
    if (isNegative(d))
      return c.fail(what + " has the negative dim " + d.str());
  return success();
}

/// The values of a 1-D shape input, all of which must be known.
FailureOr<Dims> shapeValues(RuleCtx &c, Value v, StringRef what) {
  const SymTensor &t = c.in(v);
  if (t.rank() != 1)
    return c.fail(what + " must be 1-D");
  auto all = t.allValues();
  if (!all)
    return c.fail("the values of " + what +
                  " are not known; the shape computation that produces it "
                  "could not be folded");
  return *all;
}

LogicalResult inferReshape(RuleCtx &c, ReshapeOp op) {
  const SymTensor &t = c.in(op.getData());
  auto target = shapeValues(c, op.getShape(), "the shape input");
  if (failed(target))
    return failure();
  Dims out;
  int inferAt = -1;
  for (auto [i, d] : llvm::enumerate(*target)) {
    auto k = d.getConstant();
    if (k && *k == 0 && !op.getAllowzero()) {
      if ((int64_t)i >= t.rank())
        return c.fail("shape entry 0 at position " + Twine(i) +
                      " has no input dim to copy");
      out.push_back(t.dims[i]);
    } else if (k && *k == -1) {
      if (inferAt >= 0)
        return c.fail("more than one -1 in the shape");
      inferAt = i;
      out.push_back(DimExpr(0));
    } else if (k && *k < 0) {
      return c.fail("invalid shape entry " + Twine(*k));
    } else {
      out.push_back(d);
    }
  }
  if (inferAt >= 0) {
    Dims known = out;
    known.erase(known.begin() + inferAt);
    if (product(t.dims).overflowed() || product(known).overflowed())
      return c.fail("cannot infer the -1 dim: the element count overflows "
                    "int64");
    auto q = product(t.dims).divExact(product(known));
    if (!q)
      return c.fail("cannot infer the -1 dim: " + product(t.dims).str() +
                    " elements are not provably divisible by " +
                    product(known).str());
    out[inferAt] = *q;
  }
  c.set(0, t.elementType, out, t.values);
  return success();
}

LogicalResult inferExpand(RuleCtx &c, ExpandOp op) {
  const SymTensor &t = c.in(op.getInput());
  auto target = shapeValues(c, op.getShape(), "the shape input");
  if (failed(target) || failed(checkDims(c, *target, "the shape input")))
    return failure();
  // A 1 in the target keeps the input's dim.
  auto dims = broadcast(c, {t.dims, *target});
  if (failed(dims))
    return failure();
  std::optional<Vals> vals;
  int64_t n = 1;
  bool constant = true;
  for (auto &d : *dims) {
    auto k = d.getConstant();
    constant &= k.has_value();
    n *= k ? *k : 1;
  }
  if (constant && t.values && t.values->size() == 1)
    vals = Vals(n, (*t.values)[0]);
  else if (constant && t.values && (int64_t)t.values->size() == n)
    vals = t.values;
  c.set(0, t.elementType, *dims, vals);
  return success();
}

LogicalResult inferRange(RuleCtx &c, RangeOp op) {
  const SymTensor &ts = c.in(op.getStart()), &tl = c.in(op.getLimit()),
                  &td = c.in(op.getDelta());
  // Each input holds one value (a scalar).
  for (const SymTensor *t : {&ts, &tl, &td})
    if (t->values && t->values->size() != 1)
      return c.fail("Range's start, limit and delta must each hold one "
                    "value, not " + std::to_string(t->values->size()));
  auto s = ts.values ? (*ts.values)[0] : std::nullopt;
  auto l = tl.values ? (*tl.values)[0] : std::nullopt;
  auto d = td.values ? (*td.values)[0] : std::nullopt;
  auto dc = d ? d->getConstant() : std::nullopt;
  if (!s || !l || !dc || *dc == 0)
    return c.fail("Range needs start and limit with known values and a "
                  "constant non-zero delta");
  auto n = (*l - *s).ceilDiv(DimExpr(*dc));
  if (!n)
    return c.fail("cannot compute the length of the range");
  if (isNegative(*n))
    n = DimExpr(0);
  std::optional<Vals> vals;
  if (auto k = n->getConstant(); k && *k <= kMaxTrackedElements) {
    vals.emplace();
    for (int64_t i = 0; i < *k; ++i)
      vals->push_back(*s + DimExpr(i * *dc));
  }
  c.set(0, ts.elementType, {*n}, vals);
  return success();
}

LogicalResult inferShape(RuleCtx &c, ShapeOp op) {
  const SymTensor &t = c.in(op.getData());
  int64_t r = t.rank();
  auto clampIdx = [r](int64_t i) {
    if (i < 0)
      i += r;
    return std::clamp<int64_t>(i, 0, r);
  };
  int64_t start = clampIdx((int64_t)op.getStart());
  int64_t end = op.getEnd() ? clampIdx((int64_t)*op.getEnd()) : r;
  Vals vals;
  for (int64_t i = start; i < end; ++i)
    vals.push_back(t.dims[i]);
  c.set(0, c.i64(), {DimExpr((int64_t)vals.size())}, vals);
  return success();
}

LogicalResult inferConstantOfShape(RuleCtx &c, ConstantOfShapeOp op) {
  auto target = shapeValues(c, op.getInput(), "the shape input");
  if (failed(target) || failed(checkDims(c, *target, "the shape input")))
    return failure();
  Type elt = Float32Type::get(c.op->getContext());
  std::optional<Vals> fill;
  if (auto v = op.getValue()) {
    elt = v->getElementType();
    fill = intValues(*v);
  }
  std::optional<Vals> vals;
  int64_t n = 1;
  bool constant = true;
  for (auto &d : *target) {
    auto k = d.getConstant();
    constant &= k.has_value();
    n *= k ? *k : 1;
  }
  if (constant && fill && fill->size() == 1 && n <= kMaxTrackedElements)
    vals = Vals(n, (*fill)[0]);
  c.set(0, elt, *target, vals);
  return success();
}

} // namespace

LogicalResult lockstep::shape::inferShapeOp(RuleCtx &c) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(c.op)
      .Case<ConstantOp>([&](ConstantOp o) {
        auto type = cast<ShapedType>(o.getValue().getType());
        c.set(0, type.getElementType(), staticDims(type), intValues(o.getValue()));
        return success();
      })
      .Case<WeightOp>([&](WeightOp o) {
        auto type = dyn_cast<RankedTensorType>(o.getType());
        if (!type || !type.hasStaticShape())
          return c.fail("a weight must have a static shape");
        c.set(0, type.getElementType(), staticDims(type));
        return success();
      })
      .Case<ShapeOp>([&](ShapeOp o) { return inferShape(c, o); })
      .Case<ConstantOfShapeOp>([&](auto o) { return inferConstantOfShape(c, o); })
      .Case<RangeOp>([&](RangeOp o) { return inferRange(c, o); })
      .Case<ReshapeOp>([&](ReshapeOp o) { return inferReshape(c, o); })
      .Case<ExpandOp>([&](ExpandOp o) { return inferExpand(c, o); })
      .Default([](Operation *) { return failure(); });
}
