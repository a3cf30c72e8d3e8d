//===- FuseSiblings.cpp - The lockstep-fuse-siblings pass -----------------===//
//
// Consecutive parallel loops that do not depend on each other (RoPE of q,
// RoPE of k with its pool write, v's transpose with its pool write: three
// kernels after the q/k/v projection) become one kernel over the points of
// all of them, a thread a point as lockstep-map-to-gpu would give each: the
// first N1 threads run the first loop's points, the next N2 the second's,
// and so on. No loop reads what another writes, so the order between them
// never mattered; each point runs the same ops in the same order: no bit
// changes. See the pass's description in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "lockstep/GPU/ParallelPoints.h"
#include "lockstep/GPU/StepBuffers.h"
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace lockstep {
#define GEN_PASS_DEF_FUSESIBLINGS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using lockstep::rootOf;

namespace {


/// A loop of a group, with the roots of the buffers it reads and writes.
struct Sibling {
  scf::ParallelOp loop;
  SmallVector<Value> reads, writes;
};

std::optional<Sibling> asSibling(scf::ParallelOp p) {
  if (p.getNumResults())
    return std::nullopt;
  Sibling s{p, {}, {}};
  SmallVector<std::pair<Operation *, Value>> accesses;
  if (!lockstep::memoryAccesses(p, accesses))
    return std::nullopt;
  for (auto [op, m] : accesses) {
    if (!isa<memref::LoadOp, memref::StoreOp>(op))
      return std::nullopt;
    (isa<memref::StoreOp>(op) ? s.writes : s.reads).push_back(rootOf(m));
  }
  return s;
}

bool overlaps(ArrayRef<Value> a, ArrayRef<Value> b) {
  for (Value x : a)
    for (Value y : b)
      if (lockstep::stepBuffersMayOverlap(x, y))
        return true;
  return false;
}

/// Whether `s` depends on none of `group` nor they on it.
bool independent(const Sibling &s, ArrayRef<Sibling> group) {
  for (const Sibling &g : group)
    if (overlaps(s.writes, g.writes) || overlaps(s.writes, g.reads) ||
        overlaps(s.reads, g.writes))
      return false;
  return true;
}

/// Ops that may stand between two siblings, which then run after them: no
/// memory effect but allocation.
bool movable(Operation &op) {
  if (op.getNumRegions())
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(&op);
  if (!effects)
    return isMemoryEffectFree(&op);
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::all_of(list, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Allocate>(e.getEffect());
  });
}

struct FuseSiblingsPass : public lockstep::impl::FuseSiblingsBase<FuseSiblingsPass> {
  void runOnOperation() override {
    auto func = getOperation();
    if (!func.isExternal())
      visit(func.getBody().front());
  }

  void visit(Block &block) {
    std::vector<std::vector<Sibling>> groups;
    std::vector<Sibling> group;
    auto close = [&] {
      if (group.size() >= 2)
        groups.push_back(group);
      group.clear();
    };
    for (Operation &op : block.without_terminator()) {
      if (auto p = dyn_cast<scf::ParallelOp>(op)) {
        std::optional<Sibling> s = asSibling(p);
        if (!s) {
          close();
          continue;
        }
        if (!independent(*s, group))
          close();
        group.push_back(*s);
        continue;
      }
      if (auto branch = dyn_cast<scf::IfOp>(op)) {
        close();
        for (Region *r : {&branch.getThenRegion(), &branch.getElseRegion()})
          if (!r->empty())
            visit(r->front());
        continue;
      }
      if (!movable(op))
        close();
    }
    close();
    for (std::vector<Sibling> &g : groups)
      fuse(g);
  }

  /// One launch over the points of all loops of `group`, at the last one's
  /// place: thread `id` runs point `id - offset` of the loop whose range
  /// holds it.
  void fuse(std::vector<Sibling> &group) {
    scf::ParallelOp last = group.back().loop;
    OpBuilder b(last);
    Location loc = last.getLoc();
    auto cst = [&](OpBuilder &at, int64_t v) {
      return arith::ConstantIndexOp::create(at, loc, v).getResult();
    };
    SmallVector<SmallVector<Value>> counts(group.size());
    SmallVector<Value> offsets;
    Value total = cst(b, 0);
    for (auto [s, c] : llvm::zip(group, counts)) {
      offsets.push_back(total);
      total = arith::AddIOp::create(b, loc, total,
                                    lockstep::parallelPointCounts(b, loc, s.loop, c));
    }
    lockstep::FlatLaunch fl = lockstep::buildFlatLaunch(b, loc, total);
    OpBuilder &kbb = fl.body;
    Value id = fl.id;
    for (auto [i, s] : llvm::enumerate(group)) {
      Value end = i + 1 < group.size() ? offsets[i + 1] : total;
      Value from = arith::CmpIOp::create(kbb, loc, arith::CmpIPredicate::uge, id, offsets[i]);
      Value to = arith::CmpIOp::create(kbb, loc, arith::CmpIPredicate::ult, id, end);
      Value mine = arith::AndIOp::create(kbb, loc, from, to);
      auto branch = scf::IfOp::create(kbb, loc, mine, /*withElse=*/false);
      OpBuilder ib = OpBuilder::atBlockBegin(&branch.getThenRegion().front());
      IRMapping map;
      Value point = arith::SubIOp::create(ib, loc, id, offsets[i]);
      lockstep::mapParallelPoint(ib, loc, s.loop, point, counts[i], map);
      for (Operation &o : s.loop.getBody()->without_terminator())
        ib.clone(o, map);
    }
    for (Sibling &s : group)
      s.loop.erase();
    ++numKernels;
    numFused += group.size();
  }
};

} // namespace
