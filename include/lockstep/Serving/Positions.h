//===- Positions.h - Where a decoder graph reads its positions --*- C++ -*-===//
//
// Helpers of the serving-form passes (lockstep-introduce-kv-cache,
// lockstep-ragged-step), which must find the positions a decoder computes
// itself and move them: where a position table is read (a Gather of a weight
// or constant by indices over the new tokens) and where rotary angles are
// computed from them (integers cast to floats on the way to Cos or Sin).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_SERVING_POSITIONS_H
#define LOCKSTEP_SERVING_POSITIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

#include <string>

namespace lockstep {

/// The operands that read positions computed in the graph: the indices of a
/// Gather of a weight or constant table, and the integer inputs of the Casts
/// that rotary angles (found backwards from Cos and Sin) are computed from;
/// each with dims that mention `seq` and computed from no function argument
/// (positions read from an input are absolute already; token ids index the
/// embedding).
llvm::SetVector<mlir::OpOperand *> computedPositionUses(mlir::func::FuncOp func,
                                                        const std::string &seq);

/// Whether `v` is computed from a function argument other than through its
/// shape (a Shape op reads sizes, not values).
bool readsAnInput(mlir::Value v);

/// Erases the side-effect-free ops of `body` whose results are unused, until
/// none is left.
void eraseDeadOps(mlir::Block &body);

} // namespace lockstep

#endif
