//===- LaunchPlan.cpp - The lockstep-launch-plan pass ---------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace lockstep {
#define GEN_PASS_DEF_LAUNCHPLAN
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

/// The ONNX node a launch computes, from its location (the importer names
/// each node's ops "NAME (OpType)"); "-" when it has none. Spaces become
/// underscores: the plan's fields are separated by spaces.
std::string nodeOf(Location loc) {
  std::string name = "-";
  loc->walk([&](Location l) {
    if (auto n = dyn_cast<NameLoc>(l)) {
      name = n.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  for (char &c : name)
    if (c == ' ' || c == '\t' || c == '\n')
      c = '_';
  return name.empty() ? "-" : name;
}

/// A size: its constant, or -1 when the host code computes it.
int64_t sizeOf(Value v) {
  std::optional<int64_t> c = v ? getConstantIntValue(v) : std::optional<int64_t>(0);
  return c ? *c : -1;
}

struct LaunchPlanPass : public lockstep::impl::LaunchPlanBase<LaunchPlanPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    SmallVector<Attribute> plan;
    module.walk([&](gpu::LaunchFuncOp l) {
      gpu::KernelDim3 grid = l.getGridSizeOperandValues();
      gpu::KernelDim3 block = l.getBlockSizeOperandValues();
      auto dims = [&](gpu::KernelDim3 d) {
        return b.getDenseI64ArrayAttr({sizeOf(d.x), sizeOf(d.y), sizeOf(d.z)});
      };
      Value smem = l.getDynamicSharedMemorySize();
      plan.push_back(b.getDictionaryAttr({
          b.getNamedAttr("module", b.getStringAttr(l.getKernelModuleName().getValue())),
          b.getNamedAttr("function", b.getStringAttr(l.getKernelName().getValue())),
          b.getNamedAttr("grid", dims(grid)),
          b.getNamedAttr("block", dims(block)),
          b.getNamedAttr("smem", b.getI64IntegerAttr(smem ? sizeOf(smem) : 0)),
          b.getNamedAttr("node", b.getStringAttr(nodeOf(l.getLoc()))),
      }));
      ++numLaunches;
    });
    module->setAttr("lockstep.launch_plan", ArrayAttr::get(ctx, plan));
  }
};

} // namespace
