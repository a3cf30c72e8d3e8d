//===- WarpFold.h - A parallel loop's reduction folded by a warp -*- C++ -*-===//
//
// A point of an scf.parallel whose body is reads, one reduction scf.for and
// then anything, computed by a warp instead of a thread: in each slab of 32
// iterations lane l computes the values that do not depend on the
// accumulators for iteration k0 + l, then every lane folds the 32 in order,
// each received by a shuffle from the lane that made it; lane 0 runs what
// follows the loop. The fold is the same ops, on the same values, in the
// same order. Used by lockstep-warp-reductions (a warp a point of the whole
// loop); a kernel that runs several loops' points may give a warp to one of
// them the same way.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_GPU_WARPFOLD_H
#define LOCKSTEP_GPU_WARPFOLD_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace lockstep {

constexpr int64_t kWarpLanes = 32;

/// How a parallel loop's body splits: the ops before its reduction loop (all
/// lanes run them), the loop, and in its body the ops that do not depend on
/// the accumulators (`pre`: lane l runs them for value k0 + l) and those that
/// do (`fold`: every lane runs them, value after value); `sent` are the
/// values of `pre` that `fold` reads, each sent by a shuffle.
struct WarpFoldPlan {
  mlir::scf::ForOp loop;
  llvm::SmallVector<mlir::Operation *> pre, fold;
  llvm::SmallVector<mlir::Value> sent;
};

/// The plan for `p`, when its body has that shape: reads and pure ops, one
/// scf.for of step 1 with iter_args and 32 or more iterations (or a dynamic
/// count), whose body splits as above with 32-bit values sent; then
/// anything.
std::optional<WarpFoldPlan> planWarpFold(mlir::scf::ParallelOp p);

/// Builds at `b` the warp's computation of one point of `p`, whose
/// induction variables `map` maps already; `lane` is the thread's lane
/// (0-31). Every lane of the warp must run it (the shuffles need them).
void buildWarpFold(mlir::OpBuilder &b, mlir::Location loc, mlir::scf::ParallelOp p,
                   const WarpFoldPlan &plan, mlir::IRMapping &map, mlir::Value lane);

} // namespace lockstep

#endif
