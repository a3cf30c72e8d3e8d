//===- CPUPipeline.cpp - The passes from the onnx form to LLVM ------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Target/CPUCodegen.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

mlir::LogicalResult lockstep::buildCPUCodegenPipeline(mlir::OpPassManager &pm) {
  // The textual pipeline names passes, so they must be registered (once).
  static bool registered = [] {
    mlir::registerAllPasses();
    registerLockstepPasses();
    return true;
  }();
  (void)registered;
  // Upstream passes are named by their pipeline text, which is stable across
  // MLIR versions where their C++ constructors are not.
  static const char *kPipeline =
      "func.func(convert-onnx-to-linalg, lockstep-expand-math, lockstep-outputs-to-args),"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "buffer-deallocation-pipeline,"
      "func.func(lockstep-lower-copies, convert-linalg-to-parallel-loops),"
      "lockstep-outline-parallel,"
      "expand-strided-metadata, lower-affine, convert-scf-to-cf,"
      "convert-math-to-llvm, convert-math-to-libm, finalize-memref-to-llvm,"
      "convert-arith-to-llvm, convert-index-to-llvm, convert-cf-to-llvm,"
      "convert-func-to-llvm, reconcile-unrealized-casts, lockstep-emit-entry,"
      "lockstep-dispatch-parallel";
  return mlir::parsePassPipeline(kPipeline, pm, llvm::errs());
}
