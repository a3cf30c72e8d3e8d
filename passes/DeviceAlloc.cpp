//===- DeviceAlloc.cpp - The lockstep-device-alloc pass -------------------===//
//
// Runs on the host side of a GPU step after its lowering to the LLVM
// dialect. Every buffer that the host code allocates there is tensor data
// for the kernels (lockstep-map-to-gpu turned the host's own shape buffers
// into stack allocations), so the allocator it calls, `malloc`,
// `aligned_alloc` and `free`, becomes the runtime's device allocator:
// `lockstep_device_malloc`, `lockstep_device_aligned_alloc`,
// `lockstep_device_free`, with the same signatures. The runtime's CUDA
// backend serves them from device memory (an arena per step).
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace lockstep {
#define GEN_PASS_DEF_DEVICEALLOC
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

struct DeviceAllocPass : public lockstep::impl::DeviceAllocBase<DeviceAllocPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    static const std::pair<const char *, const char *> renames[] = {
        {"malloc", "lockstep_device_malloc"},
        {"aligned_alloc", "lockstep_device_aligned_alloc"},
        {"free", "lockstep_device_free"}};
    for (auto [from, to] : renames) {
      auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(from);
      if (!fn)
        continue;
      if (failed(SymbolTable::replaceAllSymbolUses(fn, StringAttr::get(&getContext(), to),
                                                   module)))
        return signalPassFailure();
      fn.setSymName(to);
    }
  }
};

} // namespace
