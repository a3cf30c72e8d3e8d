//===- GroupContractions.cpp - The lockstep-group-contractions pass -------===//
//
// Contractions that read the same first input (a step's q, k and v
// projections of one normed hidden state; gate and up) are moved next to
// each other, each with the ops that compute its operands, so that
// lockstep-tile-contractions can give them one launch. Only ops free of
// side effects move, and only up, past ops they do not depend on: no value
// changes. See the pass's description in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Contraction.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace lockstep {
#define GEN_PASS_DEF_GROUPCONTRACTIONS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

/// Whether `a` and `b` are the same tensor: one value, or the same reshape
/// of the same tensor.
bool same(Value a, Value b) {
  if (a == b)
    return true;
  auto ea = a.getDefiningOp<tensor::ExpandShapeOp>(), eb = b.getDefiningOp<tensor::ExpandShapeOp>();
  if (ea && eb)
    return ea.getType() == eb.getType() &&
           ea.getReassociationIndices() == eb.getReassociationIndices() &&
           same(ea.getSrc(), eb.getSrc());
  auto ca = a.getDefiningOp<tensor::CollapseShapeOp>(), cb = b.getDefiningOp<tensor::CollapseShapeOp>();
  if (ca && cb)
    return ca.getType() == cb.getType() &&
           ca.getReassociationIndices() == cb.getReassociationIndices() &&
           same(ca.getSrc(), cb.getSrc());
  return false;
}

/// A contraction on tensors.
std::optional<lockstep::Contraction> match(Operation *op) {
  auto g = dyn_cast<linalg::GenericOp>(op);
  if (!g || !g.hasPureTensorSemantics())
    return std::nullopt;
  return lockstep::matchContraction(g);
}

/// Siblings: the same first input (see `same`), rows and k.
bool siblings(const lockstep::Contraction &a, const lockstep::Contraction &b) {
  linalg::GenericOp ga = a.op, gb = b.op;
  return same(ga.getDpsInputOperand(0)->get(), gb.getDpsInputOperand(0)->get()) &&
         lockstep::sameRowsAndK(a, b);
}

struct GroupContractionsPass
    : public lockstep::impl::GroupContractionsBase<GroupContractionsPass> {
  void runOnOperation() override {
    getOperation().walk([&](Block *block) { group(*block); });
  }

  void group(Block &block) {
    SmallVector<lockstep::Contraction> found;
    for (Operation &op : block)
      if (auto c = match(&op))
        found.push_back(*c);
    DenseSet<Operation *> moved;
    for (size_t i = 0; i < found.size(); ++i) {
      if (moved.contains(found[i].op))
        continue;
      lockstep::Contraction &first = found[i];
      SmallPtrSet<Operation *, 4> members{first.op};
      Operation *last = first.op;
      for (size_t j = i + 1; j < found.size(); ++j) {
        lockstep::Contraction &c = found[j];
        if (moved.contains(c.op) || !siblings(first, c) || !moveAfter(c.op, members, last))
          continue;
        // One first input for the group: the same SSA value once bufferized.
        Value x = c.op.getDpsInputOperand(0)->get();
        c.op.getDpsInputOperand(0)->set(first.op.getDpsInputOperand(0)->get());
        if (Operation *d = x.getDefiningOp(); d && d->use_empty() && isMemoryEffectFree(d))
          d->erase();
        moved.insert(c.op);
        members.insert(c.op);
        last = c.op;
        ++numMoved;
      }
    }
  }

  /// Moves `op`, and the ops after `last` that it depends on, to just after
  /// `last`. Between the group's first member and `last` stand only members
  /// and the ops moved with them; so `op` may move unless it depends on a
  /// member or on an op with side effects after `last`.
  bool moveAfter(Operation *op, const SmallPtrSetImpl<Operation *> &members, Operation *last) {
    Operation *first = *llvm::min_element(members, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    if (!last->isBeforeInBlock(op))
      return false;
    Block *block = op->getBlock();
    BackwardSliceOptions options;
    options.omitUsesFromAbove = false;
    options.filter = [&](Operation *o) {
      return o->getBlock() == block && (o == first || first->isBeforeInBlock(o));
    };
    SetVector<Operation *> slice;
    if (failed(getBackwardSlice(op, &slice, options)))
      return false;
    SmallVector<Operation *> later;
    for (Operation *o : slice) {
      if (members.contains(o))
        return false;
      if (!last->isBeforeInBlock(o))
        continue; // moved with an earlier member, or the first's
      if (!isMemoryEffectFree(o))
        return false;
      later.push_back(o);
    }
    llvm::sort(later, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    Operation *at = last;
    for (Operation *o : later) {
      o->moveAfter(at);
      at = o;
    }
    op->moveAfter(at);
    return true;
  }
};

} // namespace
