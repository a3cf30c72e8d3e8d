//===- Chunking.h - The canonical chunked form of reductions ----*- C++ -*-===//
//
// Builders for the numerics contract's reduction form (DESIGN.md): a sum of
// length L is cut into chunks of width C counted from index 0, each chunk is
// folded left to right from +0.0, and the chunk partials are folded left to
// right. lockstep-canonical-reductions applies them; lockstep-verify-invariance
// checks their marks.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_REDUCTIONS_CHUNKING_H
#define LOCKSTEP_REDUCTIONS_CHUNKING_H

#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace lockstep {

/// The marks of the canonical form on a linalg op.
constexpr llvm::StringLiteral kChunkWidthAttr = "lockstep.chunk_width";
constexpr llvm::StringLiteral kChunkRoleAttr = "lockstep.chunk_role";
/// On an scf.for whose iterations write disjoint memory and read nothing that
/// another iteration writes (the ragged step's writing of each token's row
/// into its own pool slot): a backend may run its iterations in parallel.
constexpr llvm::StringLiteral kDisjointIterationsAttr = "lockstep.disjoint_iterations";

/// How a reduction op folds its accumulator.
enum class Combiner {
  Add,   ///< acc + x, or fma(a, b, acc): chunked
  Mul,   ///< acc * x: chunked, from 1.0
  Exact, ///< max, min, or an integer op: any order gives the same result
};

/// The combiner of the single-output reduction op `op`, or nullopt when the
/// region is not a recognizable fold of its output argument.
std::optional<Combiner> classifyCombiner(mlir::linalg::LinalgOp op);

/// The chunk width for a reduction of length `length` (nullopt: dynamic).
struct ChunkWidths {
  int64_t maxChunk = 256, minChunk = 64, dynamicChunk = 64;
  int64_t choose(std::optional<int64_t> length) const;
};

/// A reduction length L cut into chunks of width C: the number of whole
/// chunks floor(L/C), the length they cover, and whether a tail remains.
struct ChunkSplit {
  mlir::OpFoldResult whole;   ///< floor(L/C), static or an index value
  mlir::OpFoldResult covered; ///< floor(L/C)·C
  bool divisible;             ///< L is static and a multiple of C
  /// L - covered (the tail's length), built at the rewriter's point.
  mlir::OpFoldResult tail(mlir::RewriterBase &rw, mlir::Location loc,
                          mlir::OpFoldResult length) const;
};

/// Splits `length` (static, or an index value: then divui and muli are built
/// at the rewriter's point) into whole chunks of width `width`.
ChunkSplit splitLength(mlir::RewriterBase &rw, mlir::Location loc,
                       mlir::OpFoldResult length, int64_t width);

/// `x` with its axis `axis` (of length count·width) expanded into
/// [count, width], so that element jC + k of the axis is read at [.., j, k, ..]
/// in place. `sizes` are x's sizes (static or index values).
mlir::Value expandChunks(mlir::RewriterBase &rw, mlir::Location loc, mlir::Value x,
                         llvm::ArrayRef<mlir::OpFoldResult> sizes, unsigned axis,
                         mlir::OpFoldResult count, int64_t width);

/// Rewrites `op`, a linalg.generic with exactly one reduction dim and an Add
/// or Mul combiner, into the chunked form of width `width` (partial, combine
/// and, when needed, tail). Returns the value that replaces the op's result
/// (the caller replaces it). When the length is static and at most `width`
/// the op is only marked `whole` and its result returned.
mlir::FailureOr<mlir::Value> chunkGeneric(mlir::RewriterBase &rw,
                                          mlir::linalg::GenericOp op,
                                          int64_t width);

/// Rewrites linalg.softmax into chunk-local statistics of width `width`.
mlir::FailureOr<mlir::Value> chunkSoftmax(mlir::RewriterBase &rw,
                                          mlir::linalg::SoftmaxOp op,
                                          int64_t width);

/// Expands lockstep.attention into linalg by the contract, with key chunks of
/// width `width` counted from key 0 (taken whole when the key length is
/// static and at most `width`). The score contraction is left unmarked for
/// the caller to chunk. Returns the value that replaces the op's result.
mlir::FailureOr<mlir::Value> chunkAttention(mlir::RewriterBase &rw,
                                            lockstep::ls::AttentionOp op,
                                            int64_t width);

/// Set on a lockstep.paged_attention by --reduction-policy=plant-unmasked-padding
/// or plant-merge-no-skip: its expansion then plants that violation, which
/// lockstep-verify-invariance must refuse (the lit tests of the verifier).
inline constexpr const char *kPlantAttr = "lockstep.plant";

/// Expands lockstep.paged_attention the same way over a key axis of the
/// block tables' reach (max_blocks · block_size positions), reading keys and
/// values from the pools and the new rows in the generics' bodies.
mlir::FailureOr<mlir::Value> chunkPagedAttention(mlir::RewriterBase &rw,
                                                 lockstep::ls::PagedAttentionOp op,
                                                 int64_t width);

/// The first half of lockstep.paged_attention, shared by its expansion and
/// its GPU kernel: each token's request ([T] i64: the number of requests
/// starting at or before it, less one) and the pools with the step's new rows
/// written at their tokens' slots (an scf.for of insert_slice marked
/// lockstep.disjoint_iterations, which bufferizes into the pool arguments).
/// `request`, when given, is the map of an earlier op with the same
/// positions and seq_starts (so the same T), defined before `op` in its
/// block: it is the same for every layer of a step, and is then not built
/// again.
struct PagedWrites {
  mlir::Value request, keyPool, valuePool;
};
PagedWrites writePagedRows(mlir::RewriterBase &rw, lockstep::ls::PagedAttentionOp op,
                           mlir::Value request = {});

/// The length of the reduction dim `dim` of `op` (a static size or an index
/// value computed from the dim of an operand), built at the rewriter's point.
mlir::OpFoldResult reductionLength(mlir::RewriterBase &rw,
                                   mlir::linalg::LinalgOp op, unsigned dim);

} // namespace lockstep

#endif
