//===- ServingModel.cpp - A compiled model as the engine's step -----------===//
#include "lockstep/Runtime/Serving/ServingModel.h"

#include "lockstep/Artifact/ServingKeys.h"
#include "lockstep/Runtime/Serving/GraphStepModel.h"
#include "lockstep/Runtime/Serving/RaggedStepModel.h"

using namespace lockstep::rt;
namespace K = lockstep::serving_keys;

std::optional<std::string> serving::property(const ArtifactMeta &meta,
                                             const std::string &key) {
  for (const auto &[k, v] : meta.properties)
    if (k == key)
      return v;
  return std::nullopt;
}

bool serving::parseIndex(const std::string &s, size_t limit, size_t &out) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoul(s);
  return out < limit;
}

bool ServingModel::readContextLimit(const ArtifactMeta &meta, std::string &error) {
  auto lim = serving::property(meta, K::kMaxContext);
  if (!lim)
    return true;
  size_t n = 0;
  if (!serving::parseIndex(*lim, size_t(1) << 40, n) || n < 1) {
    error = "bad serving.max_context";
    return false;
  }
  contextLimit = int64_t(n);
  contextLimitAt =
      serving::property(meta, K::kMaxContextAt).value_or("a fixed-size table");
  return true;
}

std::unique_ptr<ServingModel>
lockstep::rt::createServingModel(const LoadedArtifact &artifact, const CpuModule &module,
                                 std::string &error, DeviceServing *device) {
  if (serving::property(artifact.meta(), K::kStep) == K::kRagged)
    return RaggedStepModel::create(artifact, module, error, device);
  if (device) {
    if (auto none = serving::property(artifact.meta(), K::kNone))
      error = "the model cannot be served: " + *none;
    else
      error = "serving on a GPU needs the ragged serving step, and this artifact holds the "
              "exported graph (compile it without --step=graph)";
    return nullptr;
  }
  return GraphStepModel::create(artifact, module, error);
}

KVCacheConfig ServingModel::cacheConfig(int64_t blockSize, int64_t blocks,
                                        int64_t hostBlocks) const {
  KVCacheConfig c;
  c.layers = (cacheStreams + 1) / 2;
  c.kvHeads = 1;
  c.headDim = rowElems;
  c.blockSize = blockSize;
  c.numBlocks = blocks;
  c.hostBlocks = hostBlocks;
  return c;
}

int64_t ServingModel::bytesPerToken() const {
  return (cacheStreams + 1) / 2 * 2 * rowElems * 4;
}
