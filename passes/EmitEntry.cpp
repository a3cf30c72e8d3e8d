//===- EmitEntry.cpp - The lockstep-emit-entry pass -----------------------===//
#include "lockstep/Passes/Passes.h"

namespace lockstep {
#define GEN_PASS_DEF_EMITENTRY
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;

namespace {

struct EmitEntryPass : public lockstep::impl::EmitEntryBase<EmitEntryPass> {
  using EmitEntryBase::EmitEntryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string name = "_mlir_ciface_" + function;
    auto target = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
    if (!target) {
      module.emitError("no LLVM function '") << name << "' to wrap";
      return signalPassFailure();
    }
    LLVM::LLVMFunctionType fnType = target.getFunctionType();
    for (Type t : fnType.getParams())
      if (!isa<LLVM::LLVMPointerType>(t)) {
        target.emitError("expected only pointer arguments in the C interface");
        return signalPassFailure();
      }
    MLIRContext *ctx = &getContext();
    Location loc = target.getLoc();
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto entryType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr});
    auto entry = LLVM::LLVMFuncOp::create(b, loc, "lockstep_entry", entryType);
    Block *block = entry.addEntryBlock(b);
    b.setInsertionPointToStart(block);
    SmallVector<Value> args;
    for (unsigned i = 0; i < fnType.getNumParams(); ++i) {
      Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, block->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{(int32_t)i});
      args.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
    }
    LLVM::CallOp::create(b, loc, target, args);
    LLVM::ReturnOp::create(b, loc, ValueRange{});

    // The wrapped function is glue between work functions (allocations,
    // descriptors, calls): it is not worth optimizing, and optimizing one
    // function of that size is what compile time would go to.
    if (auto main = module.lookupSymbol<LLVM::LLVMFuncOp>(function)) {
      OpBuilder ab(main);
      main.setPassthroughAttr(ab.getArrayAttr(
          {ab.getStringAttr("optnone"), ab.getStringAttr("noinline")}));
    }

    // The importer's argument attributes (onnx.name, lockstep.weight, ...)
    // have no meaning in LLVM IR.
    module.walk([](LLVM::LLVMFuncOp f) {
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        DictionaryAttr attrs = f.getArgAttrDict(i);
        if (!attrs)
          continue;
        for (NamedAttribute a : attrs.getValue())
          if (a.getName().getValue().starts_with("onnx.") ||
              a.getName().getValue().starts_with("lockstep."))
            f.removeArgAttr(i, a.getName());
      }
    });
  }
};

} // namespace
