//===- GraphStepModel.h - A compiled graph as the engine's step -*- C++ -*-===//
//
// Drives an artifact compiled from an exporter's KV-cache decoder graph (the
// `serving.*` properties that the compiler found from the graph's structure:
// token ids, positions, an optional attention mask, cache streams, logits)
// as the engine's StepModel.
//
// Each request of a step runs through the graph on its own, with batch 1:
// its new tokens, their absolute positions, an all-ones attention mask, and
// its cache gathered from the paged KV cache through its block table (the
// past, positions [0, context - new)). The new rows of each present output
// are scattered back to the request's blocks. A request's logits therefore
// depend on its own tokens and cache only; that prefill chunking, decode and
// recompute give the same bits comes from the canonical reductions (chunks
// at absolute positions from 0, masked positions adding exact zeros).
//
// This is the runtime's first step model: requests of one step are not
// fused into one ragged call; RaggedStepModel drives artifacts
// compiled to the serving form, and createServingModel (ServingModel.h)
// picks one of the two.
//
// Cache streams map to the KV cache's pools in order: stream 2l is layer l's
// K pool and 2l + 1 its V pool; a pool row holds the stream's elements of one
// position (every dim but batch and the position axis, in order).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_GRAPHSTEPMODEL_H
#define LOCKSTEP_RUNTIME_SERVING_GRAPHSTEPMODEL_H

#include "lockstep/Runtime/Serving/ServingModel.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::rt {

class GraphStepModel : public ServingModel {
public:
  /// Reads the serving roles of a loaded artifact; null with `error` (one
  /// line, saying why) when it is not a KV-cache decoder the runtime can drive.
  static std::unique_ptr<GraphStepModel>
  create(const LoadedArtifact &artifact, const CpuModule &module, std::string &error);

  int64_t vocab() const override { return vocabSize; }
  bool step(const StepBatch &batch, KVCache &kv, float *logitsOut,
            std::string &error) override;
  std::string stepForm() const override { return "per request (one call per request)"; }

private:
  struct Stream {
    size_t input, output;  // indices into the artifact's inputs and outputs
    int64_t outer = 1;     // product of the dims between batch and the axis
    int64_t inner = 1;     // product of the dims after the axis
  };
  GraphStepModel(const LoadedArtifact &a, const CpuModule &m) : artifact(a), module(m) {}
  bool runRequest(const StepBatch &batch, size_t r, KVCache &kv, float *logitsRow,
                  std::string &error);

  const LoadedArtifact &artifact;
  const CpuModule &module;
  size_t tokenIds = 0, logits = 0;
  std::optional<size_t> positions, mask;
  std::vector<Stream> streams;
  int64_t vocabSize = 0;
};

} // namespace lockstep::rt

#endif
