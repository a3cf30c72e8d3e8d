//===- Passes.h - Lockstep passes -------------------------------*- C++ -*-===//
#ifndef LOCKSTEP_PASSES_PASSES_H
#define LOCKSTEP_PASSES_PASSES_H

#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace lockstep {

#define GEN_PASS_DECL
#include "lockstep/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lockstep/Passes/Passes.h.inc"

/// Adds the passes that turn an imported module into the form that
/// `--emit=onnx` prints: shapes inferred, constant shape subgraphs folded.
void buildImportPipeline(mlir::OpPassManager &pm);

} // namespace lockstep

#endif
