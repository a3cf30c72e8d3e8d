//===- PagedAttentionKernel.h - lockstep.paged_attention on the CPU -*- C++ -*-===//
//
// The ragged step's attention as one parallel loop (lockstep-cpu-paged-
// attention) in place of the expansion of lockstep-canonical-reductions,
// which materializes the [T, MB·BS] rectangle of scores several times a
// layer (a 512-token prefill of a 1.25e8-parameter Llama spent about 30%
// of its time in those loops, half of them on keys past the causal edge).
// The pools are written first, exactly as the expansion writes them
// (writePagedRows). Then one iteration a (block of `lanes` tokens, key
// head), the last blocks first (they see the most keys): the block's tokens
// are split into runs of one request (whose keys are the same rows), and
// the G query heads of the key head share each key read. A run of several
// tokens has its tokens as the lanes of vectors:
//
//   - per key chunk j of width C (counted from position 0, the last one
//     shorter when MB·BS is not a multiple of C), each key's dot with every
//     lane's query, over d in order from +0.0 (fma of the lanes' queries,
//     transposed once a run, and the key's value broadcast), read at the
//     row of min(k, MB·BS − 1, the run's last position): a key past a
//     lane's own position is masked to −inf whatever its dot is, so reading
//     a later token's row there changes nothing. Then scaled, soft-capped
//     and masked by the expansion's own ops (ChunkStats.h, on vectors);
//   - the chunk's max over its keys (a max is exact in any order), then
//     exp(x − m_j) once a key and Σ exp over the keys in order from +0.0;
//   - lane by lane, o_j[e] = Σ fma(p_k, v[e], ·) over the chunk's keys in
//     order from +0.0, the value row read at min(k, the lane's position)
//     as the expansion's `rows` gives it (a masked key's weight is +0.0,
//     but 0·v still decides the sign of a zero sum), value columns the
//     lanes of vectors;
//   - (m, l, o) merged with the chunk's statistics by the expansion's merge
//     ops, left to right from (−inf, 0, 0); y = o / l.
//
// A run of one token (a decode step's) has its keys as the lanes instead:
// the rows of `lanes` keys read `lanes` values of d at a time and
// transposed in registers (shuffles: the values keep their bits; gathered
// at each d where the head size is not a multiple of `lanes`), the same
// dot over d in order, score and mask
// ops on them, then the chunk's max, exps and sum over the keys in order as
// scalars, and the same o_j and merge.
//
// Chunks whose keys are all masked for every lane of a run (past the last
// position, or before the first position's window) are skipped, and so is
// o_j of a lane whose chunk is all masked: in the expansion their merge
// keeps (m, l, o) by a select, an exact no-op. Every other chunk is folded
// whole, masked keys included, as in the expansion. So each output is the
// same ops on the same operands in the same order as the expansion's; only
// which values are computed together (the lanes) and which are skipped
// differ. lockstep-verify-invariance checks the expansion's form (the graph
// form and the control policies still use it); this kernel is checked bit
// for bit against the expansion by the suite (the ragged step against the
// graph form, and `lockstep-run fuzz` across schedules).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_CPU_PAGEDATTENTIONKERNEL_H
#define LOCKSTEP_CPU_PAGEDATTENTIONKERNEL_H

#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/GPU/PagedAttentionKernel.h"

#include "mlir/IR/PatternMatch.h"

namespace lockstep {

/// Builds the pool writes and the loop at the rewriter's point and replaces
/// `op` (and the exporters' transpose to [1, T, H, D] when it is the only
/// use) with their result; `op` must be one that pagedAttentionKernelRefusal
/// accepts. `lanes` tokens are computed together (8 for AVX2, 16 for
/// AVX-512): it changes which values are computed together, never a bit.
void buildCpuPagedAttention(mlir::RewriterBase &rw, ls::PagedAttentionOp op, int64_t width,
                            int64_t lanes, SharedRequest &shared);

} // namespace lockstep

#endif
