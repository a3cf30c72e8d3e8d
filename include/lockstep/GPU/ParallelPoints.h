//===- ParallelPoints.h - An scf.parallel's points, flattened ---*- C++ -*-===//
//
// The iteration space of an scf.parallel seen as one dim, for the passes
// that launch it on the GPU (lockstep-map-to-gpu: a thread a point;
// lockstep-warp-reductions: a warp a point).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_GPU_PARALLELPOINTS_H
#define LOCKSTEP_GPU_PARALLELPOINTS_H

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

} // namespace lockstep

#endif
