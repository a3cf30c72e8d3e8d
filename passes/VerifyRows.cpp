//===- VerifyRows.cpp - The lockstep-verify-rows pass ---------------------===//
//
// Proves that a ragged step keeps requests apart: apart from
// lockstep.paged_attention, which reads each token's own request by
// construction, no op may combine the rows of different tokens, since the
// tokens of a step belong to different requests.
//
// The proof works on the symbolic dims of the onnx form. A tensor's token
// axis is the one whose dim mentions the step's token count `seq` (the
// dim of the `positions` input). Each op is checked against what its ONNX
// semantics do to that axis:
//
//   - elementwise ops and Expand: broadcasting keeps token axes aligned;
//   - reductions, Softmax, LayerNormalization, CumSum, Trilu, Split,
//     Concat, Gather's axis, Slice: must not run along the token axis (a
//     Slice may keep it whole);
//   - MatMul and Gemm: the token axis must not be contracted;
//   - Reshape, Flatten, Squeeze, Unsqueeze: must keep each token's elements
//     together (the same [rows, elements per row] view before and after);
//   - Transpose: moves the axis, always fine;
//   - a tensor with two token axes pairs tokens: refused where it is made;
//   - Range over the token count, and sizes that mention it used as data,
//     give a token its index in the step: refused;
//   - any other op that reads a token axis is refused: nothing unproven
//     passes.
//
// The pass runs on functions made by lockstep-ragged-step; others are left
// alone. Errors are located at the ONNX node.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/Passes/Passes.h"
#include "lockstep/Serving/ServingRoles.h"

namespace lockstep {
#define GEN_PASS_DEF_VERIFYROWS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

using Dims = SmallVector<DimExpr>;

/// Constant integers of a 1-D (or 0-D) value: a Constant, or known sizes.
std::optional<SmallVector<int64_t>> constInts(Value v) {
  if (!v)
    return std::nullopt;
  Operation *d = v.getDefiningOp();
  if (!d)
    return std::nullopt;
  if (auto c = dyn_cast<ConstantOp>(d))
    if (auto e = dyn_cast<DenseIntElementsAttr>(c.getValue())) {
      SmallVector<int64_t> out;
      for (const APInt &i : e.getValues<APInt>())
        out.push_back(i.getSExtValue());
      return out;
    }
  if (auto sym = d->getAttrOfType<DimsAttr>("onnx.sym")) {
    SmallVector<int64_t> out;
    for (const DimExpr &e : sym.getExprs()) {
      if (!e.getConstant())
        return std::nullopt;
      out.push_back(*e.getConstant());
    }
    return out;
  }
  return std::nullopt;
}

DimExpr product(ArrayRef<DimExpr> dims) {
  DimExpr p(1);
  for (const DimExpr &d : dims)
    p = p * d;
  return p;
}

struct RowChecker {
  std::string seq;
  mutable func::FuncOp func;

  /// The token axes of a value: the dims that mention seq.
  SmallVector<int64_t> axes(Value v) const {
    SmallVector<int64_t> out;
    Dims d = symbolicDimsOrEmpty(v);
    for (auto [i, e] : llvm::enumerate(d))
      if (e.mentions(seq))
        out.push_back(i);
    return out;
  }
  std::optional<int64_t> axis(Value v) const {
    auto a = axes(v);
    return a.empty() ? std::nullopt : std::optional<int64_t>(a.front());
  }
  int64_t rank(Value v) const { return cast<ShapedType>(v.getType()).getRank(); }
  bool reads(Operation *op) const {
    return llvm::any_of(op->getOperands(), [&](Value v) { return axis(v).has_value(); });
  }

  /// An axis attribute or input, normalized; nullopt when unknown.
  static std::optional<int64_t> norm(int64_t a, int64_t rank) {
    if (a < -rank || a >= rank)
      return std::nullopt;
    return a < 0 ? a + rank : a;
  }

  LogicalResult fail(Operation *op, const Twine &why) const {
    return op->emitError("mixes the rows of different requests: ") << why;
  }

  /// Every operand's token axis lines up with the result's, right-aligned.
  LogicalResult aligned(Operation *op, ValueRange ins, Value out) const {
    std::optional<int64_t> o = axis(out);
    for (Value in : ins) {
      std::optional<int64_t> a = axis(in);
      if (!a)
        continue;
      if (!o || rank(out) - *o != rank(in) - *a)
        return fail(op, "its operands' token axes do not line up with its result's");
    }
    return success();
  }

  /// `axes` (normalized) do not include the token axis of `in`.
  LogicalResult notAlong(Operation *op, Value in, ArrayRef<int64_t> along,
                         StringRef what) const {
    std::optional<int64_t> a = axis(in);
    if (a && llvm::is_contained(along, *a))
      return fail(op, Twine(what) + " along the token axis");
    return success();
  }

  /// A reshape keeps rows: the same [tokens, elements per token] view.
  LogicalResult keepsRows(Operation *op, Value in, Value out) const {
    std::optional<int64_t> a = axis(in), b = axis(out);
    if (!a && !b)
      return success();
    if (!a || !b)
      return fail(op, "it reshapes the token axis away");
    Dims di = symbolicDimsOrEmpty(in), dout = symbolicDimsOrEmpty(out);
    DimExpr rowsIn = product(ArrayRef<DimExpr>(di).take_front(*a + 1)),
            rowsOut = product(ArrayRef<DimExpr>(dout).take_front(*b + 1));
    DimExpr perIn = product(ArrayRef<DimExpr>(di).drop_front(*a + 1)),
            perOut = product(ArrayRef<DimExpr>(dout).drop_front(*b + 1));
    if (rowsIn != rowsOut || perIn != perOut)
      return fail(op, "it regroups elements across tokens");
    return success();
  }

  LogicalResult check(Operation *op) const {
    for (Value r : op->getResults())
      if (axes(r).size() > 1)
        return fail(op, "its result pairs tokens with tokens");
    // Sizes that count the step's tokens, used as data.
    if (!isa<ReshapeOp, ExpandOp, ConstantOfShapeOp, SliceOp, UnsqueezeOp, SqueezeOp,
             SplitOp, ShapeOp>(op) &&
        !op->hasAttr("onnx.sym"))
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp())
          if (auto sym = d->getAttrOfType<DimsAttr>("onnx.sym"))
            for (const DimExpr &e : sym.getExprs())
              if (e.mentions(seq))
                return fail(op, "it computes with the number of tokens in the step");
    if (isa<ls::PagedAttentionOp>(op))
      return success(); // reads each token's own request, by construction
    if (isa<ls::AttentionOp>(op))
      return fail(op, "a lockstep.attention over the step's tokens is left");
    if (isa<RangeOp>(op))
      return axis(op->getResult(0)) ? fail(op, "it numbers the tokens of the step")
                                    : success();
    if (!reads(op) || isa<ShapeOp>(op))
      return success(); // a Shape reads sizes, not rows
    if (isa<NegOp, AbsOp, SqrtOp, ReciprocalOp, ExpOp, LogOp, TanhOp, ErfOp, SigmoidOp, SinOp,
            CosOp, ReluOp, NotOp, IdentityOp, IsNaNOp, GeluOp, AddOp, SubOp, MulOp, DivOp,
            PowOp, EqualOp, LessOp, LessOrEqualOp, GreaterOp, GreaterOrEqualOp, AndOp, OrOp,
            MaxOp, MinOp, SumOp, WhereOp, CastOp, CastLikeOp>(op))
      return aligned(op, op->getOperands(), op->getResult(0));
    if (auto e = dyn_cast<ExpandOp>(op))
      return aligned(op, e.getInput(), e.getOutput());
    if (isa<TransposeOp>(op))
      return success();
    if (isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(op))
      return keepsRows(op, op->getOperand(0), op->getResult(0));
    if (auto s = dyn_cast<SoftmaxOp>(op)) {
      auto a = norm(s.getAxis(), rank(s.getInput()));
      if (!a)
        return fail(op, "its axis is out of range");
      return notAlong(op, s.getInput(), {*a}, "a softmax");
    }
    if (auto l = dyn_cast<LayerNormalizationOp>(op)) {
      auto a = norm(l.getAxis(), rank(l.getX()));
      if (!a)
        return fail(op, "its axis is out of range");
      SmallVector<int64_t> along;
      for (int64_t i = *a; i < rank(l.getX()); ++i)
        along.push_back(i);
      if (failed(notAlong(op, l.getX(), along, "a normalization")))
        return failure();
      return aligned(op, op->getOperands(), op->getResult(0));
    }
    if (isa<ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp>(op)) {
      Value in = op->getOperand(0);
      int64_t r = rank(in);
      std::optional<SmallVector<int64_t>> ax;
      if (op->getNumOperands() > 1)
        ax = constInts(op->getOperand(1));
      else if (auto attr = op->getAttrOfType<DenseI64ArrayAttr>("axes"))
        ax = SmallVector<int64_t>(attr.asArrayRef());
      else
        ax = SmallVector<int64_t>(); // all axes, below
      if (!ax)
        return fail(op, "its axes are not constant");
      SmallVector<int64_t> along;
      if (ax->empty())
        for (int64_t i = 0; i < r; ++i)
          along.push_back(i);
      for (int64_t a : *ax)
        if (auto n = norm(a, r))
          along.push_back(*n);
      return notAlong(op, in, along, "a reduction");
    }
    if (auto c = dyn_cast<CumSumOp>(op)) {
      auto ax = constInts(c.getAxis());
      std::optional<int64_t> a = ax && ax->size() == 1 ? norm((*ax)[0], rank(c.getX()))
                                                       : std::nullopt;
      if (!a)
        return fail(op, "its axis is not constant");
      return notAlong(op, c.getX(), {*a}, "a cumulative sum");
    }
    if (auto t = dyn_cast<TriluOp>(op)) {
      int64_t r = rank(t.getInput());
      return notAlong(op, t.getInput(), {r - 2, r - 1}, "a triangle");
    }
    if (auto c = dyn_cast<ConcatOp>(op)) {
      auto a = norm(c.getAxis(), rank(c.getResult()));
      if (!a)
        return fail(op, "its axis is out of range");
      for (Value in : c.getInputs())
        if (failed(notAlong(op, in, {*a}, "a concatenation")))
          return failure();
      return aligned(op, c.getInputs(), c.getResult());
    }
    if (auto s = dyn_cast<SplitOp>(op)) {
      auto a = norm(s.getAxis(), rank(s.getInput()));
      if (!a)
        return fail(op, "its axis is out of range");
      return notAlong(op, s.getInput(), {*a}, "a split");
    }
    if (auto s = dyn_cast<SliceOp>(op)) {
      std::optional<int64_t> a = axis(s.getData());
      if (!a)
        return success();
      int64_t r = rank(s.getData());
      auto ax = s.getAxes() ? constInts(s.getAxes()) : std::nullopt;
      auto steps = s.getSteps() ? constInts(s.getSteps()) : std::nullopt;
      if (s.getAxes() && !ax)
        return fail(op, "its axes are not constant");
      auto starts = constInts(s.getStarts());
      size_t n = starts ? starts->size() : 0;
      for (size_t i = 0; i < n; ++i) {
        int64_t axI = ax ? (*ax)[i] : int64_t(i);
        if (norm(axI, r) != a)
          continue;
        bool whole = (*starts)[i] == 0 && (!steps || (*steps)[i] == 1) &&
                     symbolicDimsOrEmpty(s.getData())[*a] ==
                         symbolicDimsOrEmpty(op->getResult(0))[*a];
        if (!whole)
          return fail(op, "a slice along the token axis");
      }
      if (!starts)
        return fail(op, "its starts are not constant");
      return success();
    }
    if (auto m = dyn_cast<MatMulOp>(op)) {
      int64_t ra = rank(m.getA()), rb = rank(m.getB());
      if (failed(notAlong(op, m.getA(), {ra - 1}, "a contraction")) ||
          failed(notAlong(op, m.getB(), {rb >= 2 ? rb - 2 : 0}, "a contraction")))
        return failure();
      return success(); // the result's token axes were checked above
    }
    if (auto g = dyn_cast<GemmOp>(op)) {
      if (axis(g.getB()))
        return fail(op, "a Gemm whose weights are token rows");
      std::optional<int64_t> a = axis(g.getA());
      int64_t k = g->getAttrOfType<IntegerAttr>("transA") &&
                          g->getAttrOfType<IntegerAttr>("transA").getInt()
                      ? 0
                      : 1;
      if (a && *a == k)
        return fail(op, "a contraction along the token axis");
      return success();
    }
    if (auto g = dyn_cast<GatherOp>(op)) {
      auto a = norm(g.getAxis(), rank(g.getData()));
      if (!a)
        return fail(op, "its axis is out of range");
      if (axis(g.getData()) && axis(g.getIndices()))
        return fail(op, "it gathers token rows by token values");
      // Whole token rows picked by the runtime (the rows whose logits it
      // wants): each result row is one token's row.
      if (auto arg = dyn_cast<BlockArgument>(g.getIndices()))
        if (auto role = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lockstep.role");
            role && role.getValue() == "ragged.logit_rows")
          return success();
      return notAlong(op, g.getData(), {*a}, "a gather");
    }
    if (auto g = dyn_cast<GatherNDOp>(op)) {
      // Indices [.., k] select along the first k dims of the data.
      auto it = cast<ShapedType>(g.getIndices().getType());
      int64_t k = it.getRank() ? it.getShape().back() : ShapedType::kDynamic;
      std::optional<int64_t> a = axis(g.getData());
      if (g.getBatchDims() != 0 || ShapedType::isDynamic(k))
        return fail(op, "a GatherND with batch dims or an unknown index depth");
      if (a && axis(g.getIndices()))
        return fail(op, "it gathers token rows by token values");
      if (a && *a < k)
        return fail(op, "a gather along the token axis");
      return success();
    }
    return fail(op, "lockstep cannot show that this op keeps tokens apart");
  }
};

struct VerifyRowsPass : public lockstep::impl::VerifyRowsBase<VerifyRowsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !isRaggedStep(func))
      return;
    std::optional<std::string> seq;
    for (BlockArgument a : func.getArguments()) {
      auto role = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), "lockstep.role");
      Dims d = symbolicDimsOrEmpty(a);
      if (role && role.getValue() == "ragged.positions" && d.size() == 1)
        seq = d[0].asSymbol();
    }
    if (!seq) {
      func.emitError("a ragged step without [seq] positions");
      return signalPassFailure();
    }
    RowChecker c{*seq, func};
    bool failed = false;
    func.walk([&](Operation *op) {
      if (isa<func::FuncOp, func::ReturnOp>(op))
        return;
      if (mlir::failed(c.check(op)))
        failed = true;
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
