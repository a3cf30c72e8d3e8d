//===- KernelsToSection.cpp - The lockstep-kernels-to-section pass --------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace lockstep {
#define GEN_PASS_DEF_KERNELSTOSECTION
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

struct KernelsToSectionPass
    : public lockstep::impl::KernelsToSectionBase<KernelsToSectionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<NamedAttribute> kernels;
    WalkResult r = module.walk([&](gpu::BinaryOp bin) {
      ArrayRef<Attribute> objects = bin.getObjects().getValue();
      auto obj = objects.size() == 1 ? dyn_cast<gpu::ObjectAttr>(objects[0]) : nullptr;
      if (!obj) {
        bin.emitError("a kernel module with other than one object");
        return WalkResult::interrupt();
      }
      std::string ptx = obj.getObject().getValue().str();
      while (!ptx.empty() && ptx.back() == '\0')
        ptx.pop_back();
      std::string key = std::string("lockstep-kernel:") + bin.getSymName().str();
      key.push_back('\0');
      kernels.push_back(NamedAttribute(bin.getSymNameAttr(), StringAttr::get(ctx, ptx)));
      bin.setObjectsAttr(ArrayAttr::get(
          ctx, {gpu::ObjectAttr::get(ctx, obj.getTarget(), obj.getFormat(),
                                     StringAttr::get(ctx, key), obj.getProperties(),
                                     obj.getKernels())}));
      ++numKernels;
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    module->setAttr("lockstep.kernels", DictionaryAttr::get(ctx, kernels));
  }
};

} // namespace
