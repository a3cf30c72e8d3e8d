//===- Evaluate.cpp - Compile-time evaluation of small onnx subgraphs ----===//
#include "lockstep/Serving/Evaluate.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

using Kind = EvalTensor::Kind;
using Shape = SmallVector<int64_t>;

int64_t EvalTensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string lockstep::describeNode(Operation *op) {
  std::string type = op->getName().getStringRef().str();
  if (StringRef(type).starts_with("onnx."))
    type = type.substr(5);
  Location loc = op->getLoc();
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (isa<NameLoc>(l))
        loc = l;
  if (auto n = dyn_cast<NameLoc>(loc))
    return "node " + n.getName().str() + " (" + type + ")";
  return "a " + type + " node";
}

namespace {

Kind kindOf(Type t) {
  Type e = cast<ShapedType>(t).getElementType();
  if (e.isInteger(1))
    return Kind::Bool;
  if (isa<FloatType>(e))
    return Kind::Float;
  return Kind::Int;
}

/// `v` rounded to the element type of `t` (f32 and f16 round; f64 stays).
double roundTo(Type t, double v) {
  Type e = cast<ShapedType>(t).getElementType();
  if (e.isF32())
    return (double)(float)v;
  if (auto f = dyn_cast<FloatType>(e); f && f.getWidth() < 32) {
    llvm::APFloat a(v);
    bool lost;
    a.convert(f.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    a.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return a.convertToDouble();
  }
  return v;
}

EvalTensor make(Kind k, Shape shape) {
  EvalTensor t;
  t.kind = k;
  t.shape = std::move(shape);
  if (k == Kind::Float)
    t.floats.assign(t.size(), 0.0);
  else
    t.ints.assign(t.size(), 0);
  return t;
}

/// `v` as an int64, saturated (a double out of range, or NaN, would be
/// undefined behaviour to convert).
int64_t toInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return (int64_t)v;
}

void set(EvalTensor &t, int64_t i, double v) {
  if (t.kind == Kind::Float)
    t.floats[i] = v;
  else if (t.kind == Kind::Bool)
    t.ints[i] = v != 0;
  else
    t.ints[i] = toInt(v);
}

/// Element `i` as an integer index: exact for integer tensors.
int64_t intAt(const EvalTensor &t, int64_t i) {
  return t.kind == Kind::Float ? toInt(t.floats[i]) : t.ints[i];
}

Shape strides(ArrayRef<int64_t> shape) {
  Shape s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// Numpy broadcast of shapes, or nullopt.
std::optional<Shape> broadcast(ArrayRef<Shape> shapes) {
  size_t rank = 0;
  for (const Shape &s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape &s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[rank - s.size() + i];
      int64_t d = s[i];
      if (d == o || d == 1)
        continue;
      if (o != 1)
        return std::nullopt;
      o = d;
    }
  return out;
}

/// The flat index into `t` (broadcast to `out`) of output element `flat`.
struct Broadcaster {
  Shape outStrides, inStrides; // inStrides 0 on broadcast dims
  Broadcaster(ArrayRef<int64_t> out, ArrayRef<int64_t> in) {
    outStrides = strides(out);
    Shape s = strides(in);
    inStrides.assign(out.size(), 0);
    for (size_t i = 0; i < in.size(); ++i) {
      size_t o = out.size() - in.size() + i;
      inStrides[o] = in[i] == 1 ? 0 : s[i];
    }
  }
  int64_t operator()(int64_t flat) const {
    int64_t idx = 0;
    for (size_t d = 0; d < outStrides.size(); ++d) {
      int64_t c = flat / outStrides[d];
      flat -= c * outStrides[d];
      idx += c * inStrides[d];
    }
    return idx;
  }
};

/// A whole-number list from a 0-d or 1-d integer tensor.
std::vector<int64_t> intList(const EvalTensor &t) {
  if (t.kind == Kind::Float) {
    std::vector<int64_t> r;
    for (double d : t.floats)
      r.push_back(toInt(d));
    return r;
  }
  return t.ints;
}

int64_t normAxis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

/// A tensor of shape `out` whose element at index (c_0, ..., c_n) is x's
/// element at flat offset Σ_d source(d, c_d) (a slice, a transpose).
EvalTensor remap(const EvalTensor &x, const Shape &out,
                 function_ref<int64_t(int64_t d, int64_t c)> source) {
  EvalTensor t = make(x.kind, out);
  Shape os = strides(out);
  for (int64_t i = 0; i < t.size(); ++i) {
    int64_t rem = i, src = 0;
    for (size_t d = 0; d < out.size(); ++d) {
      int64_t c = rem / os[d];
      rem -= c * os[d];
      src += source(d, c);
    }
    set(t, i, x.at(src));
  }
  return t;
}

} // namespace

SubgraphEvaluator::SubgraphEvaluator(
    std::map<std::string, int64_t> symbols,
    std::function<std::optional<EvalTensor>(BlockArgument)> input, int64_t maxElements)
    : symbols(std::move(symbols)), input(std::move(input)), maxElements(maxElements) {}

std::optional<SmallVector<int64_t>> SubgraphEvaluator::sizesOf(Value v) const {
  return sizesUnder(v, symbols);
}

std::optional<SmallVector<int64_t>>
lockstep::sizesUnder(Value v, const std::map<std::string, int64_t> &symbols) {
  std::optional<SmallVector<DimExpr>> dims = getSymbolicDims(v.getType());
  if (!dims)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const DimExpr &d : *dims) {
    std::optional<int64_t> n = d.evaluate(symbols);
    if (!n || *n < 0)
      return std::nullopt;
    out.push_back(*n);
  }
  return out;
}

std::optional<EvalTensor> SubgraphEvaluator::fail(Operation *op, const std::string &what) {
  if (reason.empty())
    reason = (op ? describeNode(op) + ": " : std::string()) + what;
  return std::nullopt;
}

std::optional<EvalTensor> SubgraphEvaluator::eval(Value v) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  // A new question from outside starts with no reason.
  struct Depth {
    int &d;
    Depth(int &d, std::string &why) : d(d) {
      if (d++ == 0)
        why.clear();
    }
    ~Depth() { --d; }
  } depthGuard(depth, reason);
  std::optional<EvalTensor> r;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    r = input(arg);
    if (!r)
      return fail(nullptr, "reads the values of input #" + std::to_string(arg.getArgNumber()));
    std::optional<SmallVector<int64_t>> want = sizesOf(v);
    if (want && r->shape != *want)
      return fail(nullptr, "input #" + std::to_string(arg.getArgNumber()) +
                               " was given the wrong shape");
  } else {
    Operation *op = v.getDefiningOp();
    r = compute(op, cast<OpResult>(v).getResultNumber());
    if (!r)
      return std::nullopt;
    if (r->size() > maxElements)
      return fail(op, "more than " + std::to_string(maxElements) + " elements");
    // The result must have the dims shape inference gave it.
    std::optional<SmallVector<int64_t>> want = sizesOf(v);
    if (want && r->shape != *want)
      return fail(op, "evaluates to a shape other than its inferred dims");
  }
  memo[v] = *r;
  return r;
}

std::optional<EvalTensor> SubgraphEvaluator::compute(Operation *op, unsigned result) {
  Type rt = op->getResult(result).getType();
  if (!isa<RankedTensorType>(rt))
    return fail(op, "has an unranked result");
  Kind rk = kindOf(rt);
  auto operand = [&](unsigned i) -> std::optional<EvalTensor> {
    if (i >= op->getNumOperands() || !op->getOperand(i))
      return std::nullopt;
    return eval(op->getOperand(i));
  };
  auto budget = [&](ArrayRef<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0 || (d && n > maxElements / d))
        return false;
      n *= d;
    }
    return n <= maxElements;
  };

  // Constants and weights.
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense)
      return fail(op, "has a constant that is not dense");
    EvalTensor t = make(rk, Shape(dense.getType().getShape()));
    int64_t i = 0;
    if (rk == Kind::Float)
      for (const APFloat &f : dense.getValues<APFloat>())
        t.floats[i++] = f.convertToDouble();
    else
      for (const APInt &a : dense.getValues<APInt>())
        t.ints[i++] = rk == Kind::Bool ? (int64_t)a.getBoolValue() : a.getSExtValue();
    return t;
  }
  if (auto w = dyn_cast<WeightOp>(op)) {
    auto type = cast<RankedTensorType>(w.getType());
    if (!type.hasStaticShape() || !budget(type.getShape()))
      return fail(op, "reads a weight too large to evaluate");
    Type e = type.getElementType();
    unsigned bytes = e.isInteger(1) ? 1 : (e.getIntOrFloatBitWidth() + 7) / 8;
    EvalTensor t = make(rk, Shape(type.getShape()));
    if ((int64_t)w.getLength() != t.size() * (int64_t)bytes)
      return fail(op, "has a weight whose length does not match its type");
    std::ifstream in(w.getFile().str(), std::ios::binary);
    in.seekg((std::streamoff)w.getOffset());
    std::vector<char> buf(w.getLength());
    if (!in || !in.read(buf.data(), (std::streamsize)buf.size()))
      return fail(op, "has a weight that cannot be read");
    for (int64_t i = 0; i < t.size(); ++i) {
      const char *p = buf.data() + i * bytes;
      if (e.isF32()) {
        float f;
        std::memcpy(&f, p, 4);
        t.floats[i] = f;
      } else if (e.isF64()) {
        std::memcpy(&t.floats[i], p, 8);
      } else if (e.isInteger(64)) {
        std::memcpy(&t.ints[i], p, 8);
      } else if (e.isInteger(32)) {
        int32_t x;
        std::memcpy(&x, p, 4);
        t.ints[i] = x;
      } else if (e.isInteger(1) || e.isInteger(8)) {
        t.ints[i] = rk == Kind::Bool ? (*p != 0) : (int64_t)(int8_t)*p;
      } else {
        return fail(op, "reads a weight of an element type it does not evaluate");
      }
    }
    return t;
  }
  if (auto s = dyn_cast<ShapeOp>(op)) {
    std::optional<SmallVector<int64_t>> sizes = sizesOf(s.getData());
    if (!sizes)
      return fail(op, "takes the shape of a tensor whose dims are not known");
    int64_t rank = sizes->size();
    int64_t start = std::clamp(normAxis(s.getStart(), rank), int64_t(0), rank);
    int64_t end = std::clamp(normAxis(s.getEnd().value_or(rank), rank), int64_t(0), rank);
    EvalTensor t = make(Kind::Int, {std::max<int64_t>(end - start, 0)});
    for (int64_t i = start; i < end; ++i)
      t.ints[i - start] = (*sizes)[i];
    return t;
  }

  // Elementwise.
  auto elementwise = [&](function_ref<double(ArrayRef<double>)> f) -> std::optional<EvalTensor> {
    SmallVector<EvalTensor> ins;
    SmallVector<Shape> shapes;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      std::optional<EvalTensor> x = operand(i);
      if (!x)
        return std::nullopt;
      shapes.push_back(x->shape);
      ins.push_back(std::move(*x));
    }
    std::optional<Shape> out = broadcast(shapes);
    if (!out)
      return fail(op, "has operands that do not broadcast");
    if (!budget(*out))
      return fail(op, "more than " + std::to_string(maxElements) + " elements");
    EvalTensor t = make(rk, *out);
    SmallVector<Broadcaster> bc;
    for (const EvalTensor &x : ins)
      bc.emplace_back(*out, x.shape);
    SmallVector<double> args(ins.size());
    for (int64_t i = 0, n = t.size(); i < n; ++i) {
      for (size_t a = 0; a < ins.size(); ++a)
        args[a] = ins[a].at(bc[a](i));
      double r = f(args);
      set(t, i, rk == Kind::Float ? roundTo(rt, r) : r);
    }
    return t;
  };
  bool intDiv = rk == Kind::Int;
  if (isa<AddOp>(op))
    return elementwise([](ArrayRef<double> a) { return a[0] + a[1]; });
  if (isa<SubOp>(op))
    return elementwise([](ArrayRef<double> a) { return a[0] - a[1]; });
  if (isa<MulOp>(op))
    return elementwise([](ArrayRef<double> a) { return a[0] * a[1]; });
  if (isa<DivOp>(op)) {
    if (intDiv) {
      auto b = operand(1);
      if (b && llvm::any_of(b->ints, [](int64_t x) { return x == 0; }))
        return fail(op, "divides an integer by zero");
    }
    return elementwise([&](ArrayRef<double> a) {
      return intDiv ? std::trunc(a[0] / a[1]) : a[0] / a[1];
    });
  }
  if (isa<EqualOp>(op))
    return elementwise([](ArrayRef<double> a) { return double(a[0] == a[1]); });
  if (isa<LessOp>(op))
    return elementwise([](ArrayRef<double> a) { return double(a[0] < a[1]); });
  if (isa<LessOrEqualOp>(op))
    return elementwise([](ArrayRef<double> a) { return double(a[0] <= a[1]); });
  if (isa<GreaterOp>(op))
    return elementwise([](ArrayRef<double> a) { return double(a[0] > a[1]); });
  if (isa<GreaterOrEqualOp>(op))
    return elementwise([](ArrayRef<double> a) { return double(a[0] >= a[1]); });
  if (isa<AndOp>(op))
    return elementwise([](ArrayRef<double> a) { return double(a[0] != 0 && a[1] != 0); });
  if (isa<OrOp>(op))
    return elementwise([](ArrayRef<double> a) { return double(a[0] != 0 || a[1] != 0); });
  if (isa<NotOp>(op))
    return elementwise([](ArrayRef<double> a) { return double(a[0] == 0); });
  if (isa<NegOp>(op))
    return elementwise([](ArrayRef<double> a) { return -a[0]; });
  if (isa<AbsOp>(op))
    return elementwise([](ArrayRef<double> a) { return std::fabs(a[0]); });
  if (isa<IdentityOp>(op))
    return elementwise([](ArrayRef<double> a) { return a[0]; });
  if (isa<MaxOp>(op))
    return elementwise([](ArrayRef<double> a) { return *std::max_element(a.begin(), a.end()); });
  if (isa<MinOp>(op))
    return elementwise([](ArrayRef<double> a) { return *std::min_element(a.begin(), a.end()); });
  if (isa<WhereOp>(op))
    return elementwise([](ArrayRef<double> a) { return a[0] != 0 ? a[1] : a[2]; });
  if (isa<CastOp, CastLikeOp>(op)) {
    auto x = operand(0);
    if (!x)
      return std::nullopt;
    EvalTensor t = make(rk, x->shape);
    for (int64_t i = 0; i < t.size(); ++i) {
      double v = x->at(i);
      if (rk == Kind::Int && !std::isfinite(v))
        return fail(op, "casts a non-finite value to an integer");
      set(t, i, rk == Kind::Float ? roundTo(rt, v) : rk == Kind::Int ? std::trunc(v) : v);
    }
    return t;
  }

  // Shape-building and movement.
  if (auto r = dyn_cast<RangeOp>(op)) {
    auto s = operand(0), l = operand(1), d = operand(2);
    if (!s || !l || !d)
      return std::nullopt;
    if (s->size() != 1 || l->size() != 1 || d->size() != 1 || d->at(0) == 0)
      return fail(op, "has a start, limit or delta that is not one non-zero number");
    double start = s->at(0), limit = l->at(0), delta = d->at(0);
    double n = std::max(std::ceil((limit - start) / delta), 0.0);
    if (!std::isfinite(n) || n > (double)maxElements)
      return fail(op, "more than " + std::to_string(maxElements) + " elements");
    EvalTensor t = make(rk, {(int64_t)n});
    for (int64_t i = 0; i < (int64_t)n; ++i)
      set(t, i, rk == Kind::Float ? roundTo(rt, start + i * delta) : start + i * delta);
    return t;
  }
  if (isa<UnsqueezeOp, SqueezeOp, ReshapeOp, FlattenOp>(op)) {
    // The data is unchanged; the result's dims are its inferred ones where
    // known, else computed.
    auto x = operand(0);
    if (!x)
      return std::nullopt;
    Shape out;
    if (std::optional<SmallVector<int64_t>> sizes = sizesOf(op->getResult(0))) {
      out = *sizes;
    } else if (auto rs = dyn_cast<ReshapeOp>(op)) {
      auto sh = operand(1);
      if (!sh)
        return std::nullopt;
      std::vector<int64_t> want = intList(*sh);
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < want.size(); ++i) {
        if (want[i] == 0 && !rs.getAllowzero())
          want[i] = i < x->shape.size() ? x->shape[i] : 0;
        if (want[i] == -1)
          infer = i;
        else
          known *= want[i];
      }
      if (infer >= 0)
        want[infer] = known ? x->size() / known : 0;
      out.assign(want.begin(), want.end());
    } else {
      return fail(op, "has a result whose dims are not known");
    }
    EvalTensor t = *x;
    t.shape = out;
    if (t.size() != x->size())
      return fail(op, "reshapes to a different number of elements");
    return t;
  }
  if (auto e = dyn_cast<ExpandOp>(op)) {
    auto x = operand(0), sh = operand(1);
    if (!x || !sh)
      return std::nullopt;
    std::vector<int64_t> want = intList(*sh);
    std::optional<Shape> out = broadcast({x->shape, Shape(want.begin(), want.end())});
    if (!out)
      return fail(op, "expands to a shape that does not broadcast");
    if (!budget(*out))
      return fail(op, "more than " + std::to_string(maxElements) + " elements");
    EvalTensor t = make(x->kind, *out);
    Broadcaster bc(*out, x->shape);
    for (int64_t i = 0; i < t.size(); ++i)
      set(t, i, x->at(bc(i)));
    return t;
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    SmallVector<EvalTensor> ins;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto x = operand(i);
      if (!x)
        return std::nullopt;
      ins.push_back(std::move(*x));
    }
    if (ins.empty())
      return fail(op, "concatenates nothing");
    int64_t rank = ins[0].shape.size(), axis = normAxis(c.getAxis(), rank);
    if (axis < 0 || axis >= rank)
      return fail(op, "has an axis out of range");
    Shape out = ins[0].shape;
    out[axis] = 0;
    for (const EvalTensor &x : ins) {
      if ((int64_t)x.shape.size() != rank)
        return fail(op, "concatenates tensors of different ranks");
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && x.shape[d] != ins[0].shape[d])
          return fail(op, "concatenates tensors whose other dims differ");
      out[axis] += x.shape[axis];
    }
    EvalTensor t = make(rk, out);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= out[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= out[d];
    int64_t k = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (const EvalTensor &x : ins)
        for (int64_t j = 0, n = x.shape[axis] * inner; j < n; ++j)
          set(t, k++, x.at(o * n + j));
    return t;
  }
  if (auto g = dyn_cast<GatherOp>(op)) {
    auto x = operand(0), idx = operand(1);
    if (!x || !idx)
      return std::nullopt;
    int64_t rank = x->shape.size(), axis = normAxis(g.getAxis(), rank);
    if (axis < 0 || axis >= rank)
      return fail(op, "has an axis out of range");
    Shape out(x->shape.begin(), x->shape.begin() + axis);
    out.append(idx->shape.begin(), idx->shape.end());
    out.append(x->shape.begin() + axis + 1, x->shape.end());
    if (!budget(out))
      return fail(op, "more than " + std::to_string(maxElements) + " elements");
    EvalTensor t = make(x->kind, out);
    int64_t outer = 1, inner = 1, n = x->shape[axis];
    for (int64_t d = 0; d < axis; ++d)
      outer *= x->shape[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= x->shape[d];
    int64_t k = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < idx->size(); ++j) {
        int64_t i = intAt(*idx, j);
        if (i < 0 && i >= -n)
          i += n;
        if (i < 0 || i >= n)
          return fail(op, "gathers index " + std::to_string(intAt(*idx, j)) +
                              " out of range " + std::to_string(n));
        for (int64_t c = 0; c < inner; ++c)
          set(t, k++, x->at((o * n + i) * inner + c));
      }
    return t;
  }
  if (auto g = dyn_cast<GatherNDOp>(op)) {
    auto x = operand(0), idx = operand(1);
    if (!x || !idx)
      return std::nullopt;
    if (g.getBatchDims() != 0 || idx->shape.empty())
      return fail(op, "has batch_dims, which it does not evaluate");
    int64_t q = idx->shape.back(), rank = x->shape.size();
    if (q > rank)
      return fail(op, "has index tuples longer than the data's rank");
    Shape out(idx->shape.begin(), idx->shape.end() - 1);
    out.append(x->shape.begin() + q, x->shape.end());
    if (!budget(out))
      return fail(op, "more than " + std::to_string(maxElements) + " elements");
    EvalTensor t = make(x->kind, out);
    Shape xs = strides(x->shape);
    int64_t inner = 1, tuples = idx->size() / std::max<int64_t>(q, 1);
    for (int64_t d = q; d < rank; ++d)
      inner *= x->shape[d];
    if (q == 0)
      tuples = idx->size();
    int64_t k = 0;
    for (int64_t j = 0; j < tuples; ++j) {
      int64_t base = 0;
      for (int64_t d = 0; d < q; ++d) {
        int64_t i = intAt(*idx, j * q + d);
        if (i < 0 && i >= -x->shape[d])
          i += x->shape[d];
        if (i < 0 || i >= x->shape[d])
          return fail(op, "gathers an index out of range");
        base += i * xs[d];
      }
      for (int64_t c = 0; c < inner; ++c)
        set(t, k++, x->at(base + c));
    }
    return t;
  }
  if (auto s = dyn_cast<SliceOp>(op)) {
    auto x = operand(0), st = operand(1), en = operand(2);
    if (!x || !st || !en)
      return std::nullopt;
    int64_t rank = x->shape.size();
    std::vector<int64_t> starts = intList(*st), ends = intList(*en), axes, steps;
    if (s.getAxes()) {
      auto a = operand(3);
      if (!a)
        return std::nullopt;
      axes = intList(*a);
    } else {
      axes.resize(starts.size());
      std::iota(axes.begin(), axes.end(), 0);
    }
    if (s.getSteps()) {
      auto a = operand(4);
      if (!a)
        return std::nullopt;
      steps = intList(*a);
    } else {
      steps.assign(starts.size(), 1);
    }
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
      return fail(op, "has starts, ends, axes and steps of different lengths");
    Shape lo(rank, 0), step(rank, 1), out = x->shape;
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t a = normAxis(axes[i], rank);
      if (a < 0 || a >= rank || steps[i] == 0 ||
          steps[i] == std::numeric_limits<int64_t>::min())
        return fail(op, "has an axis out of range or a step it does not take");
      int64_t n = x->shape[a], sp = steps[i];
      // ONNX's clamping: negative indices count from the end; then starts
      // and ends are clamped to [0, n] (positive steps) or to [0, n - 1]
      // and [-1, n - 1] (negative steps).
      auto norm = [&](int64_t v) { return v < 0 ? (v < -n ? -1 : v + n) : v; };
      int64_t b = sp > 0 ? std::clamp(norm(starts[i]), int64_t(0), n)
                         : std::clamp(norm(starts[i]), int64_t(0), n - 1);
      int64_t e = sp > 0 ? std::clamp(norm(ends[i]), int64_t(0), n)
                         : std::clamp(norm(ends[i]), int64_t(-1), n - 1);
      int64_t len = sp > 0 ? (e > b ? (e - b - 1) / sp + 1 : 0)
                           : (b > e ? (b - e - 1) / (-sp) + 1 : 0);
      lo[a] = b;
      step[a] = sp;
      out[a] = len;
    }
    Shape xs = strides(x->shape);
    return remap(*x, out, [&](int64_t d, int64_t c) { return (lo[d] + c * step[d]) * xs[d]; });
  }
  if (auto c = dyn_cast<ConstantOfShapeOp>(op)) {
    auto sh = operand(0);
    if (!sh)
      return std::nullopt;
    std::vector<int64_t> want = intList(*sh);
    Shape out(want.begin(), want.end());
    if (!budget(out))
      return fail(op, "more than " + std::to_string(maxElements) + " elements");
    EvalTensor t = make(rk, out);
    double v = 0;
    if (auto val = c.getValueAttr()) {
      auto dense = dyn_cast<DenseElementsAttr>(val);
      if (!dense || dense.getNumElements() != 1)
        return fail(op, "has a value that is not one element");
      v = rk == Kind::Float ? (*dense.getValues<APFloat>().begin()).convertToDouble()
                            : (double)(*dense.getValues<APInt>().begin()).getSExtValue();
      if (rk == Kind::Bool)
        v = v != 0;
    }
    for (int64_t i = 0; i < t.size(); ++i)
      set(t, i, v);
    return t;
  }
  if (auto cs = dyn_cast<CumSumOp>(op)) {
    auto x = operand(0), ax = operand(1);
    if (!x || !ax)
      return std::nullopt;
    int64_t rank = x->shape.size();
    if (ax->size() != 1)
      return fail(op, "has an axis that is not one number");
    int64_t axis = normAxis(intAt(*ax, 0), rank);
    if (axis < 0 || axis >= rank)
      return fail(op, "has an axis out of range");
    EvalTensor t = make(rk, x->shape);
    Shape xs = strides(x->shape);
    int64_t n = x->shape[axis], stride = xs[axis];
    bool excl = cs.getExclusive(), rev = cs.getReverse();
    for (int64_t i = 0; i < t.size(); ++i) {
      int64_t pos = (i / stride) % n;
      if (pos != (rev ? n - 1 : 0))
        continue; // each line starts at its first element
      double acc = 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t p = rev ? pos - j : pos + j;
        int64_t at = i + (p - pos) * stride;
        double v = x->at(at);
        if (excl) {
          set(t, at, rk == Kind::Float ? roundTo(rt, acc) : acc);
          acc += v;
        } else {
          acc += v;
          set(t, at, rk == Kind::Float ? roundTo(rt, acc) : acc);
        }
        if (rk == Kind::Float)
          acc = roundTo(rt, acc);
      }
    }
    return t;
  }
  if (auto tr = dyn_cast<TransposeOp>(op)) {
    auto x = operand(0);
    if (!x)
      return std::nullopt;
    int64_t rank = x->shape.size();
    SmallVector<int64_t> perm;
    if (auto p = tr.getPerm())
      perm.assign(p->begin(), p->end());
    else
      for (int64_t i = rank - 1; i >= 0; --i)
        perm.push_back(i);
    SmallVector<bool> used(rank, false);
    if ((int64_t)perm.size() != rank)
      return fail(op, "has a permutation of another rank");
    for (int64_t p : perm) {
      if (p < 0 || p >= rank || used[p])
        return fail(op, "has an invalid permutation");
      used[p] = true;
    }
    Shape out(rank);
    for (int64_t d = 0; d < rank; ++d)
      out[d] = x->shape[perm[d]];
    Shape xs = strides(x->shape);
    return remap(*x, out, [&](int64_t d, int64_t c) { return c * xs[perm[d]]; });
  }
  if (auto tl = dyn_cast<TriluOp>(op)) {
    auto x = operand(0);
    if (!x)
      return std::nullopt;
    int64_t k = 0;
    if (tl.getK()) {
      auto kt = operand(1);
      if (!kt)
        return std::nullopt;
      if (kt->size() != 1)
        return fail(op, "has a k that is not one number");
      k = intAt(*kt, 0);
    }
    int64_t rank = x->shape.size();
    if (rank < 2)
      return fail(op, "has an input of rank below 2");
    int64_t rows = x->shape[rank - 2], cols = x->shape[rank - 1];
    EvalTensor t = *x;
    for (int64_t i = 0; i < t.size(); ++i) {
      int64_t c = i % cols, r = (i / cols) % rows;
      bool keep = tl.getUpper() ? c - r >= k : c - r <= k;
      if (!keep)
        set(t, i, 0);
    }
    return t;
  }
  return fail(op, "is an op that compile-time evaluation does not cover");
}
