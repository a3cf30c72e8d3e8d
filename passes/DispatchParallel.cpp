//===- DispatchParallel.cpp - The lockstep-dispatch-parallel pass ---------===//
#include "lockstep/Passes/Passes.h"

namespace lockstep {
#define GEN_PASS_DEF_DISPATCHPARALLEL
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

constexpr const char *kImpl = "lockstep_parallel_for_impl";
constexpr const char *kPool = "lockstep_thread_pool";
constexpr const char *kHelper = "lockstep_parallel_for";

struct DispatchParallelPass
    : public lockstep::impl::DispatchParallelBase<DispatchParallelPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<LLVM::CallOp> calls;
    module.walk([&](LLVM::CallOp c) {
      auto callee = c.getCallee();
      if (callee && callee->starts_with("lockstep_par_"))
        calls.push_back(c);
    });
    if (calls.empty())
      return;
    MLIRContext *ctx = &getContext();
    ptr = LLVM::LLVMPointerType::get(ctx);
    i64 = IntegerType::get(ctx, 64);
    Location loc = module.getLoc();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    makeGlobal(b, loc, kImpl);
    makeGlobal(b, loc, kPool);
    LLVM::LLVMFuncOp helper = makeHelper(b, loc);
    llvm::StringMap<LLVM::LLVMFuncOp> tramps;
    for (LLVM::CallOp c : calls) {
      auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(*c.getCallee());
      LLVM::LLVMFuncOp &tramp = tramps[callee.getName()];
      if (!tramp)
        tramp = makeTrampoline(b, callee);
      rewriteCall(c, callee, tramp, helper);
    }
  }

  Type ptr, i64;

  void makeGlobal(OpBuilder &b, Location loc, StringRef name) {
    auto g = LLVM::GlobalOp::create(b, loc, ptr, /*isConstant=*/false,
                                    LLVM::Linkage::External, name, Attribute());
    Block *init = b.createBlock(&g.getInitializerRegion());
    OpBuilder ib = OpBuilder::atBlockBegin(init);
    LLVM::ReturnOp::create(ib, loc, LLVM::ZeroOp::create(ib, loc, ptr).getResult());
    b.setInsertionPointToEnd(g->getParentOfType<ModuleOp>().getBody());
  }

  /// lockstep_parallel_for(tramp, ctx, lo, hi): through the runtime's pool
  /// when it set one, else the whole range on this thread.
  LLVM::LLVMFuncOp makeHelper(OpBuilder &b, Location loc) {
    auto voidTy = LLVM::LLVMVoidType::get(b.getContext());
    auto type = LLVM::LLVMFunctionType::get(voidTy, {ptr, ptr, i64, i64});
    auto fn = LLVM::LLVMFuncOp::create(b, loc, kHelper, type, LLVM::Linkage::Internal);
    Block *entry = fn.addEntryBlock(b);
    Block *serial = b.createBlock(&fn.getBody());
    Block *pooled = b.createBlock(&fn.getBody());
    OpBuilder eb = OpBuilder::atBlockBegin(entry);
    Value implAddr = LLVM::AddressOfOp::create(eb, loc, ptr, kImpl);
    Value impl = LLVM::LoadOp::create(eb, loc, ptr, implAddr);
    Value null = LLVM::ZeroOp::create(eb, loc, ptr);
    Value isNull = LLVM::ICmpOp::create(eb, loc, LLVM::ICmpPredicate::eq, impl, null);
    LLVM::CondBrOp::create(eb, loc, isNull, serial, pooled);
    auto args = entry->getArguments();
    OpBuilder sb = OpBuilder::atBlockBegin(serial);
    auto trampType = LLVM::LLVMFunctionType::get(voidTy, {ptr, i64, i64});
    LLVM::CallOp::create(sb, loc, trampType, ValueRange{args[0], args[1], args[2], args[3]});
    LLVM::ReturnOp::create(sb, loc, ValueRange{});
    OpBuilder pb = OpBuilder::atBlockBegin(pooled);
    Value poolAddr = LLVM::AddressOfOp::create(pb, loc, ptr, kPool);
    Value pool = LLVM::LoadOp::create(pb, loc, ptr, poolAddr);
    auto implType = LLVM::LLVMFunctionType::get(voidTy, {ptr, ptr, ptr, i64, i64});
    LLVM::CallOp::create(pb, loc, implType,
                         ValueRange{impl, pool, args[0], args[1], args[2], args[3]});
    LLVM::ReturnOp::create(pb, loc, ValueRange{});
    b.setInsertionPointToEnd(fn->getParentOfType<ModuleOp>().getBody());
    return fn;
  }

  static LLVM::LLVMStructType contextType(LLVM::LLVMFuncOp callee) {
    auto params = callee.getFunctionType().getParams().drop_front(2);
    return LLVM::LLVMStructType::getLiteral(callee.getContext(), params);
  }

  /// <callee>_tramp(ctx, begin, end): loads the arguments from ctx.
  LLVM::LLVMFuncOp makeTrampoline(OpBuilder &b, LLVM::LLVMFuncOp callee) {
    Location loc = callee.getLoc();
    auto voidTy = LLVM::LLVMVoidType::get(b.getContext());
    auto type = LLVM::LLVMFunctionType::get(voidTy, {ptr, i64, i64});
    auto fn = LLVM::LLVMFuncOp::create(b, loc, (callee.getName() + "_tramp").str(),
                                       type, LLVM::Linkage::Internal);
    Block *entry = fn.addEntryBlock(b);
    OpBuilder eb = OpBuilder::atBlockBegin(entry);
    LLVM::LLVMStructType st = contextType(callee);
    SmallVector<Value> args = {entry->getArgument(1), entry->getArgument(2)};
    for (auto [i, t] : llvm::enumerate(st.getBody())) {
      Value addr = LLVM::GEPOp::create(eb, loc, ptr, st, entry->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{0, (int32_t)i});
      args.push_back(LLVM::LoadOp::create(eb, loc, t, addr));
    }
    LLVM::CallOp::create(eb, loc, callee, args);
    LLVM::ReturnOp::create(eb, loc, ValueRange{});
    b.setInsertionPointToEnd(fn->getParentOfType<ModuleOp>().getBody());
    return fn;
  }

  void rewriteCall(LLVM::CallOp c, LLVM::LLVMFuncOp callee,
                   LLVM::LLVMFuncOp tramp, LLVM::LLVMFuncOp helper) {
    Location loc = c.getLoc();
    LLVM::LLVMStructType st = contextType(callee);
    // The context lives in the caller's frame, allocated once at its entry.
    auto caller = c->getParentOfType<LLVM::LLVMFuncOp>();
    OpBuilder ab = OpBuilder::atBlockBegin(&caller.getBody().front());
    Value one = LLVM::ConstantOp::create(ab, loc, i64, ab.getI64IntegerAttr(1));
    Value ctxPtr = LLVM::AllocaOp::create(ab, loc, ptr, st, one);
    OpBuilder b(c);
    auto operands = c.getArgOperands();
    for (unsigned i = 2; i < operands.size(); ++i) {
      Value addr = LLVM::GEPOp::create(b, loc, ptr, st, ctxPtr,
                                       ArrayRef<LLVM::GEPArg>{0, (int32_t)(i - 2)});
      LLVM::StoreOp::create(b, loc, operands[i], addr);
    }
    Value trampAddr = LLVM::AddressOfOp::create(b, loc, tramp);
    LLVM::CallOp::create(b, loc, helper,
                         ValueRange{trampAddr, ctxPtr, operands[0], operands[1]});
    c.erase();
  }
};

} // namespace
