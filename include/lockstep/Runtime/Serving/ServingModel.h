//===- ServingModel.h - A compiled model as the engine's step ---*- C++ -*-===//
//
// The runtime drives a compiled model in one of two forms, picked by the
// artifact's `serving.step` property:
//
//   ragged      RaggedStepModel: the serving ABI of DESIGN.md,
//               one call of the compiled code for all the requests of a step,
//               reading the KV cache pools in place through block tables.
//   otherwise   GraphStepModel: the exporter's KV-cache decoder
//               graph, one call per request, its cache gathered from and
//               scattered back to the pools.
//
// Both are StepModels that also say what KV cache they need; both keep the
// cache as one row of floats per (layer, K or V, position), so the cache is
// configured with kvHeads 1 and headDim = the row's floats.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_SERVINGMODEL_H
#define LOCKSTEP_RUNTIME_SERVING_SERVINGMODEL_H

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Runtime/Backend/Backend.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Serving/Engine.h"

#include <memory>
#include <optional>
#include <string>

namespace lockstep::rt {

class ServingModel : public StepModel {
public:
  /// A KV cache config that holds this model's streams, with `blocks` device
  /// blocks of `blockSize` tokens and `hostBlocks` of swap space.
  KVCacheConfig cacheConfig(int64_t blockSize, int64_t blocks, int64_t hostBlocks) const;
  /// Bytes of device cache per token of context.
  int64_t bytesPerToken() const;
  /// How a step runs, for messages: "ragged (one call per step)" or
  /// "per request (one call per request)".
  virtual std::string stepForm() const = 0;

  std::optional<int64_t> maxContext() const override { return contextLimit; }
  std::string maxContextSource() const override { return contextLimitAt; }

protected:
  /// Reads `serving.max_context` and `serving.max_context_at`; false with
  /// `error` when the limit is malformed.
  bool readContextLimit(const ArtifactMeta &meta, std::string &error);

  std::optional<int64_t> contextLimit; // serving.max_context
  std::string contextLimitAt;          // serving.max_context_at
  int64_t cacheStreams = 0;            // 2 per layer: K, V
  int64_t rowElems = 0;                // floats per position of a stream
};

/// The step model of a loaded artifact: a RaggedStepModel when its
/// `serving.step` is `ragged`, a GraphStepModel otherwise. Null with `error`
/// (one line, saying why) when the artifact cannot be served. With a
/// `device` (a GPU artifact's memory) only the ragged form is served.
std::unique_ptr<ServingModel> createServingModel(const LoadedArtifact &artifact,
                                                 const CpuModule &module,
                                                 std::string &error,
                                                 DeviceServing *device = nullptr);

/// Helpers of the step models for reading `serving.*` properties.
namespace serving {
/// The value of property `key`, if any.
std::optional<std::string> property(const ArtifactMeta &meta, const std::string &key);
/// Parses a decimal index below `limit`.
bool parseIndex(const std::string &text, size_t limit, size_t &out);
} // namespace serving

} // namespace lockstep::rt

#endif
