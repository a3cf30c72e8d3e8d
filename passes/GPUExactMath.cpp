//===- GPUExactMath.cpp - The lockstep-gpu-exact-math pass ----------------===//
//
// Runs on a gpu.module before convert-gpu-to-nvvm. That conversion turns
// math ops, and the LLVM intrinsics that convert-math-to-llvm would make of
// them, into libdevice calls (`__nv_sqrtf` is `sqrt.approx.f32`). Here the
// math ops that remain after lockstep-expand-math, each of which has an
// exact (correctly rounded or exact) PTX instruction, become direct
// `llvm.call_intrinsic` calls that the NVPTX backend selects as that
// instruction: fma → fma.rn, sqrt → sqrt.rn, fabs, floor/ceil/trunc/
// roundeven/round → cvt.rmi/rpi/rzi/rni, copysign. Any other math op, and any
// arith op with fast-math flags (which ptxas would fuse or approximate), is
// an error at the op: the portable profile's bits would not be the CPU's.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

namespace lockstep {
#define GEN_PASS_DEF_GPUEXACTMATH
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

/// The LLVM intrinsic (without its type suffix) that is exact for `op`.
std::optional<StringRef> intrinsicFor(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<StringRef>>(op)
      .Case<math::FmaOp>([](auto) { return StringRef("llvm.fma"); })
      .Case<math::SqrtOp>([](auto) { return StringRef("llvm.sqrt"); })
      .Case<math::AbsFOp>([](auto) { return StringRef("llvm.fabs"); })
      .Case<math::FloorOp>([](auto) { return StringRef("llvm.floor"); })
      .Case<math::CeilOp>([](auto) { return StringRef("llvm.ceil"); })
      .Case<math::TruncOp>([](auto) { return StringRef("llvm.trunc"); })
      .Case<math::RoundEvenOp>([](auto) { return StringRef("llvm.roundeven"); })
      .Case<math::RoundOp>([](auto) { return StringRef("llvm.round"); })
      .Case<math::CopySignOp>([](auto) { return StringRef("llvm.copysign"); })
      .Default([](Operation *) { return std::nullopt; });
}

struct GPUExactMathPass : public lockstep::impl::GPUExactMathBase<GPUExactMathPass> {
  void runOnOperation() override {
    bool failed = false;
    SmallVector<Operation *> math;
    getOperation()->walk([&](Operation *op) {
      if (auto fm = dyn_cast<arith::ArithFastMathInterface>(op)) {
        auto flags = fm.getFastMathFlagsAttr();
        if (flags && flags.getValue() != arith::FastMathFlags::none) {
          op->emitError("fast-math flags in a GPU kernel: ptxas would fuse or "
                        "approximate this op, and its bits would not be the CPU's");
          failed = true;
        }
      }
      if (op->getDialect() && op->getDialect()->getNamespace() == "math")
        math.push_back(op);
    });
    for (Operation *op : math) {
      std::optional<StringRef> name = intrinsicFor(op);
      Type t = op->getNumResults() == 1 ? op->getResult(0).getType() : Type();
      if (!name || !t || !(t.isF32() || t.isF64())) {
        op->emitError("'") << op->getName()
                           << "' in a GPU kernel would become a libdevice call, whose "
                              "bits are not the CPU's (Lockstep's own math must expand "
                              "it first)";
        failed = true;
        continue;
      }
      OpBuilder b(op);
      std::string full = (*name + (t.isF32() ? ".f32" : ".f64")).str();
      auto call = LLVM::CallIntrinsicOp::create(b, op->getLoc(), t, b.getStringAttr(full),
                                                op->getOperands());
      op->getResult(0).replaceAllUsesWith(call.getResult(0));
      op->erase();
      ++numReplaced;
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
