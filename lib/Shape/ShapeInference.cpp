//===- ShapeInference.cpp - Dispatch of the shape rules -------------------===//
#include "RuleUtils.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::shape;
using namespace lockstep::onnxir;

std::optional<int64_t> SymTensor::numElements() const {
  int64_t n = 1;
  for (const DimExpr &d : dims) {
    auto c = d.getConstant();
    if (!c || d.overflowed() || __builtin_mul_overflow(n, *c, &n))
      return std::nullopt;
  }
  return n;
}

bool SymTensor::hasAllValues() const {
  return values && llvm::all_of(*values, [](auto &v) { return v.has_value(); });
}

std::optional<SmallVector<DimExpr>> SymTensor::allValues() const {
  if (!hasAllValues())
    return std::nullopt;
  SmallVector<DimExpr> out;
  for (auto &v : *values)
    out.push_back(*v);
  return out;
}

void RuleCtx::set(unsigned i, Type elt, Dims dims, std::optional<Vals> vals) {
  SymTensor t{elt, std::move(dims), std::nullopt};
  auto n = t.numElements();
  if (vals && elt.isIntOrIndex() && n && *n <= kMaxTrackedElements &&
      (int64_t)vals->size() == *n)
    t.values = std::move(vals);
  if (results.size() <= i)
    results.resize(i + 1);
  results[i] = std::move(t);
}

std::optional<SmallVector<int64_t>> RuleCtx::constInts(Value v) {
  auto all = in(v).allValues();
  if (!all)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (auto &e : *all) {
    auto k = e.getConstant();
    if (!k)
      return std::nullopt;
    out.push_back(*k);
  }
  return out;
}

std::optional<int64_t> lockstep::shape::normAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

FailureOr<Dims> lockstep::shape::broadcast(RuleCtx &c, ArrayRef<Dims> shapes) {
  size_t rank = 0;
  for (auto &s : shapes)
    rank = std::max(rank, s.size());
  Dims out(rank, DimExpr(1));
  for (auto &s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      DimExpr &o = out[off + i];
      const DimExpr &d = s[i];
      if (d == o || d == DimExpr(1))
        continue;
      if (o == DimExpr(1)) {
        o = d;
        continue;
      }
      bool oc = o.isConstant(), dc = d.isConstant();
      if (oc && dc)
        return c.fail("cannot broadcast dims " + o.str() + " and " + d.str());
      if (!oc && dc) {
        o = d; // a symbolic dim broadcast against a constant must equal it
        continue;
      }
      if (oc && !dc)
        continue;
      return c.fail("cannot broadcast symbolic dims " + o.str() + " and " +
                    d.str());
    }
  }
  return out;
}

DimExpr lockstep::shape::product(ArrayRef<DimExpr> dims) {
  DimExpr p(1);
  for (auto &d : dims)
    p = p * d;
  return p;
}

std::optional<Vals> lockstep::shape::broadcastValues(const std::optional<Vals> &v,
                                                     size_t n) {
  if (!v)
    return std::nullopt;
  if (v->size() == n)
    return v;
  if (v->size() == 1)
    return Vals(n, (*v)[0]);
  return std::nullopt;
}

LogicalResult lockstep::inferSymbolicShapes(Operation *op, SymLookup lookup,
                                            SmallVectorImpl<SymTensor> &results,
                                            std::string &error) {
  RuleCtx c{op, lookup, results, error};
  for (Value v : op->getOperands())
    if (!lookup(v))
      return c.fail("an operand's shape is unknown");
  if (succeeded(inferElementwise(c)) || !error.empty())
    return error.empty() ? success() : failure();
  if (succeeded(inferContraction(c)) || !error.empty())
    return error.empty() ? success() : failure();
  if (succeeded(inferReduction(c)) || !error.empty())
    return error.empty() ? success() : failure();
  if (succeeded(inferShapeOp(c)) || !error.empty())
    return error.empty() ? success() : failure();
  if (succeeded(inferMovement(c)) || !error.empty())
    return error.empty() ? success() : failure();
  return c.fail("no shape rule for '" + op->getName().getStringRef() + "'");
}
