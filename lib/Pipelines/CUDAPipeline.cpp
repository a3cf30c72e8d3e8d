//===- CUDAPipeline.cpp - The passes from the onnx form to NVPTX kernels --===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Target/CUDACodegen.h"
#include "PipelineText.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

bool lockstep::parseTarget(const std::string &text, CodegenOptions &options,
                           std::string &error) {
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(text).split(parts, ',');
  bool cpu = false, cuda = false;
  options.chip = kDefaultCudaChip;
  for (llvm::StringRef t : parts) {
    bool &seen = t == "cpu" ? cpu : cuda;
    if (t != "cpu" && t != "cuda" && !t.starts_with("cuda:")) {
      error = "unknown --target '" + t.str() +
              "' (expected cpu, cuda, cuda:sm_NN, or cpu,cuda for both in one artifact)";
      return false;
    }
    if (seen) {
      error = "--target names " + std::string(t == "cpu" ? "cpu" : "cuda") + " twice";
      return false;
    }
    seen = true;
    if (t.consume_front("cuda:")) {
      unsigned sm = 0;
      std::string chip = t.str();
      if (!t.consume_front("sm_") || t.getAsInteger(10, sm) || sm < 50 || sm > 200) {
        error = "--target=cuda:CHIP takes a chip such as sm_80 or sm_90, not '" + chip + "'";
        return false;
      }
      options.chip = "sm_" + std::to_string(sm);
    }
  }
  options.target = cpu && cuda ? "cpu,cuda" : cpu ? "cpu" : "cuda";
  return true;
}

bool lockstep::targetsCpu(const CodegenOptions &options) {
  return options.target == "cpu" || options.target == "cpu,cuda";
}

bool lockstep::targetsCuda(const CodegenOptions &options) {
  return options.target == "cuda" || options.target == "cpu,cuda";
}

mlir::LogicalResult lockstep::buildCUDACodegenPipeline(mlir::OpPassManager &pm,
                                                       const CodegenOptions &options) {
  registerPipelinePasses();
  std::string linalg = linalgPassText(options, /*cuda=*/true);
  // Upstream passes are named by their pipeline text, which is stable across
  // MLIR versions where their C++ constructors are not. The kernels' own
  // lowering follows ../shared/GPU.md: no fast-math anywhere, exact math
  // before convert-gpu-to-nvvm (which would call libdevice), PTX (isa) so
  // that the gate can read every instruction.
  std::string pipeline =
      "func.func(" + linalg + ", lockstep-expand-math, lockstep-fuse-elementwise,"
      " lockstep-group-contractions, lockstep-outputs-to-args),"
      "eliminate-empty-tensors,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "lockstep-record-pool-writes,"
      "buffer-deallocation-pipeline,"
      "func.func(lockstep-lower-copies, lockstep-reductions-innermost, lockstep-tile-contractions" +
      (options.gpuTiles.empty() ? std::string() : "{shapes=\"" + options.gpuTiles + "\"}") +
      ", lockstep-forward-fills, convert-linalg-to-parallel-loops,"
      " lockstep-promote-accumulators, lockstep-fuse-pool-writes,"
      " lockstep-warp-reductions, lockstep-fuse-siblings, lockstep-map-to-gpu),"
      "gpu-launch-sink-index-computations, gpu-kernel-outlining,"
      "gpu.module(lockstep-gpu-exact-math, lockstep-align-workgroup-memory),"
      "nvvm-attach-target{chip=" + options.chip + " O=3},"
      "gpu.module(expand-strided-metadata, lower-affine, convert-scf-to-cf,"
      " convert-gpu-to-nvvm, canonicalize, cse),"
      "reconcile-unrealized-casts, gpu-module-to-binary{format=isa}, lockstep-ptx-gate,"
      " lockstep-kernels-to-section, lockstep-launch-plan,"
      "expand-strided-metadata, lower-affine, convert-scf-to-cf,"
      "finalize-memref-to-llvm, convert-arith-to-llvm, convert-index-to-llvm,"
      "convert-cf-to-llvm, gpu-to-llvm, convert-func-to-llvm, reconcile-unrealized-casts,"
      "lockstep-emit-entry, lockstep-device-alloc";
  return mlir::parsePassPipeline(pipeline, pm, llvm::errs());
}

std::vector<std::pair<std::string, std::string>>
lockstep::kernelPTX(mlir::ModuleOp module) {
  std::vector<std::pair<std::string, std::string>> out;
  // After lockstep-kernels-to-section the PTX is in the module's dictionary.
  if (auto kernels = module->getAttrOfType<mlir::DictionaryAttr>("lockstep.kernels")) {
    for (mlir::NamedAttribute k : kernels)
      out.push_back({k.getName().str(), llvm::cast<mlir::StringAttr>(k.getValue()).str()});
    return out;
  }
  module.walk([&](mlir::gpu::BinaryOp bin) {
    for (mlir::Attribute a : bin.getObjects())
      if (auto obj = llvm::dyn_cast<mlir::gpu::ObjectAttr>(a))
        out.push_back({bin.getSymName().str(), obj.getObject().getValue().str()});
  });
  return out;
}
