//===- ParallelPoints.h - An scf.parallel's points, flattened ---*- C++ -*-===//
//
// The iteration space of an scf.parallel seen as one dim, for the passes
// that launch it on the GPU (lockstep-map-to-gpu: a thread a point;
// lockstep-warp-reductions: a warp a point; lockstep-fuse-siblings: the
// points of several loops end to end), and the one-dimensional launch they
// all build.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_GPU_PARALLELPOINTS_H
#define LOCKSTEP_GPU_PARALLELPOINTS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace lockstep {

/// The points of each dim of `p` (ceil((upper - lower) / step), 0 for an
/// empty range), built at `b`, and their product, returned.
mlir::Value parallelPointCounts(mlir::OpBuilder &b, mlir::Location loc, mlir::scf::ParallelOp p,
                                llvm::SmallVectorImpl<mlir::Value> &counts);

/// The induction values of `p` at flat point `id` (last dim fastest), built
/// at `b`, mapped in `map`.
void mapParallelPoint(mlir::OpBuilder &b, mlir::Location loc, mlir::scf::ParallelOp p,
                      mlir::Value id, llvm::ArrayRef<mlir::Value> counts, mlir::IRMapping &map);

/// Threads a block of the flat launches (8 warps).
constexpr int64_t kFlatLaunchBlock = 256;

/// A one-dimensional gpu.launch of `threads` threads (an index), built at
/// `b` inside `if threads > 0`: ceil(threads / 256) blocks of min(threads,
/// 256). `id` is a thread's flat index (block * 256 + thread); `body` is
/// set at the kernel body's start (its terminator already there, after it).
struct FlatLaunch {
  mlir::gpu::LaunchOp launch;
  mlir::Value id;
  mlir::OpBuilder body;
};
FlatLaunch buildFlatLaunch(mlir::OpBuilder &b, mlir::Location loc, mlir::Value threads);

} // namespace lockstep

#endif
