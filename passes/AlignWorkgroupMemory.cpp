//===- AlignWorkgroupMemory.cpp - The lockstep-align-workgroup-memory pass ===//
//
// Runs on a gpu.module after gpu-kernel-outlining, before
// convert-gpu-to-nvvm. That conversion makes each workgroup attribution of
// a gpu.func a `.shared` array aligned only to its element unless the
// attribution carries `llvm.align`, and gpu.launch has no place for that
// attribute. The register-blocked kernels of lockstep-tile-contractions read
// and write their workgroup tiles as vector<4xf32> (16 bytes, in rows of a
// multiple of 16 bytes), so every workgroup attribution of a kernel gets
// `llvm.align` of at least 16: the widest access any kernel makes.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"

namespace lockstep {
#define GEN_PASS_DEF_ALIGNWORKGROUPMEMORY
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

constexpr int64_t kWorkgroupAlignment = 16;

struct AlignWorkgroupMemoryPass
    : public lockstep::impl::AlignWorkgroupMemoryBase<AlignWorkgroupMemoryPass> {
  void runOnOperation() override {
    StringRef name = LLVM::LLVMDialect::getAlignAttrName();
    getOperation().walk([&](gpu::GPUFuncOp f) {
      for (unsigned i = 0, e = f.getNumWorkgroupAttributions(); i < e; ++i) {
        auto have = dyn_cast_or_null<IntegerAttr>(f.getWorkgroupAttributionAttr(i, name));
        if (!have || have.getInt() < kWorkgroupAlignment)
          f.setWorkgroupAttributionAttr(
              i, name, Builder(f.getContext()).getI64IntegerAttr(kWorkgroupAlignment));
      }
    });
  }
};

} // namespace
