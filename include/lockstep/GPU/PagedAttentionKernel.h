//===- PagedAttentionKernel.h - lockstep.paged_attention on a GPU -*- C++ -*-===//
//
// The ragged step's attention as one gpu.launch (lockstep-gpu-paged-attention)
// in place of the expansion of lockstep-canonical-reductions, which is about
// 25 kernels a layer. The pools are written first, exactly as the expansion
// writes them (writePagedRows); then one warp computes the outputs of one
// (token, query head), four warps a block (neighbouring heads, which share
// their key head):
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
//     own merge ops (ChunkStats.h), left to right from (−inf, 0, 0);
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

/// Builds the pool writes and the kernel at the rewriter's point and returns
/// the value of `op`'s result (the caller replaces the op). `shared` holds
/// the token -> request map of an earlier layer (see writePagedRows) and
/// the positions and seq_starts it was built from: it is used when they are
/// `op`'s and the map is defined before `op` in its block; then it holds
/// the map this op used.
struct SharedRequest {
  mlir::Value map, positions, seqStarts;
};
mlir::Value buildPagedAttentionKernel(mlir::RewriterBase &rw, ls::PagedAttentionOp op,
                                      int64_t width, SharedRequest &shared);

} // namespace lockstep

#endif
