//===- MapToGPU.cpp - The lockstep-map-to-gpu pass ------------------------===//
//
// Puts every piece of a bufferized step that touches tensor data on the GPU,
// so that the host code only allocates, computes sizes and launches:
//   - each top-level scf.parallel (a linalg op's parallel dims, its
//     reduction loops inside) becomes a gpu.launch over its iteration space
//     flattened to one dim: 256 threads a block, ceil(N / 256) blocks, each
//     thread one point (delinearized, guarded by id < N). The body, its
//     reduction loops included, runs in that thread in the order it had:
//     mapping changes where a point is computed, never the order of a fold;
//   - a top-level scf.for marked lockstep.disjoint_iterations (the ragged
//     step's loop that writes each new row into its own pool slot) is a
//     parallel loop over its iterations, merged with the parallel loop that
//     its body ends in (the row's copy) when that loop's bounds are known
//     outside: a thread a copied element;
//   - any other top-level op that reads or writes data in memory becomes a
//     gpu.launch of one thread, so that the host never reads device memory;
//   - an scf.if is a choice made on the host (from sizes: the adaptive
//     control picks its split so): its branches are mapped like the top
//     level, their allocations staying host calls;
//   - small buffers that only hold shapes (stored, loaded and read by
//     memref.reshape on the host) become stack allocations (memref.alloca):
//     they stay host memory, and every other allocation is device memory
//     (the host code's malloc and free become the runtime's device
//     allocator, lockstep-device-alloc);
//   - constants read inside a launch (memref.get_global) are read there, so
//     that kernel outlining copies them into the GPU module.
// A launch of zero points is skipped (scf.if N > 0).
//
//===----------------------------------------------------------------------===//
#include "lockstep/GPU/ParallelPoints.h"
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Chunking.h"
#include "lockstep/Reductions/Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace lockstep {
#define GEN_PASS_DEF_MAPTOGPU
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using lockstep::rootOf;

namespace {


bool onStack(Value memref) {
  Operation *d = rootOf(memref).getDefiningOp();
  return d && isa<memref::AllocaOp>(d);
}

/// Whether `op` (or an op inside it) reads or writes memory that is not a
/// host stack buffer.
bool touchesData(Operation *op) {
  SmallVector<std::pair<Operation *, Value>> accesses;
  if (!lockstep::memoryAccesses(op, accesses))
    return true; // unknown effects
  return llvm::any_of(accesses, [](const std::pair<Operation *, Value> &a) {
    return !isa<MemRefType>(a.second.getType()) || !onStack(a.second);
  });
}

/// Whether `op` runs on the host: it is at the top level of `func` or only
/// inside host-level branches (scf.if on sizes, such as the adaptive
/// control's choice of split), not inside a loop that will be a kernel.
bool atHostLevel(Operation *op, func::FuncOp func) {
  for (Operation *p = op->getParentOp(); p != func.getOperation(); p = p->getParentOp())
    if (!p || !isa<scf::IfOp>(p))
      return false;
  return true;
}

/// An allocation whose every use is a host-side shape access: a scalar store
/// or load at the host level (atHostLevel), the shape operand of
/// memref.reshape, or its dealloc.
bool isShapeBuffer(memref::AllocOp alloc, func::FuncOp func) {
  auto type = alloc.getType();
  if (!type.hasStaticShape() || type.getNumElements() > 16 || type.getRank() != 1)
    return false;
  for (OpOperand &use : alloc->getUses()) {
    Operation *u = use.getOwner();
    if (isa<memref::StoreOp, memref::LoadOp, memref::DeallocOp>(u) && atHostLevel(u, func))
      continue;
    if (auto r = dyn_cast<memref::ReshapeOp>(u); r && r.getShape() == alloc.getResult())
      continue;
    return false;
  }
  return true;
}

struct MapToGPUPass : public lockstep::impl::MapToGPUBase<MapToGPUPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    // Shape buffers first: host stack memory.
    SmallVector<memref::AllocOp> shapes;
    func.walk([&](memref::AllocOp a) {
      if (isShapeBuffer(a, func))
        shapes.push_back(a);
    });
    for (memref::AllocOp a : shapes) {
      OpBuilder b(a);
      auto alloca = memref::AllocaOp::create(b, a.getLoc(), a.getType());
      for (Operation *u : llvm::make_early_inc_range(a->getUsers()))
        if (isa<memref::DeallocOp>(u))
          u->erase();
      a.getResult().replaceAllUsesWith(alloca.getResult());
      a.erase();
    }
    if (failed(mapBlock(body)))
      return signalPassFailure();
    // Constants read in a launch are read there.
    bool hostMemory = false;
    func.walk([&](gpu::LaunchOp launch) {
      llvm::SetVector<Value> used;
      launch.getBody().walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          if (auto g = v.getDefiningOp<memref::GetGlobalOp>();
              g && !launch->isProperAncestor(g))
            used.insert(v);
      });
      OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
      for (Value v : used) {
        Operation *clone = b.clone(*v.getDefiningOp());
        v.replaceUsesWithIf(clone->getResult(0), [&](OpOperand &u) {
          return launch->isProperAncestor(u.getOwner());
        });
      }
      // Every other buffer a kernel reads must be device memory.
      launch.getBody().walk([&](Operation *inner) {
        for (Value v : inner->getOperands()) {
          if (!isa<MemRefType>(v.getType()) || launch->isAncestor(v.getParentBlock()->getParentOp()))
            continue;
          Operation *root = rootOf(v).getDefiningOp();
          if (root && isa<memref::AllocaOp, memref::GetGlobalOp>(root)) {
            inner->emitError("a GPU kernel would read host memory (")
                << root->getName() << ")";
            hostMemory = true;
          }
        }
      });
    });
    if (hostMemory)
      signalPassFailure();
  }

  /// Maps the ops of a host-level block: parallel loops to launches over
  /// their points, other ops that touch data to one-thread launches, and
  /// the branches of an scf.if (a choice made on the host, from sizes) in
  /// place, so that their allocations stay host calls.
  LogicalResult mapBlock(Block &block) {
    for (Operation &op : llvm::make_early_inc_range(block.without_terminator())) {
      if (isa<gpu::LaunchOp>(op))
        continue; // launched already (lockstep-tile-contractions)
      if (auto p = dyn_cast<scf::ParallelOp>(op)) {
        if (failed(launchParallel(p)))
          return failure();
        continue;
      }
      if (auto f = dyn_cast<scf::ForOp>(op);
          f && f->hasAttr(lockstep::kDisjointIterationsAttr) && f.getNumResults() == 0) {
        if (failed(launchParallel(asParallel(f))))
          return failure();
        continue;
      }
      if (auto branch = dyn_cast<scf::IfOp>(op)) {
        for (Region *r : {&branch.getThenRegion(), &branch.getElseRegion()})
          if (!r->empty() && failed(mapBlock(r->front())))
            return failure();
        continue;
      }
      if (!touchesData(&op))
        continue;
      if (op.getNumResults() != 0)
        return op.emitError("an op that reads or writes device memory and returns values "
                            "cannot run on the host of a GPU step");
      launchSerial(&op);
    }
    return success();
  }

  /// The scf.parallel that a disjoint scf.for is: over its iterations and,
  /// when its body is ops that only read followed by one scf.parallel whose
  /// bounds come from outside the loop, over that loop's points too (the
  /// reads repeated at each point).
  scf::ParallelOp asParallel(scf::ForOp f) {
    OpBuilder b(f);
    Location loc = f.getLoc();
    Block *body = f.getBody();
    auto inner = body->getNumArguments() == 1 && !body->without_terminator().empty()
                     ? dyn_cast<scf::ParallelOp>(*std::prev(body->without_terminator().end()))
                     : scf::ParallelOp();
    auto outside = [&](Value v) {
      Operation *d = v.getDefiningOp();
      return d ? !f->isProperAncestor(d) : v.getParentBlock() != body;
    };
    bool merge = inner && inner.getNumResults() == 0;
    for (Operation &o : body->without_terminator()) {
      if (&o == inner.getOperation())
        break;
      merge &= o.getNumRegions() == 0 && !hasEffect<MemoryEffects::Write>(&o) &&
               !hasEffect<MemoryEffects::Allocate>(&o);
    }
    if (merge)
      for (Value v : llvm::concat<Value>(inner.getLowerBound(), inner.getUpperBound(),
                                         inner.getStep()))
        merge &= outside(v);
    SmallVector<Value> lbs{f.getLowerBound()}, ubs{f.getUpperBound()}, steps{f.getStep()};
    if (merge) {
      llvm::append_range(lbs, inner.getLowerBound());
      llvm::append_range(ubs, inner.getUpperBound());
      llvm::append_range(steps, inner.getStep());
    }
    auto p = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
    OpBuilder pb = OpBuilder::atBlockBegin(p.getBody());
    IRMapping map;
    map.map(f.getInductionVar(), p.getInductionVars()[0]);
    for (Operation &o : body->without_terminator()) {
      if (merge && &o == inner.getOperation()) {
        for (auto [from, to] : llvm::zip(inner.getInductionVars(),
                                          llvm::drop_begin(p.getInductionVars())))
          map.map(from, to);
        for (Operation &io : inner.getBody()->without_terminator())
          pb.clone(io, map);
        break;
      }
      pb.clone(o, map);
    }
    f.erase();
    return p;
  }

  /// gpu.launch with one thread running `op`.
  void launchSerial(Operation *op) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
    Block &kb = launch.getBody().front();
    OpBuilder kbb = OpBuilder::atBlockBegin(&kb);
    op->moveBefore(&kb, kb.end());
    kbb.setInsertionPointToEnd(&kb);
    gpu::TerminatorOp::create(kbb, loc);
    ++numSerial;
  }

  /// gpu.launch over the flattened iteration space of `p`.
  LogicalResult launchParallel(scf::ParallelOp p) {
    if (p.getNumResults() != 0)
      return p.emitError("a parallel loop with reductions cannot be mapped to the GPU");
    OpBuilder b(p);
    Location loc = p.getLoc();
    SmallVector<Value> counts;
    Value total = lockstep::parallelPointCounts(b, loc, p, counts);
    lockstep::FlatLaunch fl = lockstep::buildFlatLaunch(b, loc, total);
    Value id = fl.id;
    Value in = arith::CmpIOp::create(fl.body, loc, arith::CmpIPredicate::ult, id, total);
    auto inside = scf::IfOp::create(fl.body, loc, in, /*withElse=*/false);
    OpBuilder ib = OpBuilder::atBlockBegin(&inside.getThenRegion().front());
    // Delinearize, last dim fastest.
    IRMapping map;
    lockstep::mapParallelPoint(ib, loc, p, id, counts, map);
    for (Operation &op : p.getBody()->without_terminator())
      ib.clone(op, map);
    p.erase();
    ++numKernels;
    return success();
  }
};

} // namespace
