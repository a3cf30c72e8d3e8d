//===- CPUCodegen.h - From the onnx form to an x86-64 shared object -*- C++ -*-===//
#ifndef LOCKSTEP_TARGET_CPUCODEGEN_H
#define LOCKSTEP_TARGET_CPUCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace lockstep {

/// Adds the passes from the onnx form (shapes inferred) to the LLVM dialect:
/// lowering to linalg, outputs as arguments, bufferization, loops, LLVM, and
/// the `lockstep_entry` wrapper.
mlir::LogicalResult buildCPUCodegenPipeline(mlir::OpPassManager &pm);

/// Translates an LLVM-dialect module to LLVM IR, compiles it for x86-64 with
/// no fast-math and no FMA contraction, and links the object into a shared
/// object in process (lld). Returns the shared object's bytes; on failure
/// returns false and sets `error`.
bool emitSharedObject(mlir::ModuleOp module, std::vector<uint8_t> &out,
                      std::string &error);

} // namespace lockstep

#endif
