//===- PaddedAxes.h - Reductions over the ragged step's padding -*- C++ -*-===//
//
// A ragged step's attention reduces over max_blocks · block_size key
// positions, a length that grows with the longest request of the step. The
// positions past a token's own are padding, and a token's bits stay the
// same at any padding only when the padding adds nothing exactly. This is
// checked, not assumed, by lockstep-verify-invariance:
//   - a padded axis is an axis whose length is computed from the block
//     tables' second dim (seen through sizes, slices, reshapes and the inits
//     of linalg ops);
//   - a max over a padded axis must reduce a masked value: one computed by a
//     generic that yields select(keep, s, -inf), keep comparing the padded
//     axis's index with a value read per row (k <= position);
//   - a sum over a padded axis (a chunk's Σ exp(x - m) or Σ p·v) must reduce
//     the shifted exponential of a masked value, select(m == -inf, 0,
//     exp(x - m)), which is exactly 0 at every masked position;
//   - a merge that reads a padded chunk's max and folds into a running state
//     (a combine, the tail's merge) must keep every state as it was when
//     that max is -inf (a chunk of padding only), by a select; a value it
//     writes per chunk instead (the chunk's merge weights) may be read only
//     by merges that read the same max, which are checked the same way.
// Anything else that reduces over a padded axis is refused at its ONNX node.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_REDUCTIONS_PADDEDAXES_H
#define LOCKSTEP_REDUCTIONS_PADDEDAXES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace lockstep {

/// Checks every reduction over a padded axis of `func` (a function with a
/// block-tables argument, role ragged.block_tables; others pass), reporting
/// each violation at its op.
mlir::LogicalResult verifyPaddedReductions(mlir::func::FuncOp func);

} // namespace lockstep

#endif
