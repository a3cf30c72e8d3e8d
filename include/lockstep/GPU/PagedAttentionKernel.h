//===- PagedAttentionKernel.h - lockstep.paged_attention on a GPU -*- C++ -*-===//
//
// The ragged step's attention as GPU kernels (lockstep-gpu-paged-attention)
// in place of the expansion of lockstep-canonical-reductions, which is about
// 25 kernels a layer. The pools are written first, exactly as the expansion
// writes them (writePagedRows). Then, for a step of at most 65536 (token,
// query head, key chunk) items, the split form: one warp computes one
// chunk's statistics (m_j, s_j, o_j) of one (token, query head) into a
// scratch buffer, and a second kernel's warp a (token, query head) merges
// them in chunk order; a decode step of few requests so has a warp a chunk
// rather than a warp looping over all of its chunks. A larger step (a long
// prefill) takes one kernel, each warp looping over its (token, query
// head)'s chunks. Either way four warps a block (neighbouring heads, which
// share their key head), and:
//
//   - per key chunk j of width C (counted from position 0, the last one
//     shorter when MB·BS is not a multiple of C), lane i scores keys
//     jC + i, jC + i + 32, ...: the dot over d in order from +0.0 (its row
//     read through the block table at min(k, position), as the expansion's
//     `rows` gives it), scaled, soft-capped and masked by the same ops;
//   - every lane folds the chunk's max, then Σ exp(x − m_j), over the keys
//     in order, each score taken from its lane by a shuffle (the same
//     values in the same order, so every lane gets the same bits), and
//     lane e folds o_j[e] (and e + 32, ...) over the keys in order;
//   - (m, l, o) are merged with the chunk's statistics by the expansion's
//     own merge ops (ChunkStats.h), left to right from (−inf, 0, 0); in
//     the split form the statistics go through the scratch buffer in
//     between, stored and loaded as they are (an f32 store and load change
//     no bit);
//   - y = o / l.
//
// No workgroup memory and no barrier: a warp's lanes exchange values by
// shuffles only, so buffer deallocation (which refuses gpu.barrier, an op
// of unknown effects) can run after this kernel is built, on tensors.
//
// Chunks whose keys are all masked (past the token's position, or before
// its window) are skipped: in the expansion their max is −inf and their merge
// keeps (m, l, o) by a select, an exact no-op. Every other chunk is folded
// whole, masked keys included, as in the expansion. So each output is the
// same ops on the same operands in the same order as the expansion's, and
// a short request next to a long one reads only its own chunks.
//
// Only which thread computes a value, and where it waits, differ from the
// expansion. lockstep-verify-invariance checks the expansion's form on the
// CPU target; this kernel is checked bit for bit against the CPU by the GPU
// suite (scripts/test-gpu).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_GPU_PAGEDATTENTIONKERNEL_H
#define LOCKSTEP_GPU_PAGEDATTENTIONKERNEL_H

#include "lockstep/Dialect/Lockstep/LockstepDialect.h"

#include "mlir/IR/PatternMatch.h"

#include <string>

namespace lockstep {

/// Why `op` cannot be one kernel with key chunks of `width` when the
/// canonical form folds a static length of at most `maxChunk` whole (the
/// dot over the head size must be one fold); empty when it can.
std::string pagedAttentionKernelRefusal(ls::PagedAttentionOp op, int64_t width,
                                        int64_t maxChunk);

/// Builds the pool writes and the kernels at the rewriter's point and
/// replaces `op` with their result. When the only use of `op` is a
/// linalg.transpose by [0, 2, 1, 3] (the exporters' [1, H, T, D] ->
/// [1, T, H, D] before the output projection), the kernels store y in that
/// layout and replace the transpose too (the same values, one copy fewer).
/// `shared` holds the token -> request map of an earlier layer (see
/// writePagedRows) and the positions and seq_starts it was built from: it
/// is used when they are `op`'s and the map is defined before `op` in its
/// block; then it holds the map this op used.
struct SharedRequest {
  mlir::Value map, positions, seqStarts;
};
void buildPagedAttentionKernel(mlir::RewriterBase &rw, ls::PagedAttentionOp op, int64_t width,
                               SharedRequest &shared);

} // namespace lockstep

#endif
