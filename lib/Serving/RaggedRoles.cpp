//===- RaggedRoles.cpp - The serving properties of a ragged step ----------===//
//
// lockstep-ragged-step marks the arguments and results of the step it builds
// with `lockstep.role`; these become the artifact's `serving.*` properties
// (input and output indices), which the runtime's ragged step model reads.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Serving/ServingRoles.h"
#include "lockstep/Artifact/ServingKeys.h"

#include <map>

using namespace mlir;
using namespace lockstep;
namespace K = lockstep::serving_keys;

bool lockstep::isRaggedStep(func::FuncOp main) {
  auto s = main->getAttrOfType<StringAttr>("lockstep.step");
  return s && s.getValue() == "ragged";
}

std::optional<std::vector<std::pair<std::string, std::string>>>
lockstep::raggedStepProperties(func::FuncOp main, std::string &why) {
  std::map<std::string, unsigned> in, out;
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    if (auto r = main.getArgAttrOfType<StringAttr>(i, "lockstep.role"))
      in[r.str()] = i;
  for (unsigned i = 0; i < main.getNumResults(); ++i)
    if (auto r = main.getResultAttrOfType<StringAttr>(i, "lockstep.role"))
      out[r.str()] = i;
  std::vector<std::pair<std::string, std::string>> p;
  auto num = [](unsigned v) { return std::to_string(v); };
  for (const char *role : {"token_ids", "ragged.positions", "ragged.seq_starts",
                           "ragged.block_tables"})
    if (!in.count(role)) {
      why = std::string("the ragged step has no '") + role + "' input";
      return std::nullopt;
    }
  if (!out.count("logits")) {
    why = "the ragged step has no logits output";
    return std::nullopt;
  }
  p.push_back({K::kStep, K::kRagged});
  p.push_back({K::kTokenIds, num(in["token_ids"])});
  if (in.count("positions"))
    p.push_back({K::kPositions, num(in["positions"])});
  for (const char *role : {"ragged.positions", "ragged.seq_starts", "ragged.block_tables"})
    p.push_back({std::string(K::kPrefix) + role, num(in[role])});
  p.push_back({K::kLogits, num(out["logits"])});
  if (in.count("ragged.logit_rows"))
    p.push_back({K::kLogitRows, num(in["ragged.logit_rows"])});
  unsigned n = 0;
  while (in.count("pool." + std::to_string(n)) && out.count("new." + std::to_string(n)))
    ++n;
  if (n == 0 || in.count("pool." + std::to_string(n)) || out.count("new." + std::to_string(n))) {
    why = "the ragged step's pools and new rows do not pair up";
    return std::nullopt;
  }
  p.push_back({K::kCacheStreams, num(n)});
  for (unsigned s = 0; s < n; ++s)
    p.push_back({K::cache(s),
                 num(in["pool." + std::to_string(s)]) + " " +
                     num(out["new." + std::to_string(s)])});
  if (auto m = main->getAttrOfType<IntegerAttr>("lockstep.max_context")) {
    p.push_back({K::kMaxContext, std::to_string(m.getInt())});
    auto at = main->getAttrOfType<StringAttr>("lockstep.max_context_at");
    p.push_back({K::kMaxContextAt, at ? at.str() : "a fixed-size table"});
  }
  return p;
}
