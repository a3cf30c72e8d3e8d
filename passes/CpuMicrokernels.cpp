//===- CpuMicrokernels.cpp - The lockstep-cpu-microkernels pass -----------===//
//
// Finds each bufferized f32 contraction whose output's columns are
// contiguous and replaces it with the vector loops of
// lockstep/CPU/ContractionKernels.h: register tiles for many rows, panels
// for fewer rows than a tile (decode). Every lane is one output, folded
// with the generic's fma over k in increasing order from the output's own
// value. So only which outputs are computed together, and by which thread,
// changes; never an output's fold (see the pass's description in
// Passes.td).
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/CPU/ContractionKernels.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace lockstep {
#define GEN_PASS_DEF_CPUMICROKERNELS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using lockstep::Contraction;
using lockstep::cstIndex;
using lockstep::kCpuLanes;
using lockstep::lastIs;
using lockstep::WeightLayout;

namespace {

/// Whether the body is `yield fma(x, y, out)` with {x, y} the two inputs,
/// all f32; `inputFirst` says whether x is the first input.
bool isF32Fma(linalg::GenericOp op, bool &inputFirst) {
  Block *body = op.getBlock();
  if (!llvm::hasSingleElement(body->without_terminator()))
    return false;
  auto fma = dyn_cast<math::FmaOp>(body->front());
  if (!fma || body->getTerminator()->getOperand(0) != fma.getResult())
    return false;
  for (BlockArgument a : body->getArguments())
    if (!a.getType().isF32())
      return false;
  Value in0 = body->getArgument(0), in1 = body->getArgument(1);
  if (fma.getC() != body->getArgument(2))
    return false;
  inputFirst = fma.getA() == in0;
  return (fma.getA() == in0 && fma.getB() == in1) || (fma.getA() == in1 && fma.getB() == in0);
}

struct CpuMicrokernelsPass
    : public lockstep::impl::CpuMicrokernelsBase<CpuMicrokernelsPass> {
  using CpuMicrokernelsBase::CpuMicrokernelsBase;

  void runOnOperation() override {
    if (lanes != kCpuLanes && lanes != 2 * kCpuLanes) {
      getOperation().emitError("lockstep-cpu-microkernels: lanes must be ")
          << kCpuLanes << " or " << 2 * kCpuLanes;
      return signalPassFailure();
    }
    if (panelRows != 0 && panelRows < rows) {
      getOperation().emitError("lockstep-cpu-microkernels: panel-rows must be 0 or at least rows");
      return signalPassFailure();
    }
    if (stripRows < 0) {
      getOperation().emitError("lockstep-cpu-microkernels: strip-rows must be 0 or more");
      return signalPassFailure();
    }
    if (rows < 1 || cols < lanes || cols % lanes || cols % kCpuLanes) {
      getOperation().emitError("lockstep-cpu-microkernels: rows must be at least 1 and cols a "
                               "positive multiple of lanes (")
          << lanes << ")";
      return signalPassFailure();
    }
    struct Found {
      Contraction c;
      bool inputFirst;
      WeightLayout layout;
      bool stripsOnly;
    };
    SmallVector<Found> found;
    getOperation().walk([&](linalg::GenericOp g) {
      std::optional<Contraction> c = lockstep::matchContraction(g);
      bool inputFirst = true;
      if (!c || !isF32Fma(g, inputFirst))
        return;
      // The output's columns contiguous (the accumulators' stores); the
      // weights' too, or else packed for the tiles.
      if (!lastIs(g.getMatchingIndexingMap(g.getDpsInitOperand(0)), c->n) ||
          !lockstep::unitLastStride(g.getDpsInitOperand(0)->get()))
        return;
      WeightLayout layout = lockstep::weightLayout(*c);
      // Transposed weights too long in k to pack (a reduction folded whole,
      // as the adaptive controls fold them) take the strips, which read
      // them in place, at any number of rows.
      bool packs = lockstep::canPackColumns(*c, cols);
      bool stripsOnly = layout == WeightLayout::Transposed && !packs &&
                        !ShapedType::isDynamic(c->length);
      if (layout != WeightLayout::Columns && !packs && !stripsOnly)
        return;
      found.push_back({*c, inputFirst, layout, stripsOnly});
    });
    for (Found &f : found)
      rewrite(f.c, f.inputFirst, f.layout, f.stripsOnly);
  }

  void rewrite(Contraction c, bool inputFirst, WeightLayout layout, bool stripsOnly) {
    linalg::GenericOp op = c.op;
    Location loc = op.getLoc();
    // A fill of the output just before: the kernels that hold outputs in
    // registers start from its value (a pass over memory fewer); the forms
    // that fold in memory keep it.
    linalg::FillOp fill = lockstep::forwardableFill(op, 0);
    if (fill)
      c.init = fill.getDpsInputOperand(0)->get();
    // A partial's combine right after it: the strips run it too (each
    // chunk's outputs added to the combine's at once, never stored); the
    // tiles leave it after them.
    std::optional<lockstep::StripCombine> combine;
    if (layout == WeightLayout::Transposed)
      combine = lockstep::stripCombine(c);
    const lockstep::StripCombine *sc = combine ? &*combine : nullptr;
    OpBuilder b(op);
    SmallVector<Value> sizes = lockstep::loopSizes(b, op);
    lockstep::CpuContractionKernels kernels(c, sizes, rows, cols, lanes, inputFirst, layout);
    if (stripsOnly) {
      kernels.runCombine(sc);
      kernels.buildTransposedPanels(b, loc);
    } else {
      // Fewer rows than a tile: the panels (for weights of neither layout,
      // the generic as it is); else the tiles.
      // (Transposed weights with strip-rows set: up to that many rows.)
      int64_t limit = panelRows ? panelRows : rows;
      if (layout == WeightLayout::Transposed && stripRows)
        limit = stripRows + 1;
      Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, sizes[c.m],
                                        cstIndex(b, loc, limit));
      auto branch = scf::IfOp::create(b, loc, few, /*withElse=*/true);
      OpBuilder pb = OpBuilder::atBlockTerminator(&branch.getThenRegion().front());
      if (fill && layout != WeightLayout::Transposed)
        pb.clone(*fill);
      if (layout == WeightLayout::Columns)
        kernels.buildPanels(pb, loc);
      else if (layout == WeightLayout::Transposed) {
        kernels.runCombine(sc);
        kernels.buildTransposedPanels(pb, loc);
        kernels.runCombine(nullptr);
      } else {
        pb.clone(*op);
      }
      OpBuilder tb = OpBuilder::atBlockTerminator(&branch.getElseRegion().front());
      kernels.buildTiles(tb, loc);
      if (sc) {
        if (sc->fill)
          tb.clone(*sc->fill);
        tb.clone(*sc->op);
      }
    }
    op.erase();
    if (fill)
      fill.erase();
    if (combine) {
      combine->op.erase();
      if (combine->fill)
        combine->fill.erase();
      ++numCombined;
    }
    ++numRewritten;
  }
};

} // namespace
