//===- ServingKeys.h - The serving ABI's artifact properties ----*- C++ -*-===//
//
// The keys of the `serving.*` properties that the compiler writes into an
// artifact and the runtime reads (DESIGN.md's serving ABI; the roles are
// described in lockstep/Runtime/Serving/RaggedStepModel.h and
// GraphStepModel.h). One place for both sides: MLIR-free and header-only.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_ARTIFACT_SERVINGKEYS_H
#define LOCKSTEP_ARTIFACT_SERVINGKEYS_H

#include <string>

namespace lockstep::serving_keys {

/// Every serving key starts with this.
inline constexpr const char *kPrefix = "serving.";
/// Why the model cannot be served (present instead of the roles).
inline constexpr const char *kNone = "serving.none";
/// "ragged" for the ragged step; absent for the exported graph.
inline constexpr const char *kStep = "serving.step";
inline constexpr const char *kRagged = "ragged";

// Roles: the index of the input or output that plays them.
inline constexpr const char *kTokenIds = "serving.token_ids";
inline constexpr const char *kPositions = "serving.positions";
inline constexpr const char *kAttentionMask = "serving.attention_mask";
inline constexpr const char *kLogits = "serving.logits";
inline constexpr const char *kRaggedPositions = "serving.ragged.positions";
inline constexpr const char *kSeqStarts = "serving.ragged.seq_starts";
inline constexpr const char *kBlockTables = "serving.ragged.block_tables";
inline constexpr const char *kLogitRows = "serving.ragged.logit_rows";
/// "step" when the step's own code writes the new rows of every cache stream
/// into the pools (lockstep-record-pool-writes); absent: the runtime copies
/// the NEW outputs into the pools after the call.
inline constexpr const char *kPoolWrites = "serving.ragged.pool_writes";
inline constexpr const char *kPoolWritesStep = "step";

// The exported graph's symbols.
inline constexpr const char *kBatch = "serving.batch";
inline constexpr const char *kSeq = "serving.seq";
inline constexpr const char *kPast = "serving.past";

// The KV cache: the stream count, and per stream "INPUT OUTPUT".
inline constexpr const char *kCacheStreams = "serving.cache_streams";
inline std::string cache(unsigned long stream) {
  return "serving.cache." + std::to_string(stream);
}
inline constexpr const char *kCachePrefix = "serving.cache.";

// The longest context, and what sets it.
inline constexpr const char *kMaxContext = "serving.max_context";
inline constexpr const char *kMaxContextAt = "serving.max_context_at";

} // namespace lockstep::serving_keys

#endif
