//===- ModelSummary.h - A human-readable summary of a model -----*- C++ -*-===//
#ifndef LOCKSTEP_IMPORT_MODELSUMMARY_H
#define LOCKSTEP_IMPORT_MODELSUMMARY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace lockstep {

/// Prints the inputs and outputs with their symbolic dims, the symbols, the
/// weights (count, parameters, bytes, files) and an op histogram of an
/// imported module.
void printModelSummary(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace lockstep

#endif
