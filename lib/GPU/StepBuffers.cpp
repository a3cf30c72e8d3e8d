//===- StepBuffers.cpp - Which of a bufferized step's buffers may overlap -===//
#include "lockstep/GPU/StepBuffers.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;

bool lockstep::stepBuffersMayOverlap(Value a, Value b) {
  if (a == b)
    return true;
  auto known = [](Value v) {
    if (Operation *d = v.getDefiningOp())
      return isa<memref::AllocOp, memref::AllocaOp, memref::GetGlobalOp>(d);
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
  };
  if (!known(a) || !known(b))
    return true;
  auto ga = a.getDefiningOp<memref::GetGlobalOp>(), gb = b.getDefiningOp<memref::GetGlobalOp>();
  return ga && gb && ga.getName() == gb.getName();
}
