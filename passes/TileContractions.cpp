//===- TileContractions.cpp - The lockstep-tile-contractions pass ---------===//
//
// Gives each bufferized contraction (a linalg.generic with two inputs, one
// output and one innermost reduction dim k of static length) GPU launches
// tiled for reuse, one per tile shape below, and the host code that picks
// one from the call's rows (or keeps the plain generic, a point a thread,
// for lockstep-map-to-gpu). A block owns a BM x BN tile of (m, n) for one
// point of the batch dims, stages BK values of k of both inputs in workgroup
// memory, and each thread folds its TM x TN outputs over them with the
// generic's body, k increasing, from the output's own value. So each
// output's fold is the generic's, and only which thread computes it changes
// (see the pass's description in Passes.td). Few rows take plain tiles (an
// output, or 4 rows of a column, a thread; scalar loads); many rows take
// register-blocked ones (4x8 or 8x8 outputs a thread in groups of 4,
// vector<4> loads where the operands allow, double-buffered workgroup
// tiles). Contractions that read the same input side by side (q, k and v;
// gate and up) share one launch a shape. The kernels are built by
// lockstep/GPU/ContractionKernel.h.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/GPU/ContractionKernel.h"
#include "lockstep/GPU/TileShapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace lockstep {
#define GEN_PASS_DEF_TILECONTRACTIONS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

using lockstep::Contraction;

constexpr int64_t kMaxGridZ = 65535;

/// A contraction whose k is its last loop (lockstep-reductions-innermost
/// puts it there), of a static length divisible by 8.
std::optional<Contraction> match(linalg::GenericOp op) {
  std::optional<Contraction> c = lockstep::matchContraction(op);
  if (!c || c->k + 1 != op.getNumLoops() || ShapedType::isDynamic(c->length) ||
      c->length % 8)
    return std::nullopt;
  return c;
}

/// The value of input `i` (the output) of `g`, and input `i`'s map.
Value input(linalg::GenericOp g, unsigned i) { return g.getDpsInputOperand(i)->get(); }
Value output(linalg::GenericOp g) { return g.getDpsInitOperand(0)->get(); }

/// Whether `b` may join a launch with the contractions of `group` (see
/// lockstep::buildContractionGroupLaunch): the same first input through
/// the same map, which reads every dim but n and k; the same loops, k and
/// kind of second input; and no member reads or writes what another
/// writes.
bool joins(ArrayRef<Contraction> group, const Contraction &b) {
  const Contraction &a = group.front();
  if (a.op->getBlock() != b.op->getBlock() || input(a.op, 0) != input(b.op, 0) ||
      !lockstep::sameRowsAndK(a, b) || a.n != b.n || a.bKFastest != b.bKFastest)
    return false;
  auto element = [](Value v) { return cast<MemRefType>(v.getType()).getElementType(); };
  if (element(input(a.op, 1)) != element(input(b.op, 1)) ||
      element(output(a.op)) != element(output(b.op)))
    return false;
  Value out = lockstep::rootOf(output(b.op));
  for (const Contraction &m : group) {
    Value mOut = lockstep::rootOf(output(m.op));
    if (mOut == out || mOut == lockstep::rootOf(input(b.op, 1)) ||
        mOut == lockstep::rootOf(input(b.op, 0)) || out == lockstep::rootOf(input(m.op, 1)) ||
        out == lockstep::rootOf(input(m.op, 0)))
      return false;
  }
  return true;
}

/// Whether `op`, between two members of a group, may run before the
/// group's launch (which takes the last member's place): it computes
/// sizes or views, allocates, or fills or frees a buffer that no member
/// reads and no member before it writes.
bool mayPrecede(Operation *op, ArrayRef<Contraction> group, const Contraction &next) {
  if (isMemoryEffectFree(op) || isa<memref::AllocOp>(op))
    return true;
  Value target;
  if (auto fill = dyn_cast<linalg::FillOp>(op); fill && fill.hasPureBufferSemantics())
    target = fill.getDpsInitOperand(0)->get();
  else if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
    target = dealloc.getMemref();
  if (!target)
    return false;
  Value root = lockstep::rootOf(target);
  auto reads = [&](const Contraction &m) {
    return root == lockstep::rootOf(input(m.op, 0)) || root == lockstep::rootOf(input(m.op, 1));
  };
  for (const Contraction &m : group)
    if (reads(m) || root == lockstep::rootOf(output(m.op)))
      return false;
  return !reads(next) &&
         (isa<linalg::FillOp>(op) || root != lockstep::rootOf(output(next.op)));
}

struct TileContractionsPass
    : public lockstep::impl::TileContractionsBase<TileContractionsPass> {
  using TileContractionsBase::TileContractionsBase;

  void runOnOperation() override {
    if (shapes.empty()) {
      table = lockstep::defaultTileShapes();
    } else if (std::string error; !lockstep::parseTileShapes(shapes, table, error)) {
      getOperation().emitError() << "lockstep-tile-contractions: " << error;
      return signalPassFailure();
    }
    SmallVector<Contraction> found;
    getOperation().walk([&](linalg::GenericOp g) {
      if (auto c = match(g))
        found.push_back(*c);
    });
    // Runs of contractions that read the same first input, with nothing
    // between them that the group's launch cannot pass (the step's q, k
    // and v projections; gate and up), become one launch.
    SmallVector<SmallVector<Contraction>> groups;
    for (Contraction &c : found) {
      if (!groups.empty() && joins(groups.back(), c)) {
        bool clear = true;
        for (Operation *o = groups.back().back().op->getNextNode(); o && o != c.op.getOperation();
             o = o->getNextNode())
          clear = clear && mayPrecede(o, groups.back(), c);
        if (clear) {
          groups.back().push_back(c);
          continue;
        }
      }
      groups.push_back({c});
    }
    for (SmallVector<Contraction> &g : groups)
      tile(g);
  }

  std::vector<lockstep::ShapeChoice> table; // the shapes, fewest rows first

  void tile(MutableArrayRef<Contraction> group) {
    // The launch takes the last member's place: every member's operands
    // are defined there, and nothing between reads what a member writes.
    linalg::GenericOp last = group.back().op;
    Location loc = group.size() == 1 ? last.getLoc() : groupLoc(group);
    // A fill of a member's output just before it: the tiles start from its
    // value (one kernel fewer); the plain generic below keeps it.
    SmallVector<linalg::FillOp> fills;
    for (Contraction &c : group) {
      fills.push_back(lockstep::forwardableFill(c.op, 0));
      if (fills.back())
        c.init = fills.back().getDpsInputOperand(0)->get();
    }
    OpBuilder b(last);
    SmallVector<SmallVector<Value>> sizes;
    for (Contraction &c : group)
      sizes.push_back(lockstep::loopSizes(b, c.op));
    auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
    const Contraction &c0 = group.front();
    Value gridZ = cst(1);
    for (unsigned d : c0.batch)
      gridZ = arith::MulIOp::create(b, loc, gridZ, sizes[0][d]);
    auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
      return arith::CmpIOp::create(b, loc, p, x, y).getResult();
    };
    Value take = cmp(arith::CmpIPredicate::ugt, sizes[0][c0.m], cst(minRows));
    for (auto [c, s] : llvm::zip_equal(group, sizes))
      take = arith::AndIOp::create(b, loc, take, cmp(arith::CmpIPredicate::ugt, s[c.n], cst(0)));
    take = arith::AndIOp::create(b, loc, take, cmp(arith::CmpIPredicate::ugt, gridZ, cst(0)));
    take = arith::AndIOp::create(b, loc, take,
                                 cmp(arith::CmpIPredicate::ule, gridZ, cst(kMaxGridZ)));
    auto branch = scf::IfOp::create(b, loc, take, /*withElse=*/true);
    OpBuilder tb = OpBuilder::atBlockBegin(&branch.getThenRegion().front());
    // The shapes as a chain of ifs on the rows: rows <= limit ? shape : next.
    for (const lockstep::ShapeChoice &choice : table) {
      if (choice.maxRows == 0) {
        lockstep::buildContractionGroupLaunch(tb, loc, group, sizes, choice.shape, gridZ);
        break;
      }
      Value fits = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::ule, sizes[0][c0.m],
                                         arith::ConstantIndexOp::create(tb, loc, choice.maxRows));
      auto pick = scf::IfOp::create(tb, loc, fits, /*withElse=*/true);
      OpBuilder sb = OpBuilder::atBlockBegin(&pick.getThenRegion().front());
      lockstep::buildContractionGroupLaunch(sb, loc, group, sizes, choice.shape, gridZ);
      tb = OpBuilder::atBlockBegin(&pick.getElseRegion().front());
    }
    // Without tiles, each member's generic in its own order, after its fill.
    for (auto [c, fill] : llvm::zip_equal(group, fills)) {
      c.op->moveBefore(branch.getElseRegion().front().getTerminator());
      if (fill)
        fill->moveBefore(c.op);
    }
    numTiled += group.size();
    numGrouped += group.size() > 1 ? group.size() : 0;
  }

  /// A group's launch: every member's ONNX node, as one name.
  static Location groupLoc(ArrayRef<Contraction> group) {
    std::string name;
    SmallVector<Location> locs;
    for (const Contraction &c : group) {
      Location l0 = c.op->getLoc();
      locs.push_back(l0);
      l0->walk([&](Location l) {
        if (auto n = dyn_cast<NameLoc>(l)) {
          name += (name.empty() ? "" : "+") + n.getName().str();
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
    }
    MLIRContext *ctx = group.front().op->getContext();
    Location fused = FusedLoc::get(ctx, locs);
    return name.empty() ? fused : NameLoc::get(StringAttr::get(ctx, name), fused);
  }
};

} // namespace
