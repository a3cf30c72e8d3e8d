//===- ServingRoles.cpp - Finding token ids, the KV cache and logits ------===//
#include "lockstep/Serving/ServingRoles.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "lockstep/Artifact/ServingKeys.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;
namespace K = lockstep::serving_keys;

namespace {

/// `v` with the ops that pass a tensor on unchanged looked through
/// (Identity, Cast, a Concat of one input), and with `reshapes`, the ops that
/// only change how its elements are grouped (Reshape, Unsqueeze, Squeeze):
/// token ids are often flattened before the embedding lookup.
Value strip(Value v, bool reshapes = false) {
  while (Operation *d = v.getDefiningOp()) {
    if (isa<IdentityOp, CastOp>(d) || (isa<ConcatOp>(d) && d->getNumOperands() == 1) ||
        (reshapes && isa<ReshapeOp, UnsqueezeOp, SqueezeOp>(d)))
      v = d->getOperand(0);
    else
      break;
  }
  return v;
}

/// Whether input `i` of `main` is the positions: named so (its ONNX name
/// holds "position", or is "pos"), or read by a Sin or Cos, as rotary
/// embeddings compute their angles from positions. Another integer [batch,
/// seq] input (token type ids, say) must never be fed positions.
bool isPositions(func::FuncOp main, unsigned i) {
  if (auto n = main.getArgAttrOfType<StringAttr>(i, "onnx.name")) {
    std::string lower = n.getValue().lower();
    if (lower.find("position") != std::string::npos || lower == "pos")
      return true;
  }
  SmallVector<Value> work{main.getArgument(i)};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (Operation *user : v.getUsers()) {
      if (isa<SinOp, CosOp>(user))
        return true;
      for (Value r : user->getResults())
        work.push_back(r);
    }
  }
  return false;
}

} // namespace

std::optional<SmallVector<DimExpr>> lockstep::dimsOf(Value v) {
  return getSymbolicDims(v.getType());
}

std::optional<ServingRoles> lockstep::findServingRoles(func::FuncOp main,
                                                       std::string &why) {
  ServingRoles r;
  unsigned nIn = main.getNumArguments();
  auto isInt = [](Type t) {
    return isa<IntegerType>(cast<ShapedType>(t).getElementType());
  };
  // Token ids: an integer input that a Gather of an embedding weight uses
  // as its indices. Positions may index tables too (learned positions, RoPE
  // caches): the token table is the one with a row per logit (the vocab).
  auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
  std::optional<int64_t> vocab;
  for (Value v : ret.getOperands()) {
    auto t = cast<ShapedType>(v.getType());
    if (t.getRank() == 3 && isa<FloatType>(t.getElementType()) && !t.isDynamicDim(2))
      vocab = vocab && *vocab != t.getDimSize(2) ? -1 : t.getDimSize(2);
  }
  SmallVector<unsigned> candidates, vocabRows;
  for (unsigned i = 0; i < nIn; ++i) {
    BlockArgument a = main.getArgument(i);
    if (!isInt(a.getType()))
      continue;
    bool embeds = false, rowsAreVocab = false;
    main.walk([&](GatherOp g) {
      auto w = g.getData().getDefiningOp<WeightOp>();
      if (strip(g.getIndices(), /*reshapes=*/true) != a || !w)
        return;
      embeds = true;
      auto wt = cast<ShapedType>(w.getType());
      if (vocab && wt.getRank() == 2 && wt.getDimSize(0) == *vocab)
        rowsAreVocab = true;
    });
    if (embeds)
      candidates.push_back(i);
    if (rowsAreVocab)
      vocabRows.push_back(i);
  }
  std::optional<unsigned> ids;
  if (candidates.size() == 1)
    ids = candidates[0];
  else if (vocabRows.size() == 1)
    ids = vocabRows[0];
  if (!ids) {
    why = candidates.empty()
              ? "no integer input indexes an embedding table (token ids)"
              : "several inputs index embedding tables, and not exactly one "
                "table has a row per logit";
    return std::nullopt;
  }
  r.tokenIds = *ids;
  auto idDims = dimsOf(main.getArgument(*ids));
  if (!idDims || idDims->size() != 2 || !(*idDims)[0].asSymbol() ||
      !(*idDims)[1].asSymbol()) {
    why = "the token ids are not [batch, seq] with symbolic dims";
    return std::nullopt;
  }
  r.batch = *(*idDims)[0].asSymbol();
  r.seq = *(*idDims)[1].asSymbol();

  // The cache: outputs that concatenate an input with new rows.
  std::vector<bool> inputUsed(nIn, false), outputUsed(ret.getNumOperands(), false);
  inputUsed[*ids] = true;
  for (unsigned j = 0; j < ret.getNumOperands(); ++j) {
    auto cat = strip(ret.getOperand(j)).getDefiningOp<ConcatOp>();
    if (!cat || cat.getInputs().size() != 2)
      continue;
    auto past = dyn_cast<BlockArgument>(strip(cat.getInputs()[0]));
    if (!past || past.getOwner()->getParentOp() != main)
      continue;
    auto pd = dimsOf(past), od = dimsOf(ret.getOperand(j));
    int64_t rank = pd ? pd->size() : 0;
    int64_t axis = (int64_t)cat.getAxis();
    if (axis < 0)
      axis += rank;
    if (!pd || !od || axis < 0 || axis >= rank || !(*pd)[axis].asSymbol() ||
        (*pd)[0] != (*idDims)[0]) {
      why = "output " + std::to_string(j) + " concatenates an input that is not "
            "a [batch, ..., past, ...] cache";
      return std::nullopt;
    }
    std::string p = *(*pd)[axis].asSymbol();
    if (!r.past.empty() && r.past != p) {
      why = "the cache inputs have different past lengths";
      return std::nullopt;
    }
    r.past = p;
    if ((*od)[axis] != (*pd)[axis] + (*idDims)[1]) {
      why = "output " + std::to_string(j) + " is not the past (" + p +
            ") grown by the new tokens (" + r.seq + ")";
      return std::nullopt;
    }
    r.cache.push_back({past.getArgNumber(), j, (unsigned)axis});
    inputUsed[past.getArgNumber()] = true;
    outputUsed[j] = true;
  }
  if (r.cache.empty()) {
    why = "no output concatenates a past input with new rows (a KV cache)";
    return std::nullopt;
  }
  // Positions and an attention mask.
  DimExpr total = DimExpr::symbol(r.past) + (*idDims)[1];
  for (unsigned i = 0; i < nIn; ++i) {
    if (inputUsed[i])
      continue;
    auto d = dimsOf(main.getArgument(i));
    if (d && isInt(main.getArgument(i).getType()) && *d == *idDims) {
      auto n = main.getArgAttrOfType<StringAttr>(i, "onnx.name");
      std::string name = "input " + std::to_string(i) + (n ? " '" + n.getValue().str() + "'" : "");
      if (r.positions) {
        why = name + " is a second integer [batch, seq] input besides the positions";
        return std::nullopt;
      }
      if (!isPositions(main, i)) {
        why = name + " is an integer [batch, seq] input that is neither named nor used as "
              "positions (no Sin or Cos reads it): Lockstep will not guess what to feed it";
        return std::nullopt;
      }
      r.positions = i;
    } else if (d && d->size() == 2 && (*d)[0] == (*idDims)[0] && (*d)[1] == total &&
               !r.attentionMask) {
      r.attentionMask = i;
    } else {
      why = "input " + std::to_string(i) + " is neither token ids, positions, "
            "an attention mask nor a cache";
      return std::nullopt;
    }
    inputUsed[i] = true;
  }
  // Logits: the one other output.
  std::optional<unsigned> logits;
  for (unsigned j = 0; j < ret.getNumOperands(); ++j) {
    if (outputUsed[j])
      continue;
    auto d = dimsOf(ret.getOperand(j));
    if (logits || !d || d->size() != 3 || (*d)[0] != (*idDims)[0] ||
        (*d)[1] != (*idDims)[1] || !(*d)[2].getConstant()) {
      why = "output " + std::to_string(j) + " is not the one [batch, seq, vocab] logits";
      return std::nullopt;
    }
    logits = j;
  }
  if (!logits) {
    why = "no logits output";
    return std::nullopt;
  }
  r.logits = *logits;
  findContextLimit(main, r);
  return r;
}

std::vector<std::pair<std::string, std::string>>
lockstep::servingProperties(const ServingRoles &r) {
  std::vector<std::pair<std::string, std::string>> p;
  auto num = [](unsigned v) { return std::to_string(v); };
  p.push_back({K::kTokenIds, num(r.tokenIds)});
  if (r.positions)
    p.push_back({K::kPositions, num(*r.positions)});
  if (r.attentionMask)
    p.push_back({K::kAttentionMask, num(*r.attentionMask)});
  p.push_back({K::kLogits, num(r.logits)});
  p.push_back({K::kBatch, r.batch});
  p.push_back({K::kSeq, r.seq});
  p.push_back({K::kPast, r.past});
  p.push_back({K::kCacheStreams, num(r.cache.size())});
  for (size_t i = 0; i < r.cache.size(); ++i)
    p.push_back({K::cache(i),
                 num(r.cache[i].past) + " " + num(r.cache[i].present) + " " +
                     num(r.cache[i].axis)});
  if (r.maxContext) {
    p.push_back({K::kMaxContext, std::to_string(*r.maxContext)});
    p.push_back({K::kMaxContextAt, r.maxContextAt});
  }
  return p;
}
