//===- RecordPoolWrites.cpp - The lockstep-record-pool-writes pass --------===//
//
// After bufferization, which of the ragged step's pool arguments its own code
// writes (the new key and value rows stored in place): the module's
// `lockstep.pool_writes`, from which the artifact emitter tells the runtime
// that it need not copy the new rows itself. See the pass's description in
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace lockstep {
#define GEN_PASS_DEF_RECORDPOOLWRITES
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

/// Whether an op writes `buffer`, a view of it, or the loop-carried value
/// (iter_arg and result) it is the init of. Ops whose effects are unknown do
/// not count: a pool is written only where an op says so.
bool written(Value buffer) {
  SmallVector<Value> work{buffer};
  llvm::SmallPtrSet<void *, 16> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v.getAsOpaquePointer()).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == v)
          for (Value r : user->getResults())
            work.push_back(r);
        continue;
      }
      if (auto loop = dyn_cast<LoopLikeOpInterface>(user)) {
        if (BlockArgument a = loop.getTiedLoopRegionIterArg(&use))
          work.push_back(a);
        if (OpResult r = loop.getTiedLoopResult(&use))
          work.push_back(r);
        continue;
      }
      if (hasEffect<MemoryEffects::Write>(user, v))
        return true;
    }
  }
  return false;
}

struct RecordPoolWritesPass
    : public lockstep::impl::RecordPoolWritesBase<RecordPoolWritesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    SmallVector<int64_t> streams;
    for (BlockArgument arg : main.getArguments()) {
      auto role = main.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lockstep.role");
      int64_t s = 0;
      if (!role || !role.getValue().starts_with("pool.") ||
          role.getValue().drop_front(5).getAsInteger(10, s) ||
          !isa<BaseMemRefType>(arg.getType()) || !written(arg))
        continue;
      streams.push_back(s);
      ++numWritten;
    }
    llvm::sort(streams);
    module->setAttr("lockstep.pool_writes",
                    DenseI64ArrayAttr::get(module.getContext(), streams));
  }
};

} // namespace
