//===- PagedKernelIO.h - What a kernel of lockstep.paged_attention reads -*- C++ -*-===//
//
// The first and last steps that the GPU and CPU kernels of
// lockstep.paged_attention share: the pool writes (writePagedRows, with the
// token -> request map of an earlier layer when there is one), the buffers
// the kernel reads (bufferization.to_buffer read_only of the op's tensors
// and of the written pools), the step's sizes, and the output buffer, in
// the exporters' [1, T, H, Dv] layout when the op's only use is their
// transpose by [0, 2, 1, 3] (the same values, one copy fewer); then the
// result as a tensor (to_tensor restrict writable) in place of the op (and
// of that transpose).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_REDUCTIONS_PAGEDKERNELIO_H
#define LOCKSTEP_REDUCTIONS_PAGEDKERNELIO_H

#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/GPU/PagedAttentionKernel.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace lockstep {

/// The op's static sizes, which both kernels need: H query heads over Hk key
/// heads (G of them a key head), head size D and value size Dv.
struct PagedHeads {
  int64_t H = 0, D = 0, Hk = 0, G = 1, Dv = 0;
  explicit PagedHeads(ls::PagedAttentionOp op);
};

class PagedKernelIO {
public:
  /// Builds the pool writes, the buffers and the output at the rewriter's
  /// point; key chunks of `width`. The key pool is read row-major when
  /// `keysRowMajor` (the pool arguments are), else in any layout.
  PagedKernelIO(mlir::RewriterBase &rw, ls::PagedAttentionOp op, SharedRequest &shared,
                int64_t width, bool keysRowMajor = true);

  struct Buffers {
    /// q [1, H, T, D] (any layout); the key pool [blocks, bs, Hk, D]; the
    /// value pool as [blocks · bs, Hk, Dv] (row-major, so that a key's row
    /// is one index); positions, each token's request, the block tables;
    /// the scales when the op has them.
    mlir::Value q, keys, values, positions, request, tables, scale, keyScale;
  } in;
  /// T, the block size, L = MB · BS (the tables' reach) and ceil(L / width).
  mlir::Value tokens, blockSize, keys, chunks;
  /// y as [1, H, T, Dv], or as [1, T, H, Dv] when transposed().
  mlir::Value out;
  bool transposed() const { return bool(outTranspose); }

  /// Replaces the op (and the transpose) with `out` as a tensor, at the
  /// rewriter's point.
  void replace();

private:
  mlir::RewriterBase &rw;
  ls::PagedAttentionOp op;
  mlir::Location loc;
  mlir::RankedTensorType resultType;
  mlir::linalg::TransposeOp outTranspose;

  mlir::Value read(mlir::Value t, bool rowMajor = false);
};

} // namespace lockstep

#endif
