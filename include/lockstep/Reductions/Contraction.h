//===- Contraction.h - Recognising bufferized contractions ------*- C++ -*-===//
//
// A contraction is a bufferized linalg.generic of two inputs and one output
// whose loop dims are all parallel but one reduction dim `k`: a projection
// `X·W`, a chunk's partial of one, or a batched product. The passes that
// give contractions a faster schedule (lockstep-tile-contractions for the
// GPU, lockstep-cpu-microkernels for the CPU, with the kernels of
// lockstep/GPU/ContractionKernel.h and lockstep/CPU/ContractionKernels.h)
// recognise them here, and then only change which thread computes an
// output and where its operands come from: every output still folds over k
// in increasing order from its own value, with the generic's own body. The
// loop helpers below are shared with lockstep-cpu-gather-kernels too.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_REDUCTIONS_CONTRACTION_H
#define LOCKSTEP_REDUCTIONS_CONTRACTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace lockstep {

/// A matched contraction: its loop dims by role.
struct Contraction {
  mlir::linalg::GenericOp op;
  /// m: the parallel dim read by input 0 and not by input 1 (nearest the
  /// end of input 0's map); n: the same for input 1; k: the reduction dim.
  unsigned m = 0, n = 0, k = 0;
  /// The other parallel dims, in loop order (all of them written).
  llvm::SmallVector<unsigned> batch;
  /// k's static extent, or ShapedType::kDynamic.
  int64_t length = 0;
  /// Whether k is the last index of input 0's (input 1's) map.
  bool aKFastest = false, bKFastest = false;
  /// When set, every output starts its fold from this value (the fill that
  /// preceded the op, forwarded by the pass that rewrites it), not from the
  /// output buffer.
  mlir::Value init;
};

/// `op` as a contraction: pure buffer semantics (or pure tensor semantics
/// with one result, for passes before bufferization), two inputs and one
/// output;
/// one reduction dim and the others parallel, at least three loops; every
/// map a projected permutation (zeros allowed); a body free of side effects,
/// regions and `linalg.index`; k read by both inputs and not by the output;
/// m and n found, and every parallel dim written (so no two points of the
/// parallel dims write one output); and an output that shares no buffer
/// with an input. Otherwise nullopt.
std::optional<Contraction> matchContraction(mlir::linalg::GenericOp op);

/// Whether `a` and `b` read their first inputs through the same map, which
/// reads every dim of theirs but n and k (the rows and the batch dims), with
/// the same m, k, batch dims and length: given the same first input, the
/// same rows, batch points and k (siblings that one launch can serve).
bool sameRowsAndK(const Contraction &a, const Contraction &b);

/// The buffer a memref value is a view of (through views and casts).
mlir::Value rootOf(mlir::Value v);

/// Every read or write of a memref by `op` or an op nested in it, as (the
/// op, the memref it names). False when an op's memory effects are unknown
/// or an effect names no memref value.
bool memoryAccesses(mlir::Operation *op,
                    llvm::SmallVectorImpl<std::pair<mlir::Operation *, mlir::Value>> &out);

/// The `linalg.fill` that sets init operand `init` of bufferized reduction
/// `op` just before it, when skipping it and starting every output's fold
/// from the fill's value gives the same results: the fill writes exactly
/// that memref value, no op between them in the block (nor any op nested
/// in one) uses a view of the same buffer, and `op` writes every
/// element of it (its map of that init names each parallel loop dim once
/// and no reduction dim, every other result being the constant 0 on a dim
/// of size 1, as a reduction's combine writes [t, 0] of [T, 1]), and the fill's
/// value has the buffer's element type. Otherwise null.
mlir::linalg::FillOp forwardableFill(mlir::linalg::GenericOp op, unsigned init);

/// Each loop dim's extent, built at `b` before `op`.
llvm::SmallVector<mlir::Value> loopSizes(mlir::OpBuilder &b, mlir::linalg::GenericOp op);

/// f32 lanes of a vector register on the CPU target (AVX2, x86-64-v3), the
/// width the CPU kernel passes build their vectors with.
inline constexpr int64_t kCpuLanes = 8;

/// Whether `map`'s last result is loop dim `dim`.
bool lastIs(mlir::AffineMap map, unsigned dim);

/// Whether `memref` is a ranked memref whose last dim has unit stride.
bool unitLastStride(mlir::Value memref);

/// An index constant, built at `b`.
mlir::Value cstIndex(mlir::OpBuilder &b, mlir::Location loc, int64_t v);

/// Whether `map` has loop dim `dim` among its results.
bool readsDim(mlir::AffineMap map, unsigned dim);

/// The indices of `map` with loop dim d at `dims[d]` (constant results,
/// zeros of a broadcast, become constants).
llvm::SmallVector<mlir::Value> indicesOf(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::AffineMap map,
                                         llvm::ArrayRef<mlir::Value> dims);

/// The generic's body applied to (x, y, acc), cloned at `b`: its yielded
/// value.
mlir::Value applyBody(mlir::OpBuilder &b, mlir::linalg::GenericOp op, mlir::Value x,
                      mlir::Value y, mlir::Value acc);

/// An scf.parallel of one dim over the points of `extents` (row-major), so
/// that lockstep-outline-parallel makes a work item of each point. Returns
/// a builder in its body and each extent's index.
std::pair<mlir::OpBuilder, llvm::SmallVector<mlir::Value>>
parallelOver(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<mlir::Value> extents);

} // namespace lockstep

#endif
