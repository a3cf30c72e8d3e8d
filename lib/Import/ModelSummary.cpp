//===- ModelSummary.cpp - A human-readable summary of a model -------------===//
#include "lockstep/Import/ModelSummary.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/Serving/Evaluate.h"
#include "lockstep/Serving/ServingRoles.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"
#include "lockstep/Artifact/ServingKeys.h"

#include <map>
#include <set>

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;
namespace K = lockstep::serving_keys;

namespace {

std::string describe(Type type, std::set<std::string> &symbols) {
  std::string out;
  llvm::raw_string_ostream os(out);
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped) {
    os << type;
    return out;
  }
  os << shaped.getElementType();
  auto dims = getSymbolicDims(type);
  if (!dims) {
    os << " (shape unknown)";
    return out;
  }
  os << " [";
  llvm::interleaveComma(*dims, os, [&](const DimExpr &d) {
    os << d.str();
    for (auto &[m, c] : d.getTerms())
      symbols.insert(m.begin(), m.end());
  });
  os << "]";
  return out;
}

} // namespace

void lockstep::printModelSummary(ModuleOp module, llvm::raw_ostream &os) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func) {
    os << "no main function\n";
    return;
  }
  if (auto opset = module->getAttrOfType<IntegerAttr>("onnx.opset"))
    os << "opset:    " << opset.getInt() << "\n";
  if (auto producer = module->getAttrOfType<StringAttr>("onnx.producer"))
    os << "producer: " << producer.getValue() << "\n";
  std::set<std::string> symbols;
  auto name = [](DictionaryAttr attrs, unsigned i) {
    auto n = attrs ? attrs.getAs<StringAttr>("onnx.name") : StringAttr();
    return n ? n.getValue().str() : "#" + std::to_string(i);
  };
  os << "inputs:\n";
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    os << "  " << name(func.getArgAttrDict(i), i) << ": "
       << describe(func.getArgumentTypes()[i], symbols) << "\n";
  os << "outputs:\n";
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    os << "  " << name(func.getResultAttrDict(i), i) << ": "
       << describe(func.getResultTypes()[i], symbols) << "\n";
  // What the serving runtime would feed and read (found from structure).
  std::string why;
  if (isRaggedStep(func)) {
    // One call per step for all requests (lockstep-ragged-step).
    auto props = raggedStepProperties(func, why);
    os << "serving:  ragged step (one call for the new tokens of all requests)";
    if (props) {
      auto argName = [&](const std::string &idx) {
        unsigned i = std::stoul(idx);
        return name(func.getArgAttrDict(i), i);
      };
      auto resName = [&](const std::string &idx) {
        unsigned i = std::stoul(idx);
        return name(func.getResultAttrDict(i), i);
      };
      for (auto &[k, v] : *props) {
        if (k == K::kTokenIds)
          os << "; token ids " << argName(v);
        else if (k == K::kPositions)
          os << ", graph positions " << argName(v);
        else if (k == K::kLogits)
          os << ", logits " << resName(v);
        else if (k == K::kLogitRows)
          os << " at the rows of " << argName(v);
        else if (StringRef(k).starts_with(K::kCachePrefix)) {
          std::string pool = v.substr(0, v.find(' ')), fresh = v.substr(v.find(' ') + 1);
          os << "\n  cache: " << argName(pool) << " <- " << resName(fresh);
        } else if (k == K::kMaxContext)
          os << "\n  context: at most " << v << " tokens";
        else if (k == K::kMaxContextAt)
          os << " (" << v << ")";
      }
      os << "\n";
    } else {
      os << " (" << why << ")\n";
    }
  } else if (auto r = findServingRoles(func, why)) {
    os << "serving:  token ids " << name(func.getArgAttrDict(r->tokenIds), r->tokenIds);
    if (r->positions)
      os << ", positions " << name(func.getArgAttrDict(*r->positions), *r->positions);
    if (r->attentionMask)
      os << ", attention mask "
         << name(func.getArgAttrDict(*r->attentionMask), *r->attentionMask);
    os << ", logits " << name(func.getResultAttrDict(r->logits), r->logits)
       << "; batch " << r->batch << ", new tokens " << r->seq << ", past " << r->past
       << "\n";
    for (const ServingRoles::Stream &c : r->cache)
      os << "  cache: " << name(func.getArgAttrDict(c.past), c.past) << " -> "
         << name(func.getResultAttrDict(c.present), c.present) << " (axis " << c.axis
         << ")\n";
    if (r->maxContext)
      os << "  context: at most " << *r->maxContext << " tokens (" << r->maxContextAt
         << ")\n";
  } else {
    os << "serving:  none (" << why << ")\n";
  }
  // Each attention's kind, in program order: the mask proven by
  // lockstep-prove-mask, or the graph's own, and the score transforms.
  unsigned layer = 0;
  func.walk([&](Operation *op) {
    auto a = dyn_cast<ls::AttentionOp>(op);
    auto p = dyn_cast<ls::PagedAttentionOp>(op);
    if (!a && !p)
      return;
    bool causal = p || a.getCausal();
    std::optional<uint64_t> window = p ? p.getWindow() : a.getWindow();
    std::optional<APFloat> softcap = p ? p.getSoftcap() : a.getSoftcap();
    os << (layer ? "" : "attention:\n") << "  " << layer++ << ": ";
    if (causal && window)
      os << "causal, window " << *window;
    else if (causal)
      os << "causal";
    else if (auto w = op->getAttrOfType<IntegerAttr>(kMaskProvenWindowAttr)) {
      os << "causal";
      if (w.getInt())
        os << ", window " << w.getInt();
      if (auto fed = op->getAttrOfType<StringAttr>(kMaskProvenForAttr))
        os << " (the graph's own mask, proven for " << fed.getValue() << ")";
    } else if (auto why = op->getAttrOfType<StringAttr>(kMaskUnprovenAttr))
      os << "the graph's own mask (not proven causal: " << why.getValue() << ")";
    else
      os << "the graph's own mask";
    if (softcap)
      os << ", softcap " << softcap->convertToDouble();
    os << " (" << describeNode(op) << ")\n";
  });
  os << "symbols:  ";
  llvm::interleaveComma(symbols, os);
  os << "\n";

  int64_t weights = 0, params = 0, bytes = 0;
  std::set<std::string> files;
  std::map<std::string, int> histogram;
  int total = 0;
  func.walk([&](Operation *op) {
    if (auto w = dyn_cast<WeightOp>(op)) {
      ++weights;
      params += cast<ShapedType>(w.getType()).getNumElements();
      bytes += w.getLength();
      files.insert(w.getFile().str());
      return;
    }
    if (isa<ONNXNodeOpInterface>(op)) {
      ++histogram[op->getName().stripDialect().str()];
      ++total;
    }
  });
  os << "weights:  " << weights << " tensors, " << params << " parameters, "
     << bytes << " bytes";
  if (!files.empty()) {
    os << ", in ";
    llvm::interleaveComma(files, os);
  }
  os << "\n";
  std::vector<std::pair<int, std::string>> sorted;
  for (auto &[op, n] : histogram)
    sorted.push_back({-n, op});
  std::sort(sorted.begin(), sorted.end());
  os << "ops:      " << total << " (";
  llvm::interleaveComma(sorted, os, [&](auto &p) { os << p.second << " " << -p.first; });
  os << ")\n";
}
