//===- CpuMicrokernels.cpp - The lockstep-cpu-microkernels pass -----------===//
//
// Computes each bufferized f32 contraction whose weights are contiguous
// along the output's columns with vectors: for many rows, in register
// tiles of `rows` x `cols` outputs over a packed copy of the weights' column
// tile; for fewer rows than a tile (decode), streaming the weights' rows
// into the outputs in memory. Every lane is one output, folded with the
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
using lockstep::lastIs;
using lockstep::unitLastStride;
using lockstep::cstIndex;
using lockstep::kCpuLanes;
using lockstep::parallelOver;

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

constexpr int64_t kPanel = 4096;              // columns of a few-rows work item
constexpr int64_t kMaxPackBytes = 64 * 1024; // the largest packed weight panel

/// Whether a column tile of the weights can be packed: k static and the
/// buffer at most kMaxPackBytes.
bool canPack(const Contraction &c, int64_t cols) {
  return !ShapedType::isDynamic(c.length) && c.length * cols * 4 <= kMaxPackBytes;
}

/// Builds the loops of one contraction.
class Kernels {
public:
  Kernels(const Contraction &c, ArrayRef<Value> sizes, int64_t rows, int64_t cols,
          bool inputFirst, bool bContiguous)
      : c(c), sizes(sizes), rows(rows), cols(cols), inputFirst(inputFirst),
        bContiguous(bContiguous) {
    linalg::GenericOp op = c.op;
    a = op.getDpsInputOperand(0)->get();
    b = op.getDpsInputOperand(1)->get();
    out = op.getDpsInitOperand(0)->get();
    aMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
    bMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
    outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  }

  /// Many rows: a work item per (batch point, column tile), which packs its
  /// columns of the weights (when k is static and they fit) and runs its
  /// row tiles over them in turn.
  void buildTiles(OpBuilder &bld, Location loc) {
    SmallVector<Value> extents;
    for (unsigned d : c.batch)
      extents.push_back(sizes[d]);
    Value colsC = cstIndex(bld, loc, cols), rowsC = cstIndex(bld, loc, rows);
    extents.push_back(arith::CeilDivUIOp::create(bld, loc, sizes[c.n], colsC));
    Value mTiles = arith::CeilDivUIOp::create(bld, loc, sizes[c.m], rowsC);
    auto [sb, idx] = parallelOver(bld, loc, extents);
    SmallVector<Value> dims(sizes.size());
    for (auto [i, d] : llvm::enumerate(c.batch))
      dims[d] = idx[i];
    Value n0 = arith::MulIOp::create(sb, loc, idx.back(), colsC);
    Value nFull = arith::AddIOp::create(sb, loc, n0, colsC);
    Value nEnd = arith::MinUIOp::create(sb, loc, nFull, sizes[c.n]);
    Value colsIn = arith::CmpIOp::create(sb, loc, arith::CmpIPredicate::ule, nFull, sizes[c.n]);
    auto colBranch = scf::IfOp::create(sb, loc, colsIn, /*withElse=*/true);
    {
      OpBuilder tb = OpBuilder::atBlockTerminator(&colBranch.getThenRegion().front());
      Value pack = packPanel(tb, loc, dims, n0);
      auto tilesLoop = scf::ForOp::create(tb, loc, cstIndex(tb, loc, 0), mTiles, cstIndex(tb, loc, 1));
      OpBuilder lb = OpBuilder::atBlockTerminator(tilesLoop.getBody());
      Value m0 = arith::MulIOp::create(lb, loc, tilesLoop.getInductionVar(), rowsC);
      Value mFull = arith::AddIOp::create(lb, loc, m0, rowsC);
      // A whole tile, or its rows one at a time.
      Value rowsIn =
          arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ule, mFull, sizes[c.m]);
      auto rowBranch = scf::IfOp::create(lb, loc, rowsIn, /*withElse=*/true);
      OpBuilder fb = OpBuilder::atBlockTerminator(&rowBranch.getThenRegion().front());
      SmallVector<Value> rowIdx;
      for (int64_t r = 0; r < rows; ++r)
        rowIdx.push_back(r == 0 ? m0 : arith::AddIOp::create(fb, loc, m0, cstIndex(fb, loc, r)).getResult());
      vectorTile(fb, loc, dims, rowIdx, n0, pack);
      OpBuilder eb = OpBuilder::atBlockTerminator(&rowBranch.getElseRegion().front());
      auto each = scf::ForOp::create(eb, loc, m0, sizes[c.m], cstIndex(eb, loc, 1));
      OpBuilder rb = OpBuilder::atBlockTerminator(each.getBody());
      vectorTile(rb, loc, dims, {each.getInductionVar()}, n0, pack);
      if (pack)
        memref::DeallocOp::create(tb, loc, pack);
    }
    OpBuilder cb = OpBuilder::atBlockTerminator(&colBranch.getElseRegion().front());
    scalarTile(cb, loc, dims, cstIndex(cb, loc, 0), sizes[c.m], n0, nEnd);
  }

  /// Few rows (decode): a work item per (batch point, panel of kPanel
  /// columns), which streams its rows of the weights once, k outermost,
  /// folding into the outputs in memory, a vector of columns at a time.
  void buildPanels(OpBuilder &bld, Location loc) {
    SmallVector<Value> extents;
    for (unsigned d : c.batch)
      extents.push_back(sizes[d]);
    Value panelC = cstIndex(bld, loc, kPanel);
    extents.push_back(arith::CeilDivUIOp::create(bld, loc, sizes[c.n], panelC));
    auto [pb, idx] = parallelOver(bld, loc, extents);
    SmallVector<Value> dims(sizes.size());
    for (auto [i, d] : llvm::enumerate(c.batch))
      dims[d] = idx[i];
    Value n0 = arith::MulIOp::create(pb, loc, idx.back(), panelC);
    Value nEnd = arith::MinUIOp::create(pb, loc, arith::AddIOp::create(pb, loc, n0, panelC),
                                        sizes[c.n]);
    // [n0, nVec) in vectors, [nVec, nEnd) one column at a time.
    Value lanes = cstIndex(pb, loc, kCpuLanes);
    Value span = arith::SubIOp::create(pb, loc, nEnd, n0);
    Value nVec = arith::AddIOp::create(
        pb, loc, n0,
        arith::MulIOp::create(pb, loc, arith::DivUIOp::create(pb, loc, span, lanes), lanes));
    Value one = cstIndex(pb, loc, 1);
    auto kLoop = scf::ForOp::create(pb, loc, cstIndex(pb, loc, 0), sizes[c.k], one);
    OpBuilder kb = OpBuilder::atBlockTerminator(kLoop.getBody());
    dims[c.k] = kLoop.getInductionVar();
    auto rowLoop = scf::ForOp::create(kb, loc, cstIndex(kb, loc, 0), sizes[c.m], one);
    OpBuilder rb = OpBuilder::atBlockTerminator(rowLoop.getBody());
    dims[c.m] = rowLoop.getInductionVar();
    Value x = memref::LoadOp::create(rb, loc, a, indicesOf(rb, loc, aMap, dims));
    auto vt = VectorType::get({kCpuLanes}, rb.getF32Type());
    Value xs = vector::BroadcastOp::create(rb, loc, vt, x);
    auto vecLoop = scf::ForOp::create(rb, loc, n0, nVec, lanes);
    {
      OpBuilder vb = OpBuilder::atBlockTerminator(vecLoop.getBody());
      dims[c.n] = vecLoop.getInductionVar();
      SmallVector<Value> outIdx = indicesOf(vb, loc, outMap, dims);
      Value y = vector::LoadOp::create(vb, loc, vt, b, indicesOf(vb, loc, bMap, dims));
      Value acc = vector::LoadOp::create(vb, loc, vt, out, outIdx);
      vector::StoreOp::create(vb, loc, fma(vb, loc, xs, y, acc), out, outIdx);
    }
    auto restLoop = scf::ForOp::create(rb, loc, nVec, nEnd, one);
    {
      OpBuilder sb = OpBuilder::atBlockTerminator(restLoop.getBody());
      dims[c.n] = restLoop.getInductionVar();
      SmallVector<Value> outIdx = indicesOf(sb, loc, outMap, dims);
      Value y = memref::LoadOp::create(sb, loc, b, indicesOf(sb, loc, bMap, dims));
      Value acc = memref::LoadOp::create(sb, loc, out, outIdx);
      memref::StoreOp::create(sb, loc, lockstep::applyBody(sb, c.op, x, y, acc), out, outIdx);
    }
  }

private:
  const Contraction &c;
  ArrayRef<Value> sizes; // each loop dim's extent
  int64_t rows, cols;
  bool inputFirst;
  bool bContiguous; // the weights' last index is n, of unit stride
  Value a, b, out;
  AffineMap aMap, bMap, outMap;

  /// The lanes of the generic's own fma(in0, in1, out), x the first input's
  /// value broadcast. math.fma, not vector.fma: that one lowers to
  /// llvm.intr.fmuladd, which the backend may split into a product and a
  /// sum (two roundings).
  Value fma(OpBuilder &bld, Location loc, Value xs, Value y, Value acc) {
    return inputFirst ? math::FmaOp::create(bld, loc, xs, y, acc)
                      : math::FmaOp::create(bld, loc, y, xs, acc);
  }

  /// B[k, n0 : n0 + cols] for every k, copied into a [k, cols] buffer of
  /// the work item, freed at its end (a column tile of a weight is read
  /// once per work item, not once per row tile, and the tiles' loads stay
  /// in cache instead of falling a row stride apart into the same sets);
  /// null when it cannot be packed (canPack). Weights whose columns are
  /// contiguous are copied a vector at a time, others (transposed) an
  /// element at a time, along their contiguous k.
  Value packPanel(OpBuilder &bld, Location loc, SmallVector<Value> dims, Value n0) {
    if (!canPack(c, cols))
      return nullptr;
    auto type = MemRefType::get({c.length, cols}, bld.getF32Type());
    // Heap, not stack: an alloca in a work item's loop would grow the stack
    // with every item.
    Value pack = memref::AllocOp::create(bld, loc, type, /*alignment=*/bld.getI64IntegerAttr(64));
    auto vt = VectorType::get({kCpuLanes}, bld.getF32Type());
    if (!bContiguous) {
      auto colLoop = scf::ForOp::create(bld, loc, cstIndex(bld, loc, 0), cstIndex(bld, loc, cols),
                                        cstIndex(bld, loc, 1));
      OpBuilder cb = OpBuilder::atBlockTerminator(colLoop.getBody());
      dims[c.n] = arith::AddIOp::create(cb, loc, n0, colLoop.getInductionVar());
      auto kLoop = scf::ForOp::create(cb, loc, cstIndex(cb, loc, 0), sizes[c.k], cstIndex(cb, loc, 1));
      OpBuilder kb = OpBuilder::atBlockTerminator(kLoop.getBody());
      dims[c.k] = kLoop.getInductionVar();
      Value y = memref::LoadOp::create(kb, loc, b, indicesOf(kb, loc, bMap, dims));
      memref::StoreOp::create(kb, loc, y, pack,
                              ValueRange{kLoop.getInductionVar(), colLoop.getInductionVar()});
      return pack;
    }
    auto loop = scf::ForOp::create(bld, loc, cstIndex(bld, loc, 0), sizes[c.k], cstIndex(bld, loc, 1));
    OpBuilder lb = OpBuilder::atBlockTerminator(loop.getBody());
    dims[c.k] = loop.getInductionVar();
    for (int64_t v = 0; v < cols / kCpuLanes; ++v) {
      Value col = cstIndex(lb, loc, v * kCpuLanes);
      dims[c.n] = arith::AddIOp::create(lb, loc, n0, col);
      Value y = vector::LoadOp::create(lb, loc, vt, b, indicesOf(lb, loc, bMap, dims));
      vector::StoreOp::create(lb, loc, y, pack, ValueRange{loop.getInductionVar(), col});
    }
    return pack;
  }

  /// The outputs of `rowIdx` x [n0, n0 + cols) in vector accumulators,
  /// reading the weights from `pack` when there is one. `dims` holds the
  /// batch dims.
  void vectorTile(OpBuilder &bld, Location loc, SmallVector<Value> dims, ArrayRef<Value> rowIdx,
                  Value n0, Value pack) {
    auto vt = VectorType::get({kCpuLanes}, bld.getF32Type());
    int64_t nv = cols / kCpuLanes;
    SmallVector<Value> colIdx, packCol;
    for (int64_t v = 0; v < nv; ++v) {
      packCol.push_back(cstIndex(bld, loc, v * kCpuLanes));
      colIdx.push_back(arith::AddIOp::create(bld, loc, n0, packCol.back()));
    }
    auto outAt = [&](OpBuilder &ob, size_t r, int64_t v) {
      dims[c.m] = rowIdx[r];
      dims[c.n] = colIdx[v];
      return indicesOf(ob, loc, outMap, dims);
    };
    SmallVector<Value> init;
    for (size_t r = 0; r < rowIdx.size(); ++r)
      for (int64_t v = 0; v < nv; ++v)
        init.push_back(vector::LoadOp::create(bld, loc, vt, out, outAt(bld, r, v)));
    auto loop = scf::ForOp::create(bld, loc, cstIndex(bld, loc, 0), sizes[c.k], cstIndex(bld, loc, 1), init);
    {
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      Value k = loop.getInductionVar();
      dims[c.k] = k;
      SmallVector<Value> ys;
      for (int64_t v = 0; v < nv; ++v) {
        dims[c.n] = colIdx[v];
        ys.push_back(pack ? vector::LoadOp::create(lb, loc, vt, pack, ValueRange{k, packCol[v]})
                          : vector::LoadOp::create(lb, loc, vt, b, indicesOf(lb, loc, bMap, dims)));
      }
      SmallVector<Value> next;
      for (size_t r = 0; r < rowIdx.size(); ++r) {
        dims[c.m] = rowIdx[r];
        Value x = memref::LoadOp::create(lb, loc, a, indicesOf(lb, loc, aMap, dims));
        Value xs = vector::BroadcastOp::create(lb, loc, vt, x);
        for (int64_t v = 0; v < nv; ++v)
          next.push_back(fma(lb, loc, xs, ys[v], loop.getRegionIterArgs()[r * nv + v]));
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
    Value one = cstIndex(bld, loc, 1);
    auto rowLoop = scf::ForOp::create(bld, loc, m0, mEnd, one);
    OpBuilder rb = OpBuilder::atBlockTerminator(rowLoop.getBody());
    dims[c.m] = rowLoop.getInductionVar();
    auto colLoop = scf::ForOp::create(rb, loc, n0, nEnd, one);
    OpBuilder cb = OpBuilder::atBlockTerminator(colLoop.getBody());
    dims[c.n] = colLoop.getInductionVar();
    SmallVector<Value> outIdx = indicesOf(cb, loc, outMap, dims);
    Value init = memref::LoadOp::create(cb, loc, out, outIdx);
    auto loop = scf::ForOp::create(cb, loc, cstIndex(cb, loc, 0), sizes[c.k], one, ValueRange{init});
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
};

struct CpuMicrokernelsPass
    : public lockstep::impl::CpuMicrokernelsBase<CpuMicrokernelsPass> {
  using CpuMicrokernelsBase::CpuMicrokernelsBase;

  void runOnOperation() override {
    if (rows < 1 || cols < kCpuLanes || cols % kCpuLanes) {
      getOperation().emitError("lockstep-cpu-microkernels: rows must be at least 1 and cols a "
                               "positive multiple of ")
          << kCpuLanes;
      return signalPassFailure();
    }
    struct Found {
      Contraction c;
      bool inputFirst, bContiguous;
    };
    SmallVector<Found> found;
    getOperation().walk([&](linalg::GenericOp g) {
      std::optional<Contraction> c = lockstep::matchContraction(g);
      bool inputFirst = true;
      if (!c || !isF32Fma(g, inputFirst))
        return;
      // The output's columns contiguous (the accumulators' stores); the
      // weights' too, or else packed (transposed weights).
      if (!lastIs(g.getMatchingIndexingMap(g.getDpsInitOperand(0)), c->n) ||
          !unitLastStride(g.getDpsInitOperand(0)->get()))
        return;
      bool bContiguous = lastIs(g.getMatchingIndexingMap(g.getDpsInputOperand(1)), c->n) &&
                         unitLastStride(g.getDpsInputOperand(1)->get());
      if (!bContiguous && !canPack(*c, cols))
        return;
      found.push_back({*c, inputFirst, bContiguous});
    });
    for (Found &f : found)
      rewrite(f.c, f.inputFirst, f.bContiguous);
  }

  void rewrite(const Contraction &c, bool inputFirst, bool bContiguous) {
    linalg::GenericOp op = c.op;
    Location loc = op.getLoc();
    OpBuilder b(op);
    SmallVector<Value> sizes = lockstep::loopSizes(b, op);
    Kernels kernels(c, sizes, rows, cols, inputFirst, bContiguous);
    // Fewer rows than a tile: the panels (or, for transposed weights, the
    // generic as it is); else the tiles.
    Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, sizes[c.m],
                                      cstIndex(b, loc, rows));
    auto branch = scf::IfOp::create(b, loc, few, /*withElse=*/true);
    OpBuilder pb = OpBuilder::atBlockTerminator(&branch.getThenRegion().front());
    if (bContiguous)
      kernels.buildPanels(pb, loc);
    else
      pb.clone(*op);
    OpBuilder tb = OpBuilder::atBlockTerminator(&branch.getElseRegion().front());
    kernels.buildTiles(tb, loc);
    op.erase();
    ++numRewritten;
  }
};

} // namespace
