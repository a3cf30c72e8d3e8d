//===- CPUPipeline.cpp - The passes from the onnx form to LLVM ------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Serving/ServingRoles.h"
#include "lockstep/Target/CPUCodegen.h"
#include "PipelineText.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

void lockstep::registerPipelinePasses() {
  // The textual pipeline names passes, so they must be registered (once).
  static bool registered = [] {
    mlir::registerAllPasses();
    lockstep::registerLockstepPasses();
    return true;
  }();
  (void)registered;
}

std::string lockstep::linalgPassText(const CodegenOptions &options, bool cuda) {
  llvm::StringRef policy = options.reductionPolicy;
  std::string s = "convert-onnx-to-linalg, ";
  // The ragged step's attention is one GPU kernel, or on the CPU one
  // parallel loop over vectors of 8 or 16 tokens (AVX2, AVX-512), op for op
  // the expansion, unless the policy makes its chunks depend on the batch
  // (the control then needs the expansion) or plants a violation in it.
  if (policy != "adaptive-kv" && !policy.starts_with("plant-"))
    s += cuda ? "lockstep-gpu-paged-attention, "
              : std::string("lockstep-cpu-paged-attention{lanes=") +
                    (options.cpuLevel == kCpuLevelV4 ? "16" : "8") + "}, ";
  s += "lockstep-canonical-reductions{policy=" + options.reductionPolicy;
  if (options.adaptiveRows > 0)
    s += " adaptive-rows=" + std::to_string(options.adaptiveRows);
  if (options.adaptiveChunk > 0)
    s += " adaptive-chunk=" + std::to_string(options.adaptiveChunk);
  s += "}";
  // The verifier runs on the contract and on the planted violations, which
  // it must refuse; the adaptive controls compile without it.
  if (policy == "canonical" || policy.starts_with("plant-"))
    s += ", lockstep-verify-invariance";
  return s;
}

mlir::LogicalResult
lockstep::buildServingPipeline(mlir::OpPassManager &pm, const CodegenOptions &options) {
  registerPipelinePasses();
  if (!options.recognizeAttention)
    return mlir::success();
  return mlir::parsePassPipeline(
      "func.func(lockstep-recognize-attention, lockstep-prove-mask, lockstep-introduce-kv-cache)", pm,
      llvm::errs());
}

mlir::LogicalResult lockstep::applyStepForm(mlir::ModuleOp module,
                                            const CodegenOptions &options) {
  using namespace mlir;
  if (options.stepForm == "graph")
    return success();
  auto main = module.lookupSymbol<func::FuncOp>("main");
  std::string why;
  bool ragged = options.stepForm == "ragged";
  if (!main || (!ragged && !findServingRoles(main, why)))
    return success(); // not a decoder: its graph is what there is to run
  if (!options.recognizeAttention) {
    if (ragged)
      return module.emitError("--step=ragged needs --attention=recognized");
    return success();
  }
  registerPipelinePasses();
  // Built on a copy, so that `auto` can keep the graph when it fails.
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(main);
  auto copy = cast<func::FuncOp>(b.clone(*main));
  copy.setName("main.ragged");
  PassManager pm(module.getContext(), func::FuncOp::getOperationName());
  if (failed(parsePassPipeline("lockstep-ragged-step, lockstep-verify-rows", pm, llvm::errs())))
    return failure();
  std::optional<Location> firstAt;
  std::string first;
  LogicalResult r = success();
  {
    // `auto` turns the first error into a warning below.
    ScopedDiagnosticHandler keep(module.getContext(), [&](Diagnostic &d) {
      if (ragged)
        return failure(); // passed on to the caller's handler
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error && !firstAt) {
        firstAt = d.getLocation();
        first = d.str();
      }
      return success();
    });
    r = pm.run(copy);
  }
  if (failed(r)) {
    copy.erase();
    if (ragged)
      return failure();
    emitWarning(firstAt ? *firstAt : main.getLoc())
        << "served one request at a time (the exported graph, not the ragged "
           "step): "
        << (firstAt ? first : std::string("the ragged step failed"));
    return success();
  }
  main.erase();
  copy.setName("main");
  return success();
}

void lockstep::declarePipelineGlobals(mlir::ModuleOp module, const CodegenOptions &options) {
  using namespace mlir;
  if (options.reductionPolicy != "adaptive-threads" ||
      module.lookupSymbol(kThreadCountGlobal))
    return;
  module.getContext()->getOrLoadDialect<memref::MemRefDialect>();
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto type = MemRefType::get({}, b.getI64Type());
  memref::GlobalOp::create(b, module.getLoc(), kThreadCountGlobal, b.getStringAttr("public"),
                           type,
                           DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                                  b.getI64IntegerAttr(1).getValue()),
                           /*constant=*/false, /*alignment=*/IntegerAttr());
}

mlir::LogicalResult
lockstep::buildLinalgPipeline(mlir::OpPassManager &pm,
                              const CodegenOptions &options) {
  registerPipelinePasses();
  return mlir::parsePassPipeline("func.func(" + linalgPassText(options) + ")", pm,
                                 llvm::errs());
}

mlir::LogicalResult
lockstep::buildCPUCodegenPipeline(mlir::OpPassManager &pm,
                                  const CodegenOptions &options) {
  registerPipelinePasses();
  // Upstream passes are named by their pipeline text, which is stable across
  // MLIR versions where their C++ constructors are not.
  std::string pipeline =
      "func.func(" + linalgPassText(options) + ", lockstep-expand-math, lockstep-fuse-elementwise, lockstep-outputs-to-args),"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "lockstep-record-pool-writes,"
      "buffer-deallocation-pipeline,"
      "func.func(lockstep-lower-copies, lockstep-cpu-microkernels" +
      std::string(options.cpuLevel == kCpuLevelV4 ? "{lanes=16 cols=32 rows=8 panel-rows=8 strip-rows=8}"
                                                  : "{panel-rows=8}") +
      ", lockstep-cpu-gather-kernels,"
      " lockstep-forward-fills, convert-linalg-to-parallel-loops,"
      " lockstep-promote-accumulators),"
      "lockstep-outline-parallel,"
      "expand-strided-metadata, lower-affine, convert-scf-to-cf, convert-vector-to-llvm,"
      "convert-math-to-llvm, convert-math-to-libm, finalize-memref-to-llvm,"
      "convert-arith-to-llvm, convert-index-to-llvm, convert-cf-to-llvm,"
      "convert-func-to-llvm, reconcile-unrealized-casts, lockstep-emit-entry,"
      "lockstep-dispatch-parallel";
  return mlir::parsePassPipeline(pipeline, pm, llvm::errs());
}
