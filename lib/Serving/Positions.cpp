//===- Positions.cpp - Where a decoder graph reads its positions ----------===//
#include "lockstep/Serving/Positions.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

bool isInt(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<IntegerType>(t.getElementType()) && !t.getElementType().isInteger(1);
}

bool mentions(Value v, const std::string &sym) {
  return llvm::any_of(symbolicDimsOrEmpty(v), [&](const DimExpr &d) { return d.mentions(sym); });
}

} // namespace

bool lockstep::readsAnInput(Value v) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 32> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (isa<BlockArgument>(x))
      return true;
    Operation *d = x.getDefiningOp();
    if (!d || !seen.insert(d).second || isa<ShapeOp>(d))
      continue;
    for (Value o : d->getOperands())
      work.push_back(o);
  }
  return false;
}

llvm::SetVector<OpOperand *> lockstep::computedPositionUses(func::FuncOp func,
                                                           const std::string &seq) {
  llvm::SetVector<OpOperand *> uses;
  auto take = [&](OpOperand &o) {
    if (mentions(o.get(), seq) && !readsAnInput(o.get()))
      uses.insert(&o);
  };
  func.walk([&](Operation *op) {
    if (auto g = dyn_cast<GatherOp>(op)) {
      Operation *table = g.getData().getDefiningOp();
      if (table && isa<WeightOp, ConstantOp>(table))
        take(g->getOpOperand(1));
      return;
    }
    if (!isa<CosOp, SinOp>(op))
      return;
    // Backwards through float ops to the int -> float casts.
    SmallVector<Value> work{op->getOperand(0)};
    llvm::SmallPtrSet<Operation *, 32> seen;
    while (!work.empty()) {
      Operation *d = work.pop_back_val().getDefiningOp();
      if (!d || !seen.insert(d).second || isa<WeightOp, ConstantOp, ShapeOp>(d))
        continue;
      if (auto c = dyn_cast<CastOp>(d); c && isInt(c.getInput())) {
        take(c->getOpOperand(0));
        continue;
      }
      for (Value o : d->getOperands())
        work.push_back(o);
    }
  });
  return uses;
}

void lockstep::eraseDeadOps(Block &body) {
  bool changed = true;
  while (changed) {
    SmallVector<Operation *> dead;
    for (Operation &op : body.without_terminator())
      if (op.use_empty() && isMemoryEffectFree(&op))
        dead.push_back(&op);
    for (Operation *op : llvm::reverse(dead))
      op->erase();
    changed = !dead.empty();
  }
}
