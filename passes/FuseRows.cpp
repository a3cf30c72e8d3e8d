//===- FuseRows.cpp - The lockstep-fuse-rows pass -------------------------===//
//
// Consecutive parallel loops over the same rows (a residual add, a norm's
// chunk sums, its scaling: [1, T, 2048], [1, T, 8], [1, T, 2048]) in which
// every buffer that one of them writes is touched by all of them only at
// the row they are at, become one kernel of a block a row: the block runs
// the loops' points of its row one loop after another, with a barrier
// between, a thread a point (or a warp a point, for a loop that
// lockstep-warp-reductions would give a warp). No other block reads what a
// block writes, so the barrier orders all that matters. Each point is
// computed by the same ops in the same order as before: no bit changes; a
// norm is one kernel instead of two or three. See the pass's description in
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "lockstep/GPU/ParallelPoints.h"
#include "lockstep/GPU/WarpFold.h"
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/Support/MathExtras.h"

namespace lockstep {
#define GEN_PASS_DEF_FUSEROWS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using lockstep::rootOf;

namespace {

/// Threads a block (a row) at most: 16 warps, so that a thread may have 128
/// registers. A group's blocks have as many as its widest phase's work a
/// row (points, or warps' lanes), rounded up to whole warps.
constexpr int64_t kMaxThreads = 512;
/// Points a row a phase may have at most.
constexpr int64_t kMaxPoints = 8192;

std::optional<int64_t> constant(Value v) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return c.getSExtValue();
  return std::nullopt;
}

/// The value a size is defined by, through `memref.dim` of allocations and
/// of reshapes that keep that dim (the same extent by another name).
Value resolveSize(Value v) {
  for (int guard = 0; guard < 16; ++guard) {
    auto dim = v.getDefiningOp<memref::DimOp>();
    std::optional<int64_t> at = dim ? constant(dim.getIndex()) : std::nullopt;
    if (!at)
      return v;
    Value m = dim.getSource();
    auto type = cast<MemRefType>(m.getType());
    if (!type.isDynamicDim(*at))
      return v;
    if (auto e = m.getDefiningOp<memref::ExpandShapeOp>()) {
      OpFoldResult s = e.getMixedOutputShape()[*at];
      if (auto sv = dyn_cast<Value>(s)) {
        v = sv;
        continue;
      }
      return v;
    }
    if (auto a = m.getDefiningOp<memref::AllocOp>()) {
      v = a.getDynamicSizes()[type.getDynamicDimIndex(*at)];
      continue;
    }
    return v;
  }
  return v;
}

bool sameSize(Value a, Value b) {
  std::optional<int64_t> ca = constant(a), cb = constant(b);
  if (ca || cb)
    return ca && cb && *ca == *cb;
  return resolveSize(a) == resolveSize(b);
}

/// Whether buffers with roots `a` and `b` may overlap (the step's arguments
/// are distinct buffers: see lockstep-fuse-pool-writes).
bool mayOverlap(Value a, Value b) {
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

/// One loop of a row's kernel.
struct Phase {
  mutable scf::ParallelOp loop;
  /// Its rows are its first `rows` dims; the others are static.
  unsigned rows = 0;
  int64_t points = 1;
  std::optional<lockstep::WarpFoldPlan> warp;
  /// Its loads and stores (op, memref, indices), nested ones included.
  SmallVector<Operation *> accesses;
};

std::optional<Phase> asPhase(scf::ParallelOp p) {
  Phase ph;
  ph.loop = p;
  if (p.getNumResults())
    return std::nullopt;
  int last = -1;
  for (unsigned d = 0; d < p.getNumLoops(); ++d) {
    if (constant(p.getLowerBound()[d]) != 0 || constant(p.getStep()[d]) != 1)
      return std::nullopt;
    if (!constant(p.getUpperBound()[d]))
      last = d;
  }
  if (last < 0)
    return std::nullopt; // no rows: one launch of static points
  ph.rows = last + 1;
  for (unsigned d = ph.rows; d < p.getNumLoops(); ++d) {
    int64_t n = *constant(p.getUpperBound()[d]);
    if (n <= 0 || n > kMaxPoints || ph.points * n > kMaxPoints)
      return std::nullopt;
    ph.points *= n;
  }
  SmallVector<std::pair<Operation *, Value>> accesses;
  if (!lockstep::memoryAccesses(p, accesses))
    return std::nullopt;
  for (auto [op, m] : accesses) {
    if (!isa<memref::LoadOp, memref::StoreOp>(op))
      return std::nullopt;
    ph.accesses.push_back(op);
  }
  ph.warp = lockstep::planWarpFold(p);
  return ph;
}

Value memrefOf(Operation *access) {
  if (auto l = dyn_cast<memref::LoadOp>(access))
    return l.getMemRef();
  return cast<memref::StoreOp>(access).getMemRef();
}

ValueRange indicesOf(Operation *access) {
  if (auto l = dyn_cast<memref::LoadOp>(access))
    return l.getIndices();
  return cast<memref::StoreOp>(access).getIndices();
}

/// Whether each of the first `n` reassociation groups is its own dim.
bool keepsLeading(ArrayRef<ReassociationIndices> groups, unsigned n) {
  if (groups.size() < n)
    return false;
  for (unsigned i = 0; i < n; ++i)
    if (groups[i].size() != 1 || groups[i][0] != (int64_t)i)
      return false;
  return true;
}

/// Whether `access` in phase `ph` touches only its own row of its buffer:
/// the buffer's first dims are the rows (through reshapes that keep them),
/// indexed by the phase's row induction variables.
bool atOwnRow(Operation *access, const Phase &ph) {
  Value m = memrefOf(access);
  ValueRange at = indicesOf(access);
  if (at.size() < ph.rows)
    return false;
  // A row dim of extent 1 may be indexed by the constant 0.
  for (unsigned d = 0; d < ph.rows; ++d)
    if (at[d] != ph.loop.getInductionVars()[d] &&
        (constant(at[d]) != 0 || constant(ph.loop.getUpperBound()[d]) != 1))
      return false;
  while (Operation *d = m.getDefiningOp()) {
    if (auto e = dyn_cast<memref::ExpandShapeOp>(d)) {
      if (!keepsLeading(e.getReassociationIndices(), ph.rows))
        return false;
      m = e.getSrc();
      continue;
    }
    if (auto c = dyn_cast<memref::CollapseShapeOp>(d)) {
      if (!keepsLeading(c.getReassociationIndices(), ph.rows))
        return false;
      m = c.getSrc();
      continue;
    }
    return isa<memref::AllocOp>(d); // a buffer of its own
  }
  auto arg = dyn_cast<BlockArgument>(m);
  return arg && isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
}

/// Whether the phases can share a kernel of a block a row: the same rows,
/// and every access to a buffer that one of them writes at its own row.
bool compatible(ArrayRef<Phase> group) {
  const Phase &first = group.front();
  SmallVector<Value> written;
  for (const Phase &ph : group) {
    if (ph.rows != first.rows)
      return false;
    for (unsigned d = 0; d < ph.rows; ++d)
      if (!sameSize(ph.loop.getUpperBound()[d], first.loop.getUpperBound()[d]))
        return false;
    for (Operation *a : ph.accesses)
      if (isa<memref::StoreOp>(a))
        written.push_back(rootOf(memrefOf(a)));
  }
  for (const Phase &ph : group)
    for (Operation *a : ph.accesses) {
      Value root = rootOf(memrefOf(a));
      bool shared = llvm::any_of(written, [&](Value w) { return mayOverlap(root, w); });
      if (shared && !atOwnRow(a, ph))
        return false;
    }
  // The newest phase reads what one before it writes: loops that do not
  // depend on each other are left to lockstep-fuse-siblings, which needs no
  // block a row.
  if (group.size() < 2)
    return true;
  SmallVector<Value> before;
  for (const Phase &ph : group.drop_back(1))
    for (Operation *a : ph.accesses)
      if (isa<memref::StoreOp>(a))
        before.push_back(rootOf(memrefOf(a)));
  return llvm::any_of(group.back().accesses, [&](Operation *a) {
    return isa<memref::LoadOp>(a) && llvm::is_contained(before, rootOf(memrefOf(a)));
  });
}

/// Ops that may stand between two phases, which then run after them: no
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

struct FuseRowsPass : public lockstep::impl::FuseRowsBase<FuseRowsPass> {
  void runOnOperation() override {
    auto func = getOperation();
    if (func.isExternal())
      return;
    visit(func.getBody().front());
  }

  /// The groups of a host-level block (and of its host-level branches).
  void visit(Block &block) {
    std::vector<std::vector<Phase>> groups;
    std::vector<Phase> group;
    auto close = [&] {
      if (group.size() >= 2)
        groups.push_back(group);
      group.clear();
    };
    for (Operation &op : block.without_terminator()) {
      if (auto p = dyn_cast<scf::ParallelOp>(op)) {
        std::optional<Phase> ph = asPhase(p);
        if (!ph) {
          close();
          continue;
        }
        group.push_back(*ph);
        if (!compatible(group)) {
          group.pop_back();
          close();
          group.push_back(*ph);
        }
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
    for (std::vector<Phase> &g : groups)
      fuse(g);
  }

  /// One launch of a block a row at the last phase's place.
  void fuse(std::vector<Phase> &group) {
    scf::ParallelOp last = group.back().loop;
    OpBuilder b(last);
    Location loc = last.getLoc();
    auto cst = [&](OpBuilder &at, int64_t v) {
      return arith::ConstantIndexOp::create(at, loc, v).getResult();
    };
    SmallVector<SmallVector<Value>> counts(group.size());
    for (auto [ph, c] : llvm::zip(group, counts))
      lockstep::parallelPointCounts(b, loc, ph.loop, c);
    Value rows = cst(b, 1);
    for (unsigned d = 0; d < group.front().rows; ++d)
      rows = arith::MulIOp::create(b, loc, rows, counts.front()[d]);
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, rows, cst(b, 0));
    auto guard = scf::IfOp::create(b, loc, any, /*withElse=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    int64_t threads = lockstep::kWarpLanes;
    for (const Phase &ph : group)
      threads = std::max(threads, ph.points * (ph.warp ? lockstep::kWarpLanes : 1));
    threads = std::min<int64_t>(llvm::alignTo(threads, lockstep::kWarpLanes), kMaxThreads);
    Value one = cst(b, 1);
    auto launch = gpu::LaunchOp::create(b, loc, rows, one, one, cst(b, threads), one, one);
    Block &kb = launch.getBody().front();
    OpBuilder kbb = OpBuilder::atBlockBegin(&kb);
    Value row = launch.getBlockIds().x, tid = launch.getThreadIds().x;
    Value warp = arith::DivUIOp::create(kbb, loc, tid, cst(kbb, lockstep::kWarpLanes));
    Value lane = arith::RemUIOp::create(kbb, loc, tid, cst(kbb, lockstep::kWarpLanes));
    for (auto [i, ph] : llvm::enumerate(group)) {
      if (i)
        gpu::BarrierOp::create(kbb, loc);
      Value first = ph.warp ? warp : tid;
      int64_t step = ph.warp ? threads / lockstep::kWarpLanes : threads;
      Value base = arith::MulIOp::create(kbb, loc, row, cst(kbb, ph.points));
      auto each = scf::ForOp::create(kbb, loc, first, cst(kbb, ph.points), cst(kbb, step));
      OpBuilder eb = OpBuilder::atBlockBegin(each.getBody());
      Value id = arith::AddIOp::create(eb, loc, base, each.getInductionVar());
      IRMapping map;
      lockstep::mapParallelPoint(eb, loc, ph.loop, id, counts[i], map);
      if (ph.warp) {
        lockstep::buildWarpFold(eb, loc, ph.loop, *ph.warp, map, lane);
        continue;
      }
      for (Operation &o : ph.loop.getBody()->without_terminator())
        eb.clone(o, map);
    }
    gpu::TerminatorOp::create(kbb, loc);
    for (Phase &ph : group)
      ph.loop.erase();
    ++numKernels;
    numFused += group.size();
  }
};

} // namespace
