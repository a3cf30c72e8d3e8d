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
// tiles). The kernels are built by lockstep/GPU/ContractionKernel.h.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/GPU/ContractionKernel.h"
#include "lockstep/GPU/TileShapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
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
    for (Contraction &c : found)
      tile(c);
  }

  std::vector<lockstep::ShapeChoice> table; // the shapes, fewest rows first

  void tile(Contraction &c) {
    linalg::GenericOp op = c.op;
    Location loc = op.getLoc();
    // A fill of the output just before: the tiles start from its value (one
    // kernel fewer); the plain generic below keeps it.
    linalg::FillOp fill = lockstep::forwardableFill(op, 0);
    if (fill)
      c.init = fill.getDpsInputOperand(0)->get();
    OpBuilder b(op);
    SmallVector<Value> sizes = lockstep::loopSizes(b, op);
    auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
    Value gridZ = cst(1);
    for (unsigned d : c.batch)
      gridZ = arith::MulIOp::create(b, loc, gridZ, sizes[d]);
    auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
      return arith::CmpIOp::create(b, loc, p, x, y).getResult();
    };
    Value take = cmp(arith::CmpIPredicate::ugt, sizes[c.m], cst(minRows));
    take = arith::AndIOp::create(b, loc, take, cmp(arith::CmpIPredicate::ugt, sizes[c.n], cst(0)));
    take = arith::AndIOp::create(b, loc, take, cmp(arith::CmpIPredicate::ugt, gridZ, cst(0)));
    take = arith::AndIOp::create(b, loc, take,
                                 cmp(arith::CmpIPredicate::ule, gridZ, cst(kMaxGridZ)));
    auto branch = scf::IfOp::create(b, loc, take, /*withElse=*/true);
    OpBuilder tb = OpBuilder::atBlockBegin(&branch.getThenRegion().front());
    // The shapes as a chain of ifs on the rows: rows <= limit ? shape : next.
    for (const lockstep::ShapeChoice &choice : table) {
      if (choice.maxRows == 0) {
        lockstep::buildContractionLaunch(tb, loc, c, sizes, choice.shape, gridZ);
        break;
      }
      Value fits = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::ule, sizes[c.m],
                                         arith::ConstantIndexOp::create(tb, loc, choice.maxRows));
      auto pick = scf::IfOp::create(tb, loc, fits, /*withElse=*/true);
      OpBuilder sb = OpBuilder::atBlockBegin(&pick.getThenRegion().front());
      lockstep::buildContractionLaunch(sb, loc, c, sizes, choice.shape, gridZ);
      tb = OpBuilder::atBlockBegin(&pick.getElseRegion().front());
    }
    op->moveBefore(branch.getElseRegion().front().getTerminator());
    if (fill)
      fill->moveBefore(op);
    ++numTiled;
  }
};

} // namespace
