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

bool isInt(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<IntegerType>(t.getElementType()) && !t.getElementType().isInteger(1);
}

bool mentions(ArrayRef<DimExpr> dims, const std::string &sym) {
  return llvm::any_of(dims, [&](const DimExpr &d) { return d.mentions(sym); });
}

/// Whether `v` is computed from a function argument other than through its
/// shape (a Shape op reads sizes, not values).
bool readsAnInput(Value v) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 32> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (isa<BlockArgument>(x))
      return true;
    Operation *d = x.getDefiningOp();
    if (!d || !seen.insert(d).second || isa<ShapeOp>(d))
      continue;
    for (Value o : d->getOperands())
      work.push_back(o);
  }
  return false;
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

/// The uses of positions that the graph computes itself: indices of a
/// position table (a Gather of a weight or constant, other than by an
/// input), and integers cast to floats on the way to Cos or Sin.
llvm::SetVector<OpOperand *> computedPositionUses(func::FuncOp func, const std::string &seq) {
  llvm::SetVector<OpOperand *> uses;
  func.walk([&](Operation *op) {
    if (auto g = dyn_cast<GatherOp>(op)) {
      Operation *table = g.getData().getDefiningOp();
      if (table && isa<WeightOp, ConstantOp>(table) &&
          mentions(symbolicDimsOrEmpty(g.getIndices()), seq) && !readsAnInput(g.getIndices()))
        uses.insert(&g->getOpOperand(1));
      return;
    }
    if (!isa<CosOp, SinOp>(op))
      return;
    SmallVector<Value> work{op->getOperand(0)};
    llvm::SmallPtrSet<Operation *, 32> seen;
    while (!work.empty()) {
      Operation *d = work.pop_back_val().getDefiningOp();
      if (!d || !seen.insert(d).second || isa<WeightOp, ConstantOp, ShapeOp>(d))
        continue;
      if (auto c = dyn_cast<CastOp>(d); c && isInt(c.getInput())) {
        if (mentions(symbolicDimsOrEmpty(c.getInput()), seq) && !readsAnInput(c.getInput()))
          uses.insert(&c->getOpOperand(0));
        continue;
      }
      for (Value o : d->getOperands())
        work.push_back(o);
    }
  });
  return uses;
}

void eraseDeadOps(Block &body) {
  bool changed = true;
  while (changed) {
    SmallVector<Operation *> dead;
    for (Operation &op : body.without_terminator())
      if (op.use_empty() && isMemoryEffectFree(&op))
        dead.push_back(&op);
    for (Operation *op : llvm::reverse(dead))
      op->erase();
    changed = !dead.empty();
  }
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

  LogicalResult rewrite(func::FuncOp func, const ServingRoles &roles) {
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    Block &body = func.getBody().front();
    Operation *ret = body.getTerminator();

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
          a.getKeyScale(), a.getScale(), a.getScaleDivides(), a.getZeroEmptyRows());
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

    // Positions the graph computes become the step's, shaped as they were.
    eraseDeadOps(body);
    for (OpOperand *use : computedPositionUses(func, roles.seq)) {
      auto t = cast<RankedTensorType>(use->get().getType());
      Dims d = symbolicDimsOrEmpty(use->get());
      // Leading dims of 1 or batch (1 in a ragged step), then seq.
      DimExpr batch = DimExpr::symbol(roles.batch);
      SmallVector<int64_t> axes;
      Dims ones;
      bool batched = false;
      for (unsigned i = 0; i + 1 < d.size(); ++i)
        if (d[i] == DimExpr(1) || d[i] == batch) {
          axes.push_back(i);
          ones.push_back(DimExpr(1));
          batched |= d[i] == batch;
        }
      ones.push_back(seq);
      Operation *user = use->getOwner();
      if (d.empty() || d.back() != seq || axes.size() + 1 != d.size())
        return user->emitError("the ragged step cannot give these positions: they "
                               "are not [batch or 1, ..., seq]");
      b.setInsertionPoint(user);
      Value p = positions;
      if (!axes.empty())
        p = UnsqueezeOp::create(b, user->getLoc(),
                                getSymbolicTensorType(b.getI64Type(), ones), p, Value(),
                                b.getDenseI64ArrayAttr(axes));
      if (batched) {
        // Broadcast to [batch, ..]: the shape read from the token ids.
        Value ids = func.getArgument(roles.tokenIds);
        SmallVector<Value> parts;
        for (const DimExpr &e : d) {
          auto part = e == DimExpr(1)
                          ? ConstantOp::create(
                                b, user->getLoc(), RankedTensorType::get({1}, b.getI64Type()),
                                DenseElementsAttr::get(RankedTensorType::get({1}, b.getI64Type()),
                                                       ArrayRef<int64_t>{1}))
                                .getOperation()
                          : ShapeOp::create(b, user->getLoc(),
                                            RankedTensorType::get({1}, b.getI64Type()), ids,
                                            b.getI64IntegerAttr(e == batch ? 0 : 1),
                                            b.getI64IntegerAttr(e == batch ? 1 : 2))
                                .getOperation();
          part->setAttr("onnx.sym", DimsAttr::get(ctx, {e}));
          parts.push_back(part->getResult(0));
        }
        auto shapeType = RankedTensorType::get({(int64_t)d.size()}, b.getI64Type());
        auto shape = ConcatOp::create(b, user->getLoc(), shapeType, parts, b.getI64IntegerAttr(0));
        shape->setAttr("onnx.sym", DimsAttr::get(ctx, d));
        p = ExpandOp::create(b, user->getLoc(), getSymbolicTensorType(b.getI64Type(), d), p,
                             shape);
      }
      if (t.getElementType() != b.getI64Type())
        p = CastOp::create(b, user->getLoc(), getSymbolicTensorType(t.getElementType(), d), p,
                           b.getI64IntegerAttr(cast<IntegerType>(t.getElementType()).getWidth() ==
                                                       32
                                                   ? 6 /*INT32*/
                                                   : 7 /*INT64*/),
                           b.getI64IntegerAttr(1));
      use->set(p);
    }
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
    SmallVector<Type> results;
    for (Value r : ret->getOperands())
      results.push_back(r.getType());
    func.setType(FunctionType::get(ctx, func.getArgumentTypes(), results));
    func->setAttr("lockstep.step", b.getStringAttr("ragged"));
    if (roles.maxContext) {
      func->setAttr("lockstep.max_context", b.getI64IntegerAttr(*roles.maxContext));
      func->setAttr("lockstep.max_context_at", b.getStringAttr(roles.maxContextAt));
    }
    return success();
  }
};

} // namespace
