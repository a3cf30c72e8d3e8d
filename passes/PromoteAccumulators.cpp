//===- PromoteAccumulators.cpp - The lockstep-promote-accumulators pass ---===//
//
// A reduction lowered to loops reads its output element, adds to it and
// stores it back at every iteration of its reduction loop. Where nothing
// else in the loop can touch that element, the value is carried in a
// register instead (an iter_arg): loaded once before the loop, stored once
// after it. The fold is the same ops in the same order on the same values
// (an f32 in a register equals the f32 stored and loaded), so no bit
// changes; what goes is a round trip through memory at every iteration,
// which serialized the loop's loads behind its stores (a GPU kernel waited
// for global memory at every step of every fold). See the pass's
// description in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Contraction.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace lockstep {
#define GEN_PASS_DEF_PROMOTEACCUMULATORS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using lockstep::rootOf;

namespace {

/// The kinds of buffer a memref can be a view of, for aliasing: a fresh
/// allocation (it aliases only views of itself), a global of the module
/// (only views of the same global), an argument of the function (any buffer
/// that is not one of the first two kinds), or a value made some other way
/// (a branch's or a loop's result, say), which may be any buffer.
enum class Root { Allocation, Global, Argument, Unknown };

Root kindOf(Value root) {
  Operation *d = root.getDefiningOp();
  if (d && isa<memref::AllocOp, memref::AllocaOp>(d))
    return Root::Allocation;
  if (d && isa<memref::GetGlobalOp>(d))
    return Root::Global;
  if (auto arg = dyn_cast<BlockArgument>(root);
      arg && isa<FunctionOpInterface>(arg.getOwner()->getParentOp()))
    return Root::Argument;
  return Root::Unknown;
}

/// Whether `a` and `b`, the roots of two buffers, may be the same buffer.
bool mayAlias(Value a, Value b) {
  if (a == b)
    return true;
  Root ka = kindOf(a), kb = kindOf(b);
  if (ka == Root::Unknown || kb == Root::Unknown)
    return true;
  if (ka == Root::Argument && kb == Root::Argument)
    return true; // the caller's buffers may be one
  if (ka == Root::Global && kb == Root::Global)
    return a.getDefiningOp<memref::GetGlobalOp>().getName() ==
           b.getDefiningOp<memref::GetGlobalOp>().getName();
  return false; // distinct allocations, or two different kinds
}

/// A load and a store of one element of `memref` at the same indices, both
/// directly in the loop's body, the load first.
struct Accumulator {
  memref::LoadOp load;
  memref::StoreOp store;
};

/// The accumulator of `loop` that can live in a register: its memref and
/// indices are defined outside the loop, and no other access in the loop
/// (nested ones included) may touch its buffer.
std::optional<Accumulator> findAccumulator(scf::ForOp loop) {
  SmallVector<std::pair<Operation *, Value>> accesses;
  if (!lockstep::memoryAccesses(loop, accesses))
    return std::nullopt;
  Block *body = loop.getBody();
  for (memref::StoreOp store : body->getOps<memref::StoreOp>()) {
    Value m = store.getMemRef();
    if (!loop.isDefinedOutsideOfLoop(m) ||
        !llvm::all_of(store.getIndices(), [&](Value i) { return loop.isDefinedOutsideOfLoop(i); }))
      continue;
    memref::LoadOp load;
    for (memref::LoadOp l : body->getOps<memref::LoadOp>())
      if (l.getMemRef() == m && llvm::equal(l.getIndices(), store.getIndices()) &&
          l->isBeforeInBlock(store)) {
        load = l;
        break;
      }
    if (!load)
      continue;
    Value root = rootOf(m);
    bool alone = llvm::all_of(accesses, [&](const std::pair<Operation *, Value> &a) {
      return a.first == load || a.first == store || !mayAlias(rootOf(a.second), root);
    });
    if (alone)
      return Accumulator{load, store};
  }
  return std::nullopt;
}

struct PromoteAccumulatorsPass
    : public lockstep::impl::PromoteAccumulatorsBase<PromoteAccumulatorsPass> {
  void runOnOperation() override {
    // Inner loops first: promoting one leaves a load before it and a store
    // after it in the loop around it, which may then be promoted too.
    SmallVector<scf::ForOp> loops;
    getOperation()->walk<WalkOrder::PostOrder>([&](scf::ForOp f) { loops.push_back(f); });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops) {
      while (std::optional<Accumulator> acc = findAccumulator(loop)) {
        loop = promote(rewriter, loop, *acc);
        ++numPromoted;
      }
    }
  }

  /// Carries `acc`'s value through `loop` as an iter_arg; returns the new
  /// loop.
  scf::ForOp promote(RewriterBase &rewriter, scf::ForOp loop, Accumulator acc) {
    Location loc = acc.load.getLoc();
    rewriter.setInsertionPoint(loop);
    Value init = memref::LoadOp::create(rewriter, loc, acc.load.getMemRef(),
                                        acc.load.getIndices());
    Value stored = acc.store.getValueToStore();
    FailureOr<LoopLikeOpInterface> grown = loop.replaceWithAdditionalYields(
        rewriter, ValueRange{init}, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
          return SmallVector<Value>{stored};
        });
    auto next = cast<scf::ForOp>(grown->getOperation());
    rewriter.replaceAllUsesWith(acc.load.getResult(), next.getRegionIterArgs().back());
    rewriter.setInsertionPointAfter(next);
    memref::StoreOp::create(rewriter, acc.store.getLoc(), next.getResults().back(),
                            acc.store.getMemRef(), acc.store.getIndices());
    rewriter.eraseOp(acc.store);
    rewriter.eraseOp(acc.load);
    return next;
  }
};

} // namespace
