//===- CpuMicrokernels.cpp - The lockstep-cpu-microkernels pass -----------===//
//
// Computes each bufferized f32 contraction whose weights are contiguous
// along the output's columns in register tiles: `rows` x `cols` outputs in
// vector<8xf32> accumulators, every lane one output, folded with the
// generic's fma over k in increasing order from the output's own value. So
// only which outputs are computed together, and by which thread, changes;
// never an output's fold (see the pass's description in Passes.td).
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Contraction.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace lockstep {
#define GEN_PASS_DEF_CPUMICROKERNELS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using lockstep::Contraction;
using lockstep::indicesOf;

namespace {

constexpr int64_t kLanes = 8; // f32 lanes of an AVX2 register (x86-64-v3)

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

/// Whether `map`'s last result is loop dim `dim`.
bool lastIs(AffineMap map, unsigned dim) {
  if (map.getNumResults() == 0)
    return false;
  auto d = dyn_cast<AffineDimExpr>(map.getResults().back());
  return d && d.getPosition() == dim;
}

bool unitLastStride(Value memref) {
  auto t = dyn_cast<MemRefType>(memref.getType());
  return t && t.getRank() > 0 && t.isLastDimUnitStride();
}

/// Builds the tiles of one contraction.
class Tiles {
public:
  Tiles(const Contraction &c, ArrayRef<Value> sizes, int64_t cols, bool inputFirst)
      : c(c), sizes(sizes), cols(cols), inputFirst(inputFirst) {
    linalg::GenericOp op = c.op;
    a = op.getDpsInputOperand(0)->get();
    b = op.getDpsInputOperand(1)->get();
    out = op.getDpsInitOperand(0)->get();
    aMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
    bMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
    outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  }

  /// The outputs of `rowIdx` x [n0, n0 + cols) in vector accumulators.
  /// `dims` holds the batch dims.
  void vectorTile(OpBuilder &bld, Location loc, SmallVector<Value> dims, ArrayRef<Value> rowIdx,
                  Value n0) {
    auto vt = VectorType::get({kLanes}, bld.getF32Type());
    int64_t nv = cols / kLanes;
    SmallVector<Value> colIdx;
    for (int64_t v = 0; v < nv; ++v)
      colIdx.push_back(arith::AddIOp::create(bld, loc, n0, cst(bld, loc, v * kLanes)));
    auto outAt = [&](OpBuilder &ob, size_t r, int64_t v) {
      dims[c.m] = rowIdx[r];
      dims[c.n] = colIdx[v];
      return indicesOf(ob, loc, outMap, dims);
    };
    SmallVector<Value> init;
    for (size_t r = 0; r < rowIdx.size(); ++r)
      for (int64_t v = 0; v < nv; ++v)
        init.push_back(vector::LoadOp::create(bld, loc, vt, out, outAt(bld, r, v)));
    auto loop = scf::ForOp::create(bld, loc, cst(bld, loc, 0), sizes[c.k], cst(bld, loc, 1), init);
    {
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      dims[c.k] = loop.getInductionVar();
      SmallVector<Value> bs;
      for (int64_t v = 0; v < nv; ++v) {
        dims[c.n] = colIdx[v];
        bs.push_back(vector::LoadOp::create(lb, loc, vt, b, indicesOf(lb, loc, bMap, dims)));
      }
      SmallVector<Value> next;
      for (size_t r = 0; r < rowIdx.size(); ++r) {
        dims[c.m] = rowIdx[r];
        Value x = memref::LoadOp::create(lb, loc, a, indicesOf(lb, loc, aMap, dims));
        Value xs = vector::BroadcastOp::create(lb, loc, vt, x);
        for (int64_t v = 0; v < nv; ++v) {
          Value acc = loop.getRegionIterArgs()[r * nv + v];
          // The lanes of the generic's own fma(in0, in1, out). math.fma, not
          // vector.fma: that one lowers to llvm.intr.fmuladd, which the
          // backend may split into a product and a sum (two roundings).
          next.push_back(inputFirst ? math::FmaOp::create(lb, loc, xs, bs[v], acc)
                                    : math::FmaOp::create(lb, loc, bs[v], xs, acc));
        }
      }
      scf::YieldOp::create(lb, loc, next);
    }
    for (size_t r = 0; r < rowIdx.size(); ++r)
      for (int64_t v = 0; v < nv; ++v)
        vector::StoreOp::create(bld, loc, loop.getResult(r * nv + v), out, outAt(bld, r, v));
  }

  /// Each output of [m0, mEnd) x [n0, nEnd) folded alone, with the
  /// generic's scalar body.
  void scalarTile(OpBuilder &bld, Location loc, SmallVector<Value> dims, Value m0, Value mEnd,
                  Value n0, Value nEnd) {
    Value one = cst(bld, loc, 1);
    auto rows = scf::ForOp::create(bld, loc, m0, mEnd, one);
    OpBuilder rb = OpBuilder::atBlockBegin(rows.getBody());
    dims[c.m] = rows.getInductionVar();
    auto colLoop = scf::ForOp::create(rb, loc, n0, nEnd, one);
    OpBuilder cb = OpBuilder::atBlockBegin(colLoop.getBody());
    dims[c.n] = colLoop.getInductionVar();
    SmallVector<Value> outIdx = indicesOf(cb, loc, outMap, dims);
    Value init = memref::LoadOp::create(cb, loc, out, outIdx);
    auto loop = scf::ForOp::create(cb, loc, cst(cb, loc, 0), sizes[c.k], one, ValueRange{init});
    {
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      dims[c.k] = loop.getInductionVar();
      Value x = memref::LoadOp::create(lb, loc, a, indicesOf(lb, loc, aMap, dims));
      Value y = memref::LoadOp::create(lb, loc, b, indicesOf(lb, loc, bMap, dims));
      Value next = lockstep::applyBody(lb, c.op, x, y, loop.getRegionIterArgs()[0]);
      scf::YieldOp::create(lb, loc, next);
    }
    memref::StoreOp::create(cb, loc, loop.getResult(0), out, outIdx);
  }

  static Value cst(OpBuilder &bld, Location loc, int64_t v) {
    return arith::ConstantIndexOp::create(bld, loc, v);
  }

private:
  const Contraction &c;
  ArrayRef<Value> sizes; // each loop dim's extent
  int64_t cols;
  bool inputFirst;
  Value a, b, out;
  AffineMap aMap, bMap, outMap;
};

struct CpuMicrokernelsPass
    : public lockstep::impl::CpuMicrokernelsBase<CpuMicrokernelsPass> {
  using CpuMicrokernelsBase::CpuMicrokernelsBase;

  void runOnOperation() override {
    if (rows < 1 || cols < kLanes || cols % kLanes) {
      getOperation().emitError("lockstep-cpu-microkernels: rows must be at least 1 and cols a "
                               "positive multiple of ")
          << kLanes;
      return signalPassFailure();
    }
    SmallVector<std::pair<Contraction, bool>> found;
    getOperation().walk([&](linalg::GenericOp g) {
      std::optional<Contraction> c = lockstep::matchContraction(g);
      bool inputFirst = true;
      if (!c || !isF32Fma(g, inputFirst))
        return;
      // Columns contiguous in the weights and in the output.
      if (!lastIs(g.getMatchingIndexingMap(g.getDpsInputOperand(1)), c->n) ||
          !lastIs(g.getMatchingIndexingMap(g.getDpsInitOperand(0)), c->n) ||
          !unitLastStride(g.getDpsInputOperand(1)->get()) ||
          !unitLastStride(g.getDpsInitOperand(0)->get()))
        return;
      found.push_back({*c, inputFirst});
    });
    for (auto &[c, inputFirst] : found)
      rewrite(c, inputFirst);
  }

  void rewrite(const Contraction &c, bool inputFirst) {
    linalg::GenericOp op = c.op;
    Location loc = op.getLoc();
    OpBuilder b(op);
    SmallVector<Value> sizes;
    for (Range r : cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc))
      sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
    auto cst = [&](OpBuilder &ob, int64_t v) { return Tiles::cst(ob, loc, v); };
    Value rowsC = cst(b, rows), colsC = cst(b, cols);
    // The batch dims, then column tiles, then row tiles (the last, run whole
    // by each work item of lockstep-outline-parallel).
    SmallVector<Value> lbs, ubs, steps;
    for (unsigned d : c.batch)
      ubs.push_back(sizes[d]);
    ubs.push_back(arith::CeilDivUIOp::create(b, loc, sizes[c.n], colsC));
    ubs.push_back(arith::CeilDivUIOp::create(b, loc, sizes[c.m], rowsC));
    lbs.assign(ubs.size(), cst(b, 0));
    steps.assign(ubs.size(), cst(b, 1));
    auto par = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
    OpBuilder pb = OpBuilder::atBlockTerminator(par.getBody());
    SmallVector<Value> ivs = par.getInductionVars();
    SmallVector<Value> dims(op.getNumLoops());
    for (auto [i, d] : llvm::enumerate(c.batch))
      dims[d] = ivs[i];
    Value n0 = arith::MulIOp::create(pb, loc, ivs[c.batch.size()], colsC);
    Value m0 = arith::MulIOp::create(pb, loc, ivs[c.batch.size() + 1], rowsC);
    Value nFull = arith::AddIOp::create(pb, loc, n0, colsC);
    Value mFull = arith::AddIOp::create(pb, loc, m0, rowsC);
    Value mEnd = arith::MinUIOp::create(pb, loc, mFull, sizes[c.m]);
    Value nEnd = arith::MinUIOp::create(pb, loc, nFull, sizes[c.n]);
    Tiles tiles(c, sizes, cols, inputFirst);
    Value colsIn = arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::ule, nFull, sizes[c.n]);
    auto colBranch = scf::IfOp::create(pb, loc, colsIn, /*withElse=*/true);
    {
      OpBuilder tb = OpBuilder::atBlockTerminator(&colBranch.getThenRegion().front());
      // A whole tile, or its rows one at a time.
      Value rowsIn =
          arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::ule, mFull, sizes[c.m]);
      auto rowBranch = scf::IfOp::create(tb, loc, rowsIn, /*withElse=*/true);
      OpBuilder fb = OpBuilder::atBlockTerminator(&rowBranch.getThenRegion().front());
      SmallVector<Value> rowIdx;
      for (int64_t r = 0; r < rows; ++r)
        rowIdx.push_back(r == 0 ? m0 : arith::AddIOp::create(fb, loc, m0, cst(fb, r)).getResult());
      tiles.vectorTile(fb, loc, dims, rowIdx, n0);
      OpBuilder eb = OpBuilder::atBlockTerminator(&rowBranch.getElseRegion().front());
      auto each = scf::ForOp::create(eb, loc, m0, mEnd, cst(eb, 1));
      OpBuilder rb = OpBuilder::atBlockTerminator(each.getBody());
      tiles.vectorTile(rb, loc, dims, {each.getInductionVar()}, n0);
    }
    OpBuilder sb = OpBuilder::atBlockTerminator(&colBranch.getElseRegion().front());
    tiles.scalarTile(sb, loc, dims, m0, mEnd, n0, nEnd);
    op.erase();
    ++numRewritten;
  }
};

} // namespace
