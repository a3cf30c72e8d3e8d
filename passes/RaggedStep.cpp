//===- RaggedStep.cpp - The lockstep-ragged-step pass ---------------------===//
//
// Turns a KV-cache decoder (the serving roles of ServingRoles.h, with its
// attention recognized) into the ragged `step` of the serving ABI: one call
// for the T new tokens of all R requests of a step. The graph is run with
// batch 1 and seq T, so every op that works row by row (projections, norms,
// rotary embeddings, the MLP, the logits) serves all requests at once; what
// is not row by row is replaced:
//
//   - each lockstep.attention over Concat(past, new) keys and values becomes
//     a lockstep.paged_attention over the new rows and the paged pools, with
//     the per-token positions, the requests' token ranges and block tables;
//   - each present output (the past grown by the new rows) becomes the new
//     rows, which the runtime writes into the pools after the step;
//   - positions that the graph computes from the cache length (its own Range,
//     or the shift lockstep-introduce-kv-cache adds) become the step's
//     per-token positions, where they are used: as indices of a position
//     table and as the integers that rotary angles are cast from;
//   - the mask subgraph dies with the attention, and the past and attention
//     mask inputs are erased. Anything else that still reads them is an
//     error at that node: the step cannot know a cache length per request.
//
// Arguments and results get a `lockstep.role` attribute, and the function a
// `lockstep.step = "ragged"` one; the artifact emitter turns them into the
// `serving.*` properties that the runtime reads.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/Passes/Passes.h"
#include "lockstep/Serving/Positions.h"
#include "lockstep/Serving/ServingRoles.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <set>

namespace lockstep {
#define GEN_PASS_DEF_RAGGEDSTEP
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

using Dims = SmallVector<DimExpr>;

Value skipIdentity(Value v) {
  while (auto id = v.getDefiningOp<IdentityOp>())
    v = id->getOperand(0);
  return v;
}

/// `d` with the symbol `sym` bound to 1.
DimExpr withOne(const DimExpr &d, const std::string &sym) {
  DimExpr out(0);
  for (const auto &[mono, c] : d.getTerms()) {
    DimExpr t(c);
    for (const std::string &m : mono)
      if (m != sym)
        t = t * DimExpr::symbol(m);
    out = out + t;
  }
  return out;
}

/// Binds `sym` to 1 in every type and known size of `func`: the ragged
/// step's batch dim, which is 1, becomes a static 1.
void bindToOne(func::FuncOp func, const std::string &sym) {
  auto retype = [&](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    auto d = getSymbolicDims(v.getType());
    if (!t || !d || llvm::none_of(*d, [&](const DimExpr &e) { return e.mentions(sym); }))
      return;
    Dims nd;
    for (const DimExpr &e : *d)
      nd.push_back(withOne(e, sym));
    v.setType(getSymbolicTensorType(t.getElementType(), nd));
  };
  for (BlockArgument a : func.getArguments())
    retype(a);
  func.walk([&](Operation *op) {
    for (Value r : op->getResults())
      retype(r);
    if (auto known = op->getAttrOfType<DimsAttr>("onnx.sym")) {
      Dims nd;
      for (const DimExpr &e : known.getExprs())
        nd.push_back(withOne(e, sym));
      op->setAttr("onnx.sym", DimsAttr::get(op->getContext(), nd));
    }
  });
}

/// The symbols that the function's types mention.
std::set<std::string> usedSymbols(func::FuncOp func) {
  std::set<std::string> used;
  auto add = [&](Value v) {
    for (const DimExpr &d : symbolicDimsOrEmpty(v))
      for (auto &[mono, c] : d.getTerms())
        used.insert(mono.begin(), mono.end());
  };
  for (BlockArgument a : func.getArguments())
    add(a);
  func.walk([&](Operation *op) {
    for (Value r : op->getResults())
      add(r);
  });
  return used;
}

struct RaggedStepPass : public lockstep::impl::RaggedStepBase<RaggedStepPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    std::string why;
    std::optional<ServingRoles> roles = findServingRoles(func, why);
    if (!roles) {
      func.emitError("the ragged step needs a decoder with a KV cache: ") << why;
      return signalPassFailure();
    }
    if (failed(rewrite(func, *roles)))
      return signalPassFailure();
    ++numRagged;
  }

  /// A Shape of an input that goes away (the batch size read from a past)
  /// reads the same dims from the inputs that stay, one Shape per dim.
  LogicalResult readSizesElsewhere(ShapeOp shape, ArrayRef<unsigned> gone) {
    auto sym = shape->getAttrOfType<DimsAttr>("onnx.sym");
    if (!sym)
      return failure();
    auto func = shape->getParentOfType<func::FuncOp>();
    OpBuilder b(shape);
    SmallVector<Value> parts;
    for (const DimExpr &d : sym.getExprs()) {
      Value part;
      for (BlockArgument a : func.getArguments()) {
        if (llvm::is_contained(gone, a.getArgNumber()))
          continue;
        Dims ad = symbolicDimsOrEmpty(a);
        auto it = llvm::find(ad, d);
        if (it == ad.end())
          continue;
        int64_t axis = it - ad.begin();
        auto one = ShapeOp::create(b, shape.getLoc(), RankedTensorType::get({1}, b.getI64Type()),
                                   a, b.getI64IntegerAttr(axis), b.getI64IntegerAttr(axis + 1));
        one->setAttr("onnx.sym", DimsAttr::get(b.getContext(), {d}));
        part = one;
        break;
      }
      if (!part)
        return failure();
      parts.push_back(part);
    }
    Value v = parts.front();
    if (parts.size() > 1) {
      v = ConcatOp::create(b, shape.getLoc(), shape.getType(), parts, b.getI64IntegerAttr(0));
      v.getDefiningOp()->setAttr("onnx.sym", sym);
    }
    shape.getResult().replaceAllUsesWith(v);
    shape.erase();
    return success();
  }

  /// `positions` [seq] (i64) plus `add`, as a value of dims `d` (leading
  /// dims of 1, then seq: the batch dim is bound to 1 already) and element
  /// type `elt`.
  FailureOr<Value> shapedPositions(OpBuilder &b, Operation *at, const ServingRoles &roles,
                                   Value positions, const Dims &d, Type elt, int64_t add) {
    Location loc = at->getLoc();
    DimExpr seq = DimExpr::symbol(roles.seq);
    SmallVector<int64_t> axes;
    for (unsigned i = 0; i + 1 < d.size(); ++i)
      if (d[i] == DimExpr(1))
        axes.push_back(i);
    if (d.empty() || d.back() != seq || axes.size() + 1 != d.size())
      return at->emitError("the ragged step cannot give these positions: they "
                           "are not [1, ..., seq]");
    auto i64 = b.getI64Type();
    Value p = positions;
    if (add) {
      auto t1 = RankedTensorType::get({1}, i64);
      Value c = ConstantOp::create(b, loc, t1, DenseElementsAttr::get(t1, ArrayRef<int64_t>{add}));
      p = AddOp::create(b, loc, p.getType(), p, c);
    }
    if (!axes.empty())
      p = UnsqueezeOp::create(b, loc, getSymbolicTensorType(i64, d), p, Value(),
                              b.getDenseI64ArrayAttr(axes));
    if (elt != i64) {
      int64_t to = isa<FloatType>(elt) ? (elt.isF64() ? 11 : 1)
                   : cast<IntegerType>(elt).getWidth() == 32 ? 6 : 7;
      p = CastOp::create(b, loc, getSymbolicTensorType(elt, d), p, b.getI64IntegerAttr(to),
                         b.getI64IntegerAttr(1));
    }
    return p;
  }

  /// Whether `v` is all ones: a 1 broadcast by Expand or ConstantOfShape.
  static bool allOnes(Value v) {
    while (auto c = v.getDefiningOp<CastOp>())
      v = c.getInput();
    Operation *d = v.getDefiningOp();
    Attribute value;
    if (auto e = dyn_cast_or_null<ExpandOp>(d))
      if (auto c = e.getInput().getDefiningOp<ConstantOp>())
        value = c.getValue();
    if (auto c = dyn_cast_or_null<ConstantOfShapeOp>(d))
      value = c->getAttr("value");
    auto dense = dyn_cast_or_null<DenseElementsAttr>(value);
    if (!dense || !dense.isSplat())
      return false;
    if (isa<FloatType>(dense.getElementType()))
      return dense.getSplatValue<APFloat>().isExactlyValue(1.0);
    return dense.getSplatValue<APInt>() == 1;
  }

  /// Replaces the sources of the positions that `use` reads (see above).
  LogicalResult replacePositionSources(func::FuncOp func, const ServingRoles &roles,
                                       OpOperand *use, Value positions) {
    DimExpr seq = DimExpr::symbol(roles.seq);
    llvm::SmallPtrSet<Operation *, 32> seen;
    SmallVector<Value> work{use->get()};
    bool found = false;
    auto isPastLength = [&](Value v) {
      auto s = v.getDefiningOp<ShapeOp>();
      if (!s)
        return false;
      auto a = dyn_cast<BlockArgument>(s.getData());
      return a && llvm::any_of(roles.cache, [&](const ServingRoles::Stream &c) {
               return c.past == a.getArgNumber();
             });
    };
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *d = v.getDefiningOp();
      if (!d || !seen.insert(d).second || isa<WeightOp, ConstantOp, ShapeOp>(d))
        continue;
      OpBuilder b(d);
      Dims dims = symbolicDimsOrEmpty(v);
      auto elt = cast<RankedTensorType>(v.getType()).getElementType();
      if (auto r = dyn_cast<RangeOp>(d); r && dims.size() == 1 && dims[0] == seq) {
        auto p = shapedPositions(b, d, roles, positions, dims, elt, 0);
        if (failed(p))
          return failure();
        v.replaceAllUsesWith(*p);
        found = true;
        continue;
      }
      if (auto c = dyn_cast<CumSumOp>(d)) {
        auto ax = c.getAxis().getDefiningOp<ConstantOp>();
        auto axv = ax ? dyn_cast<DenseIntElementsAttr>(ax.getValue()) : nullptr;
        int64_t axis = axv && axv.getNumElements() == 1
                           ? (*axv.getValues<APInt>().begin()).getSExtValue()
                           : -1000;
        if (axis < 0)
          axis += (int64_t)dims.size();
        if (axis >= 0 && axis < (int64_t)dims.size() && dims[axis] == seq &&
            axis + 1 == (int64_t)dims.size() && allOnes(c.getX()) && !c.getExclusive() &&
            !c.getReverse()) {
          // 1, 2, .. along the sequence: position + 1.
          auto p = shapedPositions(b, d, roles, positions, dims, elt, 1);
          if (failed(p))
            return failure();
          v.replaceAllUsesWith(*p);
          found = true;
          continue;
        }
      }
      if (auto a = dyn_cast<AddOp>(d)) {
        // lockstep-introduce-kv-cache's shift by the past length.
        for (unsigned i = 0; i < 2; ++i)
          if (isPastLength(a->getOperand(i)) && a->getOperand(1 - i).getType() == v.getType()) {
            Value x = a->getOperand(1 - i);
            v.replaceAllUsesWith(x);
            work.push_back(x);
            break;
          }
        if (v.use_empty())
          continue;
      }
      for (Value o : d->getOperands())
        work.push_back(o);
    }
    if (!found)
      return use->getOwner()->emitError(
          "the ragged step cannot tell these positions: no Range or CumSum over "
          "the new tokens computes them");
    return success();
  }

  /// Computes the logits only for the rows the runtime asks for: the one
  /// MatMul (or Gemm) that makes them, through ops that keep rows apart,
  /// reads its hidden states gathered at `logit_rows` [rows], and the ops
  /// after it are [.., rows, vocab]. Returns false, changing nothing, when
  /// the logits are not made that way (they are then computed for every
  /// token).
  bool selectLogitRows(func::FuncOp func, const ServingRoles &roles, Value &rowsArg,
                       DimExpr rows) {
    Operation *ret = func.getBody().front().getTerminator();
    DimExpr seq = DimExpr::symbol(roles.seq);
    auto hasSeq = [&](Value v) {
      return llvm::any_of(symbolicDimsOrEmpty(v), [&](const DimExpr &d) { return d == seq; });
    };
    Value v = ret->getOperand(roles.logits);
    SmallVector<Operation *> chain;
    Operation *mm = nullptr;
    while (Operation *d = v.getDefiningOp()) {
      if (!d->hasOneUse() || d->getNumResults() != 1)
        return false;
      if (isa<MatMulOp>(d) || (isa<GemmOp>(d) && d->getNumOperands() == 2)) {
        mm = d;
        break;
      }
      bool unary = isa<IdentityOp, CastOp, TanhOp, SigmoidOp, NegOp>(d);
      bool binary = isa<AddOp, SubOp, MulOp, DivOp>(d) &&
                    (hasSeq(d->getOperand(0)) != hasSeq(d->getOperand(1)));
      if (!unary && !binary)
        return false;
      chain.push_back(d);
      v = hasSeq(d->getOperand(0)) ? d->getOperand(0) : d->getOperand(1);
    }
    if (!mm || hasSeq(mm->getOperand(1)))
      return false;
    Value hidden = mm->getOperand(0);
    Dims hd = symbolicDimsOrEmpty(hidden);
    int64_t axis = -1;
    for (auto [i, e] : llvm::enumerate(hd))
      if (e.mentions(roles.seq))
        axis = axis < 0 && e == seq ? int64_t(i) : -2;
    if (axis < 0 || axis + 1 == (int64_t)hd.size() || (isa<GemmOp>(mm) && axis != 0))
      return false;
    OpBuilder b(mm);
    rowsArg = func.getArgument(func.getNumArguments() - 1);
    auto retype = [&](Value x) {
      Dims d = symbolicDimsOrEmpty(x);
      for (DimExpr &e : d)
        if (e == seq)
          e = rows;
      x.setType(getSymbolicTensorType(cast<RankedTensorType>(x.getType()).getElementType(), d));
    };
    auto g = GatherOp::create(b, mm->getLoc(), hidden.getType(), hidden, rowsArg,
                              b.getI64IntegerAttr(axis));
    retype(g.getResult());
    mm->setOperand(0, g.getResult());
    retype(mm->getResult(0));
    for (Operation *op : llvm::reverse(chain))
      retype(op->getResult(0));
    return true;
  }

  LogicalResult rewrite(func::FuncOp func, const ServingRoles &roles) {
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    Block &body = func.getBody().front();
    Operation *ret = body.getTerminator();
    // The batch dim is 1: static from here on (the tokens of all requests
    // share the seq dim).
    bindToOne(func, roles.batch);
    func.setType(FunctionType::get(ctx, body.getArgumentTypes(), ret->getOperandTypes()));

    // The cache streams: Concat(past, new) along axis 2 of [batch, H, past, D].
    struct Stream {
      Value fresh;
      unsigned pool = 0; // argument index, once added
    };
    SmallVector<Stream> streams;
    llvm::DenseMap<Value, unsigned> streamOf; // the Concat's result
    for (const ServingRoles::Stream &s : roles.cache) {
      Value present = skipIdentity(ret->getOperand(s.present));
      auto cat = present.getDefiningOp<ConcatOp>();
      Dims pd = symbolicDimsOrEmpty(func.getArgument(s.past));
      if (!cat || s.axis != 2 || pd.size() != 4 || !pd[1].getConstant() ||
          !pd[3].getConstant())
        return (cat ? cat.getOperation() : ret)->emitError(
                   "the ragged step needs caches of [batch, heads, positions, head "
                   "size] grown along axis 2");
      streamOf[present] = streams.size();
      streams.push_back({cat.getInputs()[1]});
    }
    SmallVector<ls::AttentionOp> attention;
    func.walk([&](ls::AttentionOp a) { attention.push_back(a); });
    if (attention.empty())
      return func.emitError("the ragged step needs the attention recognized "
                            "(lockstep-recognize-attention found none)");
    for (ls::AttentionOp a : attention)
      if (!servingCausalWindow(a)) {
        auto why = a->getAttrOfType<StringAttr>(kMaskUnprovenAttr);
        return a.emitError("the ragged step serves attention whose mask is proven "
                           "causal or a sliding window; this one's is not (")
               << (why ? why.getValue() : StringRef("no mask")) << ")";
      }
    for (ls::AttentionOp a : attention)
      if (!streamOf.count(skipIdentity(a.getKey())) ||
          !streamOf.count(skipIdentity(a.getValue())))
        return a.emitError("the ragged step needs attention over the cache "
                           "(its keys and values are not a past grown by new rows)");
    for (Operation &op : body)
      if (isa<SoftmaxOp>(op))
        return op.emitError("a softmax that is not a recognized attention: "
                            "the ragged step cannot tell whether it mixes requests");

    // Fresh symbols for the step's sizes.
    std::set<std::string> used = usedSymbols(func);
    auto fresh = [&](std::string n) {
      while (used.count(n))
        n += "_";
      used.insert(n);
      return DimExpr::symbol(n);
    };
    DimExpr requests = fresh("requests"), maxBlocks = fresh("max_blocks"),
             blocks = fresh("blocks"), blockSize = fresh("block_size");
    DimExpr seq = DimExpr::symbol(roles.seq);
    auto addArg = [&](Type t, StringRef name, StringRef role) {
      unsigned idx = func.getNumArguments();
      (void)func.insertArgument(
          idx, t,
          b.getDictionaryAttr({b.getNamedAttr("onnx.name", b.getStringAttr(name)),
                               b.getNamedAttr("lockstep.role", b.getStringAttr(role))}),
          func.getLoc());
      return func.getArgument(idx);
    };
    Value positions = addArg(getSymbolicTensorType(b.getI64Type(), {seq}), "positions",
                             "ragged.positions");
    Value seqStarts = addArg(getSymbolicTensorType(b.getI64Type(), {requests + DimExpr(1)}),
                             "seq_starts", "ragged.seq_starts");
    Value tables = addArg(getSymbolicTensorType(b.getI32Type(), {requests, maxBlocks}),
                          "block_tables", "ragged.block_tables");
    auto argName = [&](unsigned i) {
      auto n = func.getArgAttrOfType<StringAttr>(i, "onnx.name");
      return n ? n.str() : "input" + std::to_string(i);
    };
    for (auto [s, st] : llvm::enumerate(streams)) {
      unsigned past = roles.cache[s].past;
      Dims pd = symbolicDimsOrEmpty(func.getArgument(past));
      auto elt = cast<RankedTensorType>(func.getArgument(past).getType()).getElementType();
      st.pool = addArg(getSymbolicTensorType(elt, {blocks, blockSize, pd[1], pd[3]}),
                       argName(past) + ".pool", "pool." + std::to_string(s))
                    .getArgNumber();
    }

    // Attention over the pools.
    for (ls::AttentionOp a : attention) {
      const Stream &k = streams[streamOf[skipIdentity(a.getKey())]];
      const Stream &v = streams[streamOf[skipIdentity(a.getValue())]];
      b.setInsertionPoint(a);
      auto p = ls::PagedAttentionOp::create(
          b, a.getLoc(), a.getOutput().getType(), a.getQuery(), k.fresh, v.fresh,
          func.getArgument(k.pool), func.getArgument(v.pool), positions, seqStarts, tables,
          a.getKeyScale(), a.getScale(), a.getScaleDivides(), a.getZeroEmptyRows(),
          servingWindowAttr(b, a),
          a.getSoftcapAttr());
      if (failed(mlir::verify(p))) // the diagnostic names the node
        return failure();
      a.getOutput().replaceAllUsesWith(p.getOutput());
      a.erase();
    }
    // Presents become the new rows.
    for (auto [s, st] : llvm::enumerate(streams)) {
      unsigned out = roles.cache[s].present;
      ret->setOperand(out, st.fresh);
      auto n = func.getResultAttrOfType<StringAttr>(out, "onnx.name");
      func.setResultAttr(out, "onnx.name",
                         b.getStringAttr((n ? n.str() : "present" + std::to_string(s)) + ".new"));
      func.setResultAttr(out, "lockstep.role", b.getStringAttr("new." + std::to_string(s)));
    }
    func.setResultAttr(roles.logits, "lockstep.role", b.getStringAttr("logits"));

    // Positions the graph computes become the step's: where a position
    // table or rotary angles read them, their sources (a Range over the new
    // tokens, from 0 or from the past length; a CumSum of ones along them)
    // become the step's positions, and the past-length shifts that
    // lockstep-introduce-kv-cache added go, so that offsets the graph adds
    // (OPT's +2) stay.
    eraseDeadOps(body);
    for (OpOperand *use : computedPositionUses(func, roles.seq))
      if (failed(replacePositionSources(func, roles, use, positions)))
        return failure();
    eraseDeadOps(body);

    // The past and the attention mask must be dead now.
    llvm::BitVector erase(func.getNumArguments());
    SmallVector<unsigned> gone;
    for (const ServingRoles::Stream &s : roles.cache)
      gone.push_back(s.past);
    if (roles.attentionMask)
      gone.push_back(*roles.attentionMask);
    for (unsigned i : gone) {
      BlockArgument arg = func.getArgument(i);
      for (Operation *user : llvm::make_early_inc_range(arg.getUsers()))
        if (auto shape = dyn_cast<ShapeOp>(user))
          (void)readSizesElsewhere(shape, gone);
      if (!arg.use_empty())
        return (*arg.getUsers().begin())
                   ->emitError("the ragged step cannot serve this graph: this node "
                               "reads input '")
               << argName(i) << "', which has no per-request meaning in a ragged step";
      erase.set(i);
    }
    func.setArgAttr(roles.tokenIds, "lockstep.role", b.getStringAttr("token_ids"));
    if (roles.positions)
      func.setArgAttr(*roles.positions, "lockstep.role", b.getStringAttr("positions"));
    (void)func.eraseArguments(erase);
    // Logits for the rows the runtime asks for only.
    DimExpr rows = fresh("rows");
    addArg(getSymbolicTensorType(b.getI64Type(), {rows}), "logit_rows", "ragged.logit_rows");
    Value rowsArg;
    if (!selectLogitRows(func, roles, rowsArg, rows))
      (void)func.eraseArgument(func.getNumArguments() - 1);
    SmallVector<Type> results;
    for (Value r : ret->getOperands())
      results.push_back(r.getType());
    func.setType(FunctionType::get(ctx, body.getArgumentTypes(), results));
    func->setAttr("lockstep.step", b.getStringAttr("ragged"));
    if (roles.maxContext) {
      func->setAttr("lockstep.max_context", b.getI64IntegerAttr(*roles.maxContext));
      func->setAttr("lockstep.max_context_at", b.getStringAttr(roles.maxContextAt));
    }
    return success();
  }
};

} // namespace
