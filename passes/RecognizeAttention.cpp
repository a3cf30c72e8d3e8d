//===- RecognizeAttention.cpp - The lockstep-recognize-attention pass -----===//
//
// Finds the attention subgraphs that exporters emit and replaces each with one
// lockstep.attention. The match is structural: a Softmax over the last axis of
// a rank-4 score tensor, whose only consumer (possibly through the
// Where(IsNaN(p), 0, p) guard of exported SDPA) is the MatMul with the
// values, and whose input is MatMul(query, keys transposed), optionally
// scaled by a scalar (Mul or Div), maybe softcapped (Mul(Tanh(Div(s, c)), c),
// Gemma 2), and then masked (Add of a float mask, or Where(mask, scores,
// fill)). The mask stays the graph's own operand here: lockstep-prove-mask
// replaces it with a kind (causal, sliding window) only where it proves it. The keys' side is unwound to [B, Hk, Sk, D]:
// a scalar Mul becomes key_scale, the transpose (Transpose, or the
// Reshape/Transpose/Reshape that dynamo emits) is dropped, and the
// Unsqueeze/Expand/Reshape that repeats key and value heads for
// grouped-query attention is dropped on both. Anything else is left as it
// is: an unmatched subgraph still compiles, op by op.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/Passes/Passes.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

namespace lockstep {
#define GEN_PASS_DEF_RECOGNIZEATTENTION
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

using Dims = SmallVector<DimExpr>;

/// A single floating-point element (rank 0, or every dim 1).
bool isScalar(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType()) &&
         llvm::all_of(t.getShape(), [](int64_t d) { return d == 1; });
}


/// `op`'s other operand when `v` is one of its two, else null.
Value other(Operation *op, Value v) {
  if (op->getNumOperands() != 2)
    return {};
  if (op->getOperand(0) == v)
    return op->getOperand(1);
  if (op->getOperand(1) == v)
    return op->getOperand(0);
  return {};
}

bool permIs(TransposeOp t, ArrayRef<int64_t> perm) {
  auto p = t.getPerm();
  return p && ArrayRef<int64_t>(*p) == perm;
}

/// Scores [B, H, Sq, Sk] from keys transposed [B, H, D, Sk]: peeled to keys
/// [B, H, Sk, D] when the transpose is visible, else null.
Value untranspose(Value kt) {
  if (auto t = kt.getDefiningOp<TransposeOp>())
    if (permIs(t, {0, 1, 3, 2}))
      return t.getData();
  // dynamo: Reshape([B, H, Sk, D] -> [B*H, Sk, D]), Transpose(0, 2, 1),
  // Reshape(-> [B, H, D, Sk]).
  auto outer = kt.getDefiningOp<ReshapeOp>();
  auto tr = outer ? outer.getData().getDefiningOp<TransposeOp>() : nullptr;
  auto inner = tr ? tr.getData().getDefiningOp<ReshapeOp>() : nullptr;
  if (!inner || !permIs(tr, {0, 2, 1}))
    return {};
  Value k = inner.getData();
  Dims kd = symbolicDimsOrEmpty(k), id = symbolicDimsOrEmpty(inner.getReshaped()), od = symbolicDimsOrEmpty(kt);
  if (kd.size() != 4 || id.size() != 3 || od.size() != 4)
    return {};
  if (id[0] != kd[0] * kd[1] || id[1] != kd[2] || id[2] != kd[3] ||
      od[0] != kd[0] || od[1] != kd[1] || od[2] != kd[3] || od[3] != kd[2])
    return {};
  return k;
}

/// Heads repeated for grouped-query attention: x = Reshape(Expand(
/// Unsqueeze(z))) with z [B, Hk, S, D] -> [B, Hk, G, S, D] -> [B, Hk·G, S, D].
/// Returns (z, G), or (x, 1).
std::pair<Value, int64_t> ungroup(Value x) {
  auto r = x.getDefiningOp<ReshapeOp>();
  auto e = r ? r.getData().getDefiningOp<ExpandOp>() : nullptr;
  auto u = e ? e.getInput().getDefiningOp<UnsqueezeOp>() : nullptr;
  if (!u)
    return {x, 1};
  Value z = u->getOperand(0);
  Dims zd = symbolicDimsOrEmpty(z), ud = symbolicDimsOrEmpty(u->getResult(0)), ed = symbolicDimsOrEmpty(e.getOutput()),
       rd = symbolicDimsOrEmpty(x);
  if (zd.size() != 4 || ud.size() != 5 || ed.size() != 5 || rd.size() != 4)
    return {x, 1};
  std::optional<int64_t> g = ed[2].getConstant();
  if (!g || *g < 1 || ud[0] != zd[0] || ud[1] != zd[1] || ud[2] != DimExpr(1) ||
      ud[3] != zd[2] || ud[4] != zd[3] || ed[0] != zd[0] || ed[1] != zd[1] ||
      ed[3] != zd[2] || ed[4] != zd[3] || rd[0] != zd[0] ||
      rd[1] != zd[1] * DimExpr(*g) || rd[2] != zd[2] || rd[3] != zd[3])
    return {x, 1};
  return {z, *g};
}

/// The value of a scalar floating-point constant, if `v` is one.
std::optional<double> scalarConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c || !isScalar(v))
    return std::nullopt;
  auto dense = dyn_cast<DenseFPElementsAttr>(c.getValue());
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  return (*dense.getValues<APFloat>().begin()).convertToDouble();
}

bool isZeroConstant(Value v) {
  std::optional<double> c = scalarConstant(v);
  return c && *c == 0; // +0.0 or -0.0
}

/// Logit softcapping as Gemma 2 writes it: Mul(Tanh(Div(s, c)), c) with one
/// positive constant c, each step used once. Returns (s, c).
std::optional<std::pair<Value, double>> peelSoftcap(Value v) {
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  for (unsigned side = 0; side < 2; ++side) {
    std::optional<double> c1 = scalarConstant(mul->getOperand(1 - side));
    auto tanh = mul->getOperand(side).getDefiningOp<TanhOp>();
    auto div = tanh ? tanh->getOperand(0).getDefiningOp<DivOp>() : nullptr;
    if (!c1 || !div || !tanh->getResult(0).hasOneUse() || !div.getC().hasOneUse())
      continue;
    std::optional<double> c2 = scalarConstant(div.getB());
    if (!c2 || *c1 != *c2 || !(*c1 > 0) || !std::isfinite(*c1) ||
        symbolicDimsOrEmpty(div.getA()) != symbolicDimsOrEmpty(v))
      continue;
    return std::make_pair(div.getA(), *c1);
  }
  return std::nullopt;
}

struct Match {
  Value query, keysT, value, mask, fill, scale, keyScale;
  bool divides = false, zeroEmpty = false;
  std::optional<double> softcap;
  Operation *result; // the MatMul with the values
};

/// The attention around `sm`, or nullopt.
std::optional<Match> matchAt(SoftmaxOp sm) {
  Match m;
  Value x = sm.getInput();
  // No-op Casts before the softmax.
  while (auto c = x.getDefiningOp<CastOp>()) {
    if (c.getInput().getType() != x.getType() || !x.hasOneUse())
      break;
    x = c.getInput();
  }
  Dims xd = symbolicDimsOrEmpty(x);
  if (xd.size() != 4 || (sm.getAxis() != -1 && sm.getAxis() != 3))
    return std::nullopt;
  // The probabilities' one consumer: the MatMul with the values, maybe
  // behind the NaN guard, and maybe behind a Cast to their own type (a
  // no-op: eager attention's `softmax(.., dtype=float32).to(dtype)`).
  Value p = sm.getOutput();
  while (p.hasOneUse()) {
    auto c = dyn_cast<CastOp>(*p.getUsers().begin());
    if (!c || c.getOutput().getType() != p.getType())
      break;
    p = c.getOutput();
  }
  if (!p.hasOneUse() && !p.hasNUses(2))
    return std::nullopt;
  if (p.hasNUses(2)) {
    WhereOp guard;
    IsNaNOp isnan;
    for (Operation *u : p.getUsers()) {
      if (auto w = dyn_cast<WhereOp>(u))
        guard = w;
      else if (auto n = dyn_cast<IsNaNOp>(u))
        isnan = n;
    }
    if (!guard || !isnan || guard.getCondition() != isnan->getResult(0) ||
        !isnan->getResult(0).hasOneUse() || guard.getY() != p ||
        !isZeroConstant(guard.getX()) || !guard.getOutput().hasOneUse())
      return std::nullopt;
    m.zeroEmpty = true;
    p = guard.getOutput();
  }
  auto pv = dyn_cast<MatMulOp>(*p.getUsers().begin());
  if (!pv || pv.getA() != p || symbolicDimsOrEmpty(pv.getB()).size() != 4)
    return std::nullopt;
  m.result = pv;
  m.value = pv.getB();
  // The mask.
  Value s = x;
  if (auto w = x.getDefiningOp<WhereOp>()) {
    auto ct = cast<RankedTensorType>(w.getCondition().getType());
    if (!ct.getElementType().isInteger(1) || !isScalar(w.getY()) || isScalar(w.getX()))
      return std::nullopt;
    m.mask = w.getCondition();
    m.fill = w.getY();
    s = w.getX();
  } else if (auto add = x.getDefiningOp<AddOp>()) {
    // The scores are the operand that comes from a MatMul, maybe scaled.
    auto scores = [](Value v) {
      if (auto capped = peelSoftcap(v))
        v = capped->first;
      Operation *d = v.getDefiningOp();
      if (d && isa<MulOp, DivOp>(d))
        return llvm::any_of(d->getOperands(),
                            [](Value o) { return o.getDefiningOp<MatMulOp>() != nullptr; });
      return d && isa<MatMulOp>(d);
    };
    bool a = scores(add.getA()), b = scores(add.getB());
    if (a == b)
      return std::nullopt;
    s = a ? add.getA() : add.getB();
    m.mask = a ? add.getB() : add.getA();
  }
  if (s != x && (!s.hasOneUse() || symbolicDimsOrEmpty(s) != xd || !x.hasOneUse()))
    return std::nullopt;
  // Softcapping between the scale and the mask.
  if (auto capped = peelSoftcap(s)) {
    if (!capped->first.hasOneUse())
      return std::nullopt;
    s = capped->first;
    m.softcap = capped->second;
  }
  // The scale.
  Value dot = s;
  if (auto mul = s.getDefiningOp<MulOp>()) {
    Value c = isScalar(mul.getB()) ? mul.getB() : isScalar(mul.getA()) ? mul.getA() : Value();
    if (!c)
      return std::nullopt;
    m.scale = c;
    dot = other(mul, c);
  } else if (auto div = s.getDefiningOp<DivOp>()) {
    if (!isScalar(div.getB()))
      return std::nullopt;
    m.scale = div.getB();
    m.divides = true;
    dot = div.getA();
  }
  auto qk = dot.getDefiningOp<MatMulOp>();
  if (!qk || (dot != x && !dot.hasOneUse()) || symbolicDimsOrEmpty(dot) != xd)
    return std::nullopt;
  m.query = qk.getA();
  m.keysT = qk.getB();
  Dims qd = symbolicDimsOrEmpty(m.query), kd = symbolicDimsOrEmpty(m.keysT), vd = symbolicDimsOrEmpty(m.value);
  // Keys and values have the query's heads, or one head that the MatMuls
  // broadcast (multi-query attention).
  auto heads = [&](const DimExpr &h) { return h == qd[1] || h == DimExpr(1); };
  if (qd.size() != 4 || kd.size() != 4 || vd.size() != 4 || !heads(kd[1]) ||
      kd[3] != xd[3] || vd[2] != xd[3] || !heads(vd[1]) ||
      !qd[3].getConstant() || !vd[3].getConstant())
    return std::nullopt;
  return m;
}

struct RecognizeAttentionPass
    : public lockstep::impl::RecognizeAttentionBase<RecognizeAttentionPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp sm) { softmaxes.push_back(sm); });
    OpBuilder b(&getContext());
    SmallVector<Operation *> dead;
    for (SoftmaxOp sm : softmaxes) {
      std::optional<Match> m = matchAt(sm);
      if (!m)
        continue;
      b.setInsertionPoint(m->result);
      Location loc = m->result->getLoc();
      // Keys [B, H, D, Sk] -> [B, Hk, Sk, D].
      Value kt = m->keysT;
      if (auto mul = kt.getDefiningOp<MulOp>(); mul && kt.hasOneUse()) {
        Value c = isScalar(mul.getB()) ? mul.getB() : isScalar(mul.getA()) ? mul.getA() : Value();
        // Only a scale that keeps the keys' dims (not one that broadcasts
        // them up).
        if (c && !isScalar(other(mul, c)) && symbolicDimsOrEmpty(other(mul, c)) == symbolicDimsOrEmpty(kt)) {
          m->keyScale = c;
          kt = other(mul, c);
        }
      }
      Value keys = untranspose(kt);
      Operation *inserted = nullptr;
      if (!keys) {
        Dims d = symbolicDimsOrEmpty(kt);
        std::swap(d[2], d[3]);
        auto t = getSymbolicTensorType(cast<RankedTensorType>(kt.getType()).getElementType(), d);
        keys = TransposeOp::create(b, loc, t, kt, b.getDenseI64ArrayAttr({0, 1, 3, 2}));
        inserted = keys.getDefiningOp();
      }
      auto [k, gk] = ungroup(keys);
      auto [v, gv] = ungroup(m->value);
      Dims kd = symbolicDimsOrEmpty(k), vd = symbolicDimsOrEmpty(v);
      if (gk != gv || kd.size() != 4 || vd.size() != 4 || kd[1] != vd[1]) {
        k = keys;
        v = m->value;
      }
      auto attn = ls::AttentionOp::create(
          b, loc, m->result->getResult(0).getType(), m->query, k, v, m->mask,
          m->fill, m->keyScale, m->scale, m->divides, m->zeroEmpty,
          /*causal=*/false, /*window=*/IntegerAttr(),
          m->softcap ? b.getF64FloatAttr(*m->softcap) : FloatAttr());
      LogicalResult valid = success();
      {
        // Shapes the op does not take leave the subgraph as it is, silently.
        ScopedDiagnosticHandler quiet(&getContext(), [](Diagnostic &) { return success(); });
        valid = attn.verify();
      }
      if (failed(valid)) {
        attn.erase();
        if (inserted)
          inserted->erase();
        continue;
      }
      m->result->getResult(0).replaceAllUsesWith(attn.getOutput());
      dead.push_back(m->result);
      ++numRecognized;
    }
    // The replaced subgraphs are dead now: erase them, from the replaced
    // MatMuls up (weights stay: they are the function's arguments).
    DenseSet<Operation *> erased; // an op may be queued twice
    while (!dead.empty()) {
      Operation *op = dead.pop_back_val();
      if (erased.contains(op) || !op->use_empty() || isa<WeightOp>(op) || !isMemoryEffectFree(op))
        continue;
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp())
          dead.push_back(d);
      erased.insert(op);
      op->erase();
    }
  }
};

} // namespace
