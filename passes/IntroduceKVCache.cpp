//===- IntroduceKVCache.cpp - The lockstep-introduce-kv-cache pass --------===//
//
// A whole-sequence decoder (token ids in, logits out, no past/present) gets a
// KV cache: for each lockstep.attention, in program order, a past input for
// its keys and one for its values ([.., past, ..] where the keys have the new
// tokens' length), concatenated in front of the new keys and values, which
// become present outputs. The attention reads the concatenation; its mask,
// which lockstep-prove-mask must have proven causal (or a sliding window),
// now counts from absolute position 0 (query i is position past + i). An
// attention with a mask not so proven leaves the graph without a cache.
// Positions that the graph computes itself (from a Range or a CumSum, not from
// an input) are shifted by past where they are used: as indices of a
// position table (a Gather of a weight), and as the integers cast to floats
// that rotary angles are computed from (found backwards from Cos and Sin).
// What is left unused (the mask subgraph, an attention-mask input) is
// erased. The result has the structure of an exported KV-cache graph, so
// the serving roles find it.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/Passes/Passes.h"
#include "lockstep/Serving/Positions.h"
#include "lockstep/Serving/ServingRoles.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace lockstep {
#define GEN_PASS_DEF_INTRODUCEKVCACHE
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

using Dims = SmallVector<DimExpr>;

struct IntroduceKVCachePass
    : public lockstep::impl::IntroduceKVCacheBase<IntroduceKVCachePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    std::string why;
    if (findServingRoles(func, why))
      return; // it has a cache already
    SmallVector<ls::AttentionOp> attention;
    func.walk([&](ls::AttentionOp a) { attention.push_back(a); });
    if (attention.empty())
      return;
    bool leftover = false;
    func.walk([&](SoftmaxOp sm) {
      sm.emitWarning("a softmax that is not a recognized attention: the KV "
                     "cache is not introduced");
      leftover = true;
    });
    if (leftover)
      return;
    // Each attention's mask must be proven a causal kind: the cache turns
    // the whole-sequence mask into one over absolute positions.
    for (ls::AttentionOp a : attention)
      if (!servingCausalWindow(a)) {
        auto why = a->getAttrOfType<StringAttr>(kMaskUnprovenAttr);
        a.emitWarning("attention whose mask is not proven causal or a sliding "
                      "window (")
            << (why ? why.getValue() : StringRef("no mask")) << "): the KV cache is not introduced";
        return;
      }
    // The new tokens' length: the keys' position dim, one symbol, the
    // queries' too.
    std::optional<std::string> seq;
    for (ls::AttentionOp a : attention) {
      Dims q = symbolicDimsOrEmpty(a.getQuery()), k = symbolicDimsOrEmpty(a.getKey()),
           v = symbolicDimsOrEmpty(a.getValue());
      std::optional<std::string> s = k.size() == 4 ? k[2].asSymbol() : std::nullopt;
      if (!s || q.size() != 4 || v.size() != 4 || q[2] != k[2] || v[2] != k[2] ||
          (seq && *seq != *s)) {
        a.emitWarning("attention whose keys are not the new tokens: the KV "
                      "cache is not introduced");
        return;
      }
      seq = s;
    }
    // A fresh symbol for the past length.
    std::set<std::string> used;
    func.walk([&](Operation *op) {
      for (Value r : op->getResults())
        for (const DimExpr &d : symbolicDimsOrEmpty(r))
          for (auto &[mono, c] : d.getTerms())
            used.insert(mono.begin(), mono.end());
    });
    for (BlockArgument arg : func.getArguments())
      for (const DimExpr &d : symbolicDimsOrEmpty(arg))
        for (auto &[mono, c] : d.getTerms())
          used.insert(mono.begin(), mono.end());
    std::string pastName = "past";
    while (used.count(pastName))
      pastName += "_";
    DimExpr past = DimExpr::symbol(pastName), total = past + DimExpr::symbol(*seq);

    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    Block &body = func.getBody().front();
    Operation *ret = body.getTerminator();
    SmallVector<Value> presents;
    SmallVector<std::string> presentNames;
    Value firstPast;
    auto addStream = [&](ls::AttentionOp a, Value fresh, const std::string &name) {
      Dims d = symbolicDimsOrEmpty(fresh);
      auto elt = cast<RankedTensorType>(fresh.getType()).getElementType();
      Dims pd = d, td = d;
      pd[2] = past;
      td[2] = total;
      unsigned idx = func.getNumArguments();
      (void)func.insertArgument(idx, getSymbolicTensorType(elt, pd),
                                b.getDictionaryAttr(b.getNamedAttr(
                                    "onnx.name", b.getStringAttr("past." + name))),
                                a.getLoc());
      Value pastArg = func.getArgument(idx);
      if (!firstPast)
        firstPast = pastArg;
      b.setInsertionPoint(a);
      Value cat = ConcatOp::create(b, a.getLoc(), getSymbolicTensorType(elt, td),
                                   ValueRange{pastArg, fresh}, b.getI64IntegerAttr(2));
      presents.push_back(cat);
      presentNames.push_back("present." + name);
      return cat;
    };
    for (auto [i, a] : llvm::enumerate(attention)) {
      std::string n = std::to_string(i);
      Value k = addStream(a, a.getKey(), n + ".key");
      Value v = addStream(a, a.getValue(), n + ".value");
      b.setInsertionPoint(a);
      auto c = ls::AttentionOp::create(b, a.getLoc(), a.getOutput().getType(), a.getQuery(),
                                       k, v, Value(), Value(), a.getKeyScale(), a.getScale(),
                                       a.getScaleDivides(), a.getZeroEmptyRows(),
                                       /*causal=*/true, servingWindowAttr(b, a), a.getSoftcapAttr());
      a.getOutput().replaceAllUsesWith(c.getOutput());
      a.erase();
    }
    // The past length as a 1-element i64 tensor, read from the first past.
    b.setInsertionPointToStart(&body);
    auto pastLen = ShapeOp::create(b, func.getLoc(),
                                   RankedTensorType::get({1}, b.getI64Type()), firstPast,
                                   b.getI64IntegerAttr(2), b.getI64IntegerAttr(3));
    pastLen->setAttr("onnx.sym", DimsAttr::get(ctx, {past}));
    // Positions computed in the graph, shifted by past at their uses.
    llvm::SetVector<OpOperand *> uses = computedPositionUses(func, *seq);
    for (OpOperand *use : uses) {
      Value pos = use->get();
      b.setInsertionPoint(use->getOwner());
      auto shifted = AddOp::create(b, use->getOwner()->getLoc(), pos.getType(), pos,
                                   pastLen.getResult());
      use->set(shifted);
    }
    // Presents become results.
    SmallVector<Value> results(ret->getOperands());
    unsigned firstNew = results.size();
    results.append(presents.begin(), presents.end());
    ret->setOperands(results);
    SmallVector<Type> types;
    for (Value r : results)
      types.push_back(r.getType());
    func.setType(FunctionType::get(ctx, func.getArgumentTypes(), types));
    for (auto [i, n] : llvm::enumerate(presentNames))
      func.setResultAttr(firstNew + i, "onnx.name", b.getStringAttr(n));
    // Erase what died (the masks), then inputs that nothing reads.
    eraseDeadOps(body);
    // An input read only for its shape (an attention mask whose values fed
    // the mask) gives the same shape through another input of its type.
    for (BlockArgument arg : func.getArguments()) {
      if (arg.use_empty() ||
          !llvm::all_of(arg.getUsers(), [](Operation *u) { return isa<ShapeOp>(u); }))
        continue;
      for (BlockArgument other : func.getArguments())
        if (other != arg && other.getType() == arg.getType() &&
            !llvm::all_of(other.getUsers(), [](Operation *u) { return isa<ShapeOp>(u); })) {
          arg.replaceAllUsesWith(other);
          break;
        }
    }
    llvm::BitVector unused(func.getNumArguments());
    for (BlockArgument arg : func.getArguments())
      if (arg.use_empty())
        unused.set(arg.getArgNumber());
    (void)func.eraseArguments(unused);
    ++numIntroduced;
  }
};

} // namespace
