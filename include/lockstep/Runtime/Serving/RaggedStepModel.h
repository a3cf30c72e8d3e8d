//===- RaggedStepModel.h - One compiled call per ragged step ----*- C++ -*-===//
//
// Drives an artifact compiled to the serving ABI of DESIGN.md (property
// `serving.step` = `ragged`) as the engine's StepModel: the T tokens of all
// R requests of a step go through the compiled code in one call, which reads
// each request's past from the KV cache pools in place, through its block
// table. The roles of the graph's inputs and outputs are `serving.*`
// properties (indices into the artifact's inputs or outputs); every input
// has exactly one role:
//
//   serving.token_ids            integer (i64 or i32) [batch, seq]: the step's
//                                tokens, fed [1, T]
//   serving.positions            (optional) the graph's own position ids,
//                                integer [batch, seq], fed [1, T]
//   serving.ragged.positions     i64 [seq]: the tokens' absolute positions
//   serving.ragged.seq_starts    i64 [requests + 1]: request r owns tokens
//                                [seq_starts[r], seq_starts[r + 1])
//   serving.ragged.block_tables  i32 [requests, max_blocks]: request r's block
//                                table, padded with 0 to the longest (padding
//                                is never read); max_blocks is at least 1
//   serving.cache_streams = n, serving.cache.<s> = "POOL NEW" for s < n:
//     POOL (input)   f32 [blocks, block_size, H, D], the KV cache pool of
//                    stream s itself (no copy): stream 2l is layer l's K pool,
//                    2l + 1 its V pool; a pool row is H * D floats
//     NEW (output)   f32 [batch, H, seq, D], the stream's rows of the T new
//                    tokens, which the runtime writes after the call to each
//                    token's slot: (its request's block table, its position)
//   serving.ragged.pool_writes   (optional) "step": the call itself writes the
//                                new rows of every stream into the pools at
//                                those slots, so the runtime does not
//   serving.ragged.logit_rows    (optional) i64 [rows]: the tokens whose
//                                logits the step computes (each request's
//                                logit row, in request order)
//   serving.logits               output f32 [batch, rows, vocab] (row k is
//                                token logit_rows[k]'s logits), or, without
//                                logit rows, [batch, seq, vocab]
//   serving.max_context(_at)     as for GraphStepModel
//
// The symbols of those dims (whatever the artifact names them) are bound
// from the fed shapes: batch 1, seq T, requests R, max_blocks, blocks and
// block_size from the cache config. The compiled code reads positions
// [0, first position of the request in this step) of a request from the
// pools, and its new tokens' rows from what it computes in the call; a
// token's results depend on its own row and its request's cache only, so
// batching, chunking and preemption give the same bits.
//
// On a GPU (a DeviceServing given to create) the pools are device memory
// and stay there: the call gets them as device tensors, its NEW outputs stay
// on the device, and (without serving.ragged.pool_writes) the runtime's
// scatter kernel writes them to each token's slot; only the step's small
// inputs go up and the logits rows come back.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_RAGGEDSTEPMODEL_H
#define LOCKSTEP_RUNTIME_SERVING_RAGGEDSTEPMODEL_H

#include "lockstep/Runtime/Backend/Backend.h"
#include "lockstep/Runtime/Exec.h"
#include "lockstep/Runtime/Serving/ServingModel.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::rt {

class RaggedStepModel : public ServingModel {
public:
  /// Reads and checks the serving roles of a loaded artifact; null with
  /// `error` (one line, saying why) when it is not in the ragged form.
  static std::unique_ptr<RaggedStepModel>
  create(const LoadedArtifact &artifact, const CpuModule &module, std::string &error,
         DeviceServing *device = nullptr);

  int64_t vocab() const override { return vocabSize; }
  bool step(const StepBatch &batch, KVCache &kv, float *logitsOut,
            std::string &error) override;
  /// The rows point into the call's logits output: nothing is copied.
  bool stepRows(const StepBatch &batch, KVCache &kv, std::vector<float> &scratch,
                std::vector<const float *> &rows, std::string &error) override;
  std::string stepForm() const override { return "ragged (one call per step)"; }
  PoolMemory *poolMemory() const override { return device; }

private:
  struct Stream {
    size_t pool, output;        // indices into the artifact's inputs, outputs
    int64_t heads = 0, dim = 0; // H and D
  };
  RaggedStepModel(const LoadedArtifact &a, const CpuModule &m, DeviceServing *d)
      : artifact(a), module(m), device(d) {}
  bool checkBatch(const StepBatch &batch, const KVCache &kv, std::string &error) const;
  /// Checks the streams' new rows and, unless the step wrote them itself,
  /// writes them to each token's slot: on the host, or with the device's
  /// scatter kernel.
  bool writeRows(const StepBatch &batch, KVCache &kv, const KeptOutputs &kept,
                 std::string &error);

  const LoadedArtifact &artifact;
  const CpuModule &module;
  DeviceServing *device; // null: host memory
  size_t tokenIds = 0, raggedPositions = 0, seqStarts = 0, blockTables = 0, logits = 0;
  std::optional<size_t> positions, logitRows;
  std::vector<Stream> streams;
  int64_t vocabSize = 0;
  bool stepWritesPools = false; // serving.ragged.pool_writes = step
  // Reused from step to step.
  std::vector<int64_t> ids64, pos64;
  std::vector<int32_t> ids32, pos32, tables;
  std::vector<int64_t> rowTokens; // the tokens whose logits are computed
  std::vector<OutputBuffer> outputs;
  std::vector<int64_t> slots; // each token's pool row
};

} // namespace lockstep::rt

#endif
