//===- ContractionKernels.cpp - A contraction's CPU vector loops ----------===//
//
// See lockstep/CPU/ContractionKernels.h and lockstep-cpu-microkernels in
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "lockstep/CPU/ContractionKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace lockstep;

static_assert(kCpuLanes == 8, "transpose8x8 assumes 8 f32 lanes");
// The tiles and the panels take `lanes` (8, or 16 for x86-64-v4); the
// transposed strips and packs work in tl x tl blocks (tl: 16 with 16
// lanes, else 8).

namespace {
constexpr int64_t kPanel = 4096;             // columns of a few-rows work item
constexpr int64_t kMaxPackBytes = 64 * 1024; // the largest packed column tile
constexpr int64_t kMaxGroupPackBytes = 256 * 1024; // the largest packed group of tiles
/// Rows up to which the tiles read Columns weights in place instead of
/// packing them (a decode step's few requests: the copy would be read back
/// by only a few row tiles).
constexpr int64_t kDirectRows = 32;
/// How far ahead, in weight rows, the in-place tiles prefetch (a 2-core
/// AMD EPYC, gpt2_124m decode of 8 requests: 64 beat 16, 32 and 128).
constexpr int64_t kPrefetchRows = 64;
constexpr int64_t kLineFloats = 16; // f32 values of a 64-byte cache line
constexpr int64_t kMinItems = 16;            // work items a contraction is cut into, at least
constexpr int64_t kPanelSteps = 4;           // values of k a panel folds per pass over its outputs

/// `build` at every point of the batch dims `inner`, the last fastest: a
/// loop from 0 to each one's size, its index set in `dims`.
void eachPoint(OpBuilder &b, Location loc, ArrayRef<unsigned> inner, ArrayRef<Value> sizes,
               SmallVectorImpl<Value> &dims, function_ref<void(OpBuilder &)> build) {
  OpBuilder ib = b;
  for (unsigned d : inner) {
    auto loop = scf::ForOp::create(ib, loc, cstIndex(ib, loc, 0), sizes[d], cstIndex(ib, loc, 1));
    ib = OpBuilder::atBlockTerminator(loop.getBody());
    dims[d] = loop.getInductionVar();
  }
  build(ib);
}
} // namespace

WeightLayout lockstep::weightLayout(const Contraction &c) {
  linalg::GenericOp op = c.op;
  AffineMap map = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  Value w = op.getDpsInputOperand(1)->get();
  if (!unitLastStride(w))
    return WeightLayout::Other;
  if (lastIs(map, c.n))
    return WeightLayout::Columns;
  if (lastIs(map, c.k))
    return WeightLayout::Transposed;
  return WeightLayout::Other;
}

bool lockstep::canPackColumns(const Contraction &c, int64_t cols) {
  return !ShapedType::isDynamic(c.length) && c.length * cols * 4 <= kMaxPackBytes;
}

SmallVector<Value> lockstep::transposeSquare(OpBuilder &b, Location loc, ArrayRef<Value> rows) {
  int64_t n = rows.size();
  assert(n > 0 && (n & (n - 1)) == 0 && "a power of two of rows");
  SmallVector<Value> r(rows.begin(), rows.end());
  // Stage s: element (i, j) goes to (i', j') with bit s of the row and of
  // the lane exchanged; rows i0 and i0 + s (bit s of i0 clear) trade
  // halves, lane j' of each taken from lane j' with bit s changed.
  for (int64_t s = 1; s < n; s *= 2) {
    SmallVector<int64_t> lo(n), hi(n);
    for (int64_t j = 0; j < n; ++j) {
      lo[j] = (j & s) ? n + (j & ~s) : j;
      hi[j] = (j & s) ? n + j : (j | s);
    }
    SmallVector<Value> next(n);
    for (int64_t i = 0; i < n; ++i)
      if (!(i & s)) {
        next[i] = vector::ShuffleOp::create(b, loc, r[i], r[i + s], lo);
        next[i + s] = vector::ShuffleOp::create(b, loc, r[i], r[i + s], hi);
      }
    r = std::move(next);
  }
  return r;
}

SmallVector<Value> lockstep::transpose8x8(OpBuilder &b, Location loc, ArrayRef<Value> rows) {
  assert(rows.size() == 8 && "eight rows");
  auto shuffle = [&](Value x, Value y, ArrayRef<int64_t> mask) -> Value {
    return vector::ShuffleOp::create(b, loc, x, y, mask);
  };
  // Pairs of rows interleaved, then pairs of pairs, then 128-bit halves.
  const int64_t lo[] = {0, 8, 1, 9, 4, 12, 5, 13}, hi[] = {2, 10, 3, 11, 6, 14, 7, 15};
  const int64_t ev[] = {0, 1, 8, 9, 4, 5, 12, 13}, od[] = {2, 3, 10, 11, 6, 7, 14, 15};
  const int64_t h0[] = {0, 1, 2, 3, 8, 9, 10, 11}, h1[] = {4, 5, 6, 7, 12, 13, 14, 15};
  SmallVector<Value> t, u(8), out(8);
  for (int p = 0; p < 4; ++p) {
    t.push_back(shuffle(rows[2 * p], rows[2 * p + 1], lo));
    t.push_back(shuffle(rows[2 * p], rows[2 * p + 1], hi));
  }
  for (int q = 0; q < 2; ++q) {
    for (int s = 0; s < 2; ++s) {
      u[4 * q + 2 * s] = shuffle(t[4 * q + s], t[4 * q + s + 2], ev);
      u[4 * q + 2 * s + 1] = shuffle(t[4 * q + s], t[4 * q + s + 2], od);
    }
  }
  for (int i = 0; i < 4; ++i) {
    out[i] = shuffle(u[i], u[i + 4], h0);
    out[i + 4] = shuffle(u[i], u[i + 4], h1);
  }
  return out;
}

CpuContractionKernels::CpuContractionKernels(const Contraction &c, ArrayRef<Value> sizes,
                                             int64_t rows, int64_t cols, int64_t lanes,
                                             bool inputFirst, WeightLayout layout)
    : c(c), sizes(sizes), rows(rows), cols(cols), lanes(lanes), inputFirst(inputFirst),
      layout(layout) {
  // Transposed weights go by blocks of tl x tl: 16 with AVX-512, else 8;
  // a strip is 16 columns either way.
  tl = lanes == 16 ? 16 : kCpuLanes;
  stripGroups = 16 / tl;
  linalg::GenericOp op = c.op;
  a = op.getDpsInputOperand(0)->get();
  b = op.getDpsInputOperand(1)->get();
  out = op.getDpsInitOperand(0)->get();
  aMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  bMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
}

/// Many rows: a work item per (batch point, group of column tiles), which
/// packs its tiles of the weights (when k is static and a tile fits),
/// reading each weight row's columns of the group as one sequential run,
/// and runs its row tiles over each column tile in turn.
void CpuContractionKernels::buildTiles(OpBuilder &bld, Location loc) {
  bool packs = canPackColumns(c, cols);
  if (!packs || layout != WeightLayout::Columns) {
    tiles(bld, loc, /*direct=*/false, packs);
    return;
  }
  // Up to kDirectRows rows (a decode step of a few requests): the copy
  // would be read back by only a few row tiles, while the core waits on
  // memory for each group's copy before its first product; the tiles read
  // the weights where they are instead, prefetched ahead.
  Value few = arith::CmpIOp::create(bld, loc, arith::CmpIPredicate::ule, sizes[c.m],
                                    cstIndex(bld, loc, kDirectRows));
  auto branch = scf::IfOp::create(bld, loc, few, /*withElse=*/true);
  OpBuilder direct = OpBuilder::atBlockTerminator(&branch.getThenRegion().front());
  tiles(direct, loc, /*direct=*/true, /*packs=*/false);
  OpBuilder packed = OpBuilder::atBlockTerminator(&branch.getElseRegion().front());
  tiles(packed, loc, /*direct=*/false, /*packs=*/true);
}

/// Many rows: a work item per (batch point, group of column tiles), which
/// packs its tiles of the weights (when `packs`), reading each weight row's
/// columns of the group as one sequential run, and runs its row tiles over
/// each column tile in turn. `direct` (Columns weights read in place): the
/// batch dims that index the weights (a partial's chunk dim) are looped in
/// each column tile, around its row tiles, instead of giving work items
/// of their own, so that a tile's weight rows are read in address order
/// (all of k, chunk after chunk), prefetched across the chunks' bounds.
void CpuContractionKernels::tiles(OpBuilder &bld, Location loc, bool direct, bool packs) {
  SmallVector<unsigned> inner, outer;
  for (unsigned d : c.batch)
    (direct && readsDim(bMap, d) ? inner : outer).push_back(d);
  // Column tiles a work item takes: as many as fit in kMaxGroupPackBytes,
  // fewer when the contraction has too few tiles to give every thread
  // kMinItems items or so. The group only decides which outputs a work
  // item computes, never how any output is folded.
  int64_t gMax = packs || direct ? std::max<int64_t>(1, kMaxGroupPackBytes / (c.length * cols * 4))
                                 : 1;
  Value colsC = cstIndex(bld, loc, cols), rowsC = cstIndex(bld, loc, rows);
  Value one = cstIndex(bld, loc, 1);
  Value nTiles = arith::CeilDivUIOp::create(bld, loc, sizes[c.n], colsC);
  Value points = one;
  for (unsigned d : outer)
    points = arith::MulIOp::create(bld, loc, points, sizes[d]);
  Value group = arith::DivUIOp::create(bld, loc, arith::MulIOp::create(bld, loc, points, nTiles),
                                       cstIndex(bld, loc, kMinItems));
  group = arith::MaxUIOp::create(bld, loc, arith::MinUIOp::create(bld, loc, group,
                                                                  cstIndex(bld, loc, gMax)),
                                 one);
  Value span = arith::MulIOp::create(bld, loc, group, colsC);
  SmallVector<Value> extents;
  for (unsigned d : outer)
    extents.push_back(sizes[d]);
  extents.push_back(arith::CeilDivUIOp::create(bld, loc, sizes[c.n], span));
  Value mTiles = arith::CeilDivUIOp::create(bld, loc, sizes[c.m], rowsC);
  auto [sb, idx] = parallelOver(bld, loc, extents);
  SmallVector<Value> dims(sizes.size());
  for (auto [i, d] : llvm::enumerate(outer))
    dims[d] = idx[i];
  Value n0 = arith::MulIOp::create(sb, loc, idx.back(), span);
  Value nEnd = arith::MinUIOp::create(sb, loc, arith::AddIOp::create(sb, loc, n0, span),
                                      sizes[c.n]);
  // Whole column tiles [n0, nFull), then the last columns, fewer than a
  // tile, each folded alone.
  Value full = arith::DivUIOp::create(sb, loc, arith::SubIOp::create(sb, loc, nEnd, n0), colsC);
  Value nFull = arith::AddIOp::create(sb, loc, n0, arith::MulIOp::create(sb, loc, full, colsC));
  // The weights' rows as one run of chunks: one chunk dim j, read just
  // before k (W[.., j, k, ..], a partial's expanded view), k static.
  int64_t chunkDim = -1;
  if (inner.size() == 1 && !ShapedType::isDynamic(c.length)) {
    std::optional<unsigned> pj = bMap.getResultPosition(getAffineDimExpr(inner[0], bld.getContext()));
    std::optional<unsigned> pk = bMap.getResultPosition(getAffineDimExpr(c.k, bld.getContext()));
    if (pj && pk && *pk == *pj + 1)
      chunkDim = inner[0];
  }
  // The row tiles of each whole column tile, reading the weights from
  // `pack` when there is one.
  auto rowTileLoops = [&](OpBuilder &ib, Value nt, Value pack, Value t) {
    auto rowTiles = scf::ForOp::create(ib, loc, cstIndex(ib, loc, 0), mTiles, one);
    OpBuilder lb = OpBuilder::atBlockTerminator(rowTiles.getBody());
    Value m0 = arith::MulIOp::create(lb, loc, rowTiles.getInductionVar(), rowsC);
    Value mFull = arith::AddIOp::create(lb, loc, m0, rowsC);
    // A whole tile, or its rows one at a time.
    Value rowsIn =
        arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ule, mFull, sizes[c.m]);
    auto rowBranch = scf::IfOp::create(lb, loc, rowsIn, /*withElse=*/true);
    OpBuilder fb = OpBuilder::atBlockTerminator(&rowBranch.getThenRegion().front());
    SmallVector<Value> rowIdx;
    for (int64_t r = 0; r < rows; ++r)
      rowIdx.push_back(
          r == 0 ? m0 : arith::AddIOp::create(fb, loc, m0, cstIndex(fb, loc, r)).getResult());
    vectorTile(fb, loc, dims, rowIdx, nt, pack, t, chunkDim);
    OpBuilder eb = OpBuilder::atBlockTerminator(&rowBranch.getElseRegion().front());
    auto each = scf::ForOp::create(eb, loc, m0, sizes[c.m], one);
    OpBuilder rb = OpBuilder::atBlockTerminator(each.getBody());
    vectorTile(rb, loc, dims, {each.getInductionVar()}, nt, pack, t, chunkDim);
  };
  auto tileLoops = [&](OpBuilder &ib, Value pack) {
    auto tileLoop = scf::ForOp::create(ib, loc, cstIndex(ib, loc, 0), full, one);
    OpBuilder tb = OpBuilder::atBlockTerminator(tileLoop.getBody());
    Value t = tileLoop.getInductionVar();
    Value nt = arith::AddIOp::create(tb, loc, n0, arith::MulIOp::create(tb, loc, t, colsC));
    eachPoint(tb, loc, inner, sizes, dims, [&](OpBuilder &jb) { rowTileLoops(jb, nt, pack, t); });
  };
  Value pack = packs ? packGroup(sb, loc, dims, n0, full, group) : Value();
  tileLoops(sb, pack);
  if (pack)
    memref::DeallocOp::create(sb, loc, pack);
  eachPoint(sb, loc, inner, sizes, dims, [&](OpBuilder &jb) {
    scalarTile(jb, loc, dims, cstIndex(jb, loc, 0), sizes[c.m], nFull, nEnd);
  });
}

/// The work item of a few-rows form: an scf.parallel over (batch point,
/// panel of kPanel columns); a builder in it, the batch dims set, and the
/// panel's columns [n0, nEnd).
CpuContractionKernels::PanelItem CpuContractionKernels::panelItem(OpBuilder &bld, Location loc,
                                                                ArrayRef<unsigned> inner) {
  SmallVector<Value> extents;
  SmallVector<unsigned> outer;
  for (unsigned d : c.batch)
    if (!llvm::is_contained(inner, d)) {
      outer.push_back(d);
      extents.push_back(sizes[d]);
    }
  Value panelC = cstIndex(bld, loc, kPanel);
  extents.push_back(arith::CeilDivUIOp::create(bld, loc, sizes[c.n], panelC));
  auto [pb, idx] = parallelOver(bld, loc, extents);
  SmallVector<Value> dims(sizes.size());
  for (auto [i, d] : llvm::enumerate(outer))
    dims[d] = idx[i];
  Value n0 = arith::MulIOp::create(pb, loc, idx.back(), panelC);
  Value nEnd = arith::MinUIOp::create(pb, loc, arith::AddIOp::create(pb, loc, n0, panelC),
                                      sizes[c.n]);
  return {pb, dims, n0, nEnd};
}

/// Few rows (decode): a work item per (batch point, panel of kPanel
/// columns), which streams its rows of the weights once, k outermost,
/// folding into the outputs in memory, a vector of columns at a time:
/// kPanelSteps consecutive values of k per pass over the outputs (each
/// output loaded once, folded over them in increasing k, stored once),
/// then the last k mod kPanelSteps one at a time.
void CpuContractionKernels::buildPanels(OpBuilder &bld, Location loc) {
  PanelItem item = panelItem(bld, loc);
  OpBuilder &pb = item.b;
  SmallVector<Value> &dims = item.dims;
  Value n0 = item.n0, nEnd = item.nEnd;
  // [n0, nVec) in vectors, [nVec, nEnd) one column at a time.
  Value lanesC = cstIndex(pb, loc, lanes);
  Value span = arith::SubIOp::create(pb, loc, nEnd, n0);
  Value nVec = arith::AddIOp::create(
      pb, loc, n0,
      arith::MulIOp::create(pb, loc, arith::DivUIOp::create(pb, loc, span, lanesC), lanesC));
  Value one = cstIndex(pb, loc, 1);
  Value stepsC = cstIndex(pb, loc, kPanelSteps);
  Value kSteps = arith::MulIOp::create(
      pb, loc, arith::DivUIOp::create(pb, loc, sizes[c.k], stepsC), stepsC);
  auto vt = VectorType::get({lanes}, pb.getF32Type());
  // Folds k0, k0 + 1, ..., k0 + steps - 1 into every output of the rows.
  auto foldSteps = [&](OpBuilder &kb, Value k0, int64_t steps) {
    auto rowLoop = scf::ForOp::create(kb, loc, cstIndex(kb, loc, 0), sizes[c.m], one);
    OpBuilder rb = OpBuilder::atBlockTerminator(rowLoop.getBody());
    dims[c.m] = rowLoop.getInductionVar();
    SmallVector<Value> ks, xs;
    for (int64_t u = 0; u < steps; ++u) {
      ks.push_back(u ? arith::AddIOp::create(rb, loc, k0, cstIndex(rb, loc, u)).getResult() : k0);
      dims[c.k] = ks.back();
      xs.push_back(memref::LoadOp::create(rb, loc, a, indicesOf(rb, loc, aMap, dims)));
    }
    SmallVector<Value> xv;
    for (Value x : xs)
      xv.push_back(vector::BroadcastOp::create(rb, loc, vt, x));
    auto vecLoop = scf::ForOp::create(rb, loc, n0, nVec, lanesC);
    {
      OpBuilder vb = OpBuilder::atBlockTerminator(vecLoop.getBody());
      dims[c.n] = vecLoop.getInductionVar();
      SmallVector<Value> outIdx = indicesOf(vb, loc, outMap, dims);
      Value acc = vector::LoadOp::create(vb, loc, vt, out, outIdx);
      for (int64_t u = 0; u < steps; ++u) {
        dims[c.k] = ks[u];
        Value y = vector::LoadOp::create(vb, loc, vt, b, indicesOf(vb, loc, bMap, dims));
        acc = fma(vb, loc, xv[u], y, acc);
      }
      vector::StoreOp::create(vb, loc, acc, out, outIdx);
    }
    auto restLoop = scf::ForOp::create(rb, loc, nVec, nEnd, one);
    {
      OpBuilder sb = OpBuilder::atBlockTerminator(restLoop.getBody());
      dims[c.n] = restLoop.getInductionVar();
      SmallVector<Value> outIdx = indicesOf(sb, loc, outMap, dims);
      Value acc = memref::LoadOp::create(sb, loc, out, outIdx);
      for (int64_t u = 0; u < steps; ++u) {
        dims[c.k] = ks[u];
        Value y = memref::LoadOp::create(sb, loc, b, indicesOf(sb, loc, bMap, dims));
        acc = lockstep::applyBody(sb, c.op, xs[u], y, acc);
      }
      memref::StoreOp::create(sb, loc, acc, out, outIdx);
    }
  };
  auto blocks = scf::ForOp::create(pb, loc, cstIndex(pb, loc, 0), kSteps, stepsC);
  {
    OpBuilder kb = OpBuilder::atBlockTerminator(blocks.getBody());
    foldSteps(kb, blocks.getInductionVar(), kPanelSteps);
  }
  auto rest = scf::ForOp::create(pb, loc, kSteps, sizes[c.k], one);
  {
    OpBuilder kb = OpBuilder::atBlockTerminator(rest.getBody());
    foldSteps(kb, rest.getInductionVar(), 1);
  }
}

/// The lanes of the generic's own fma(in0, in1, out), x the first input's
/// value broadcast. math.fma, not vector.fma: that one lowers to
/// llvm.intr.fmuladd, which the backend may split into a product and a
/// sum (two roundings).
Value CpuContractionKernels::startOf(OpBuilder &bld, Location loc, ValueRange outIdx,
                                     int64_t width) {
  auto vt = VectorType::get({width}, bld.getF32Type());
  if (c.init)
    return vector::BroadcastOp::create(bld, loc, vt, c.init);
  return vector::LoadOp::create(bld, loc, vt, out, outIdx);
}

Value CpuContractionKernels::fma(OpBuilder &bld, Location loc, Value xs, Value y, Value acc) {
  return inputFirst ? math::FmaOp::create(bld, loc, xs, y, acc)
                    : math::FmaOp::create(bld, loc, y, xs, acc);
}

/// The `tiles` column tiles of the weights from n0, B[k, n0 + t·cols : n0 +
/// (t + 1)·cols] for every k, copied into a [group, k, cols] buffer of the
/// work item, freed at its end (a column tile of a weight is read once per
/// work item, not once per row tile, and the tiles' loads stay in cache
/// instead of falling a row stride apart into the same sets). Weights whose
/// columns are contiguous are copied k outermost, so that each weight row's
/// columns of the group are read as one sequential run; others by
/// packTransposed, a tile at a time.
Value CpuContractionKernels::packGroup(OpBuilder &bld, Location loc, SmallVector<Value> dims,
                                       Value n0, Value tiles, Value group) {
  auto type = MemRefType::get({ShapedType::kDynamic, c.length, cols}, bld.getF32Type());
  // Heap, not stack: an alloca in a work item's loop would grow the stack
  // with every item.
  Value pack = memref::AllocOp::create(bld, loc, type, ValueRange{group},
                                       /*alignment=*/bld.getI64IntegerAttr(64));
  Value zero = cstIndex(bld, loc, 0), one = cstIndex(bld, loc, 1);
  Value colsC = cstIndex(bld, loc, cols);
  if (layout != WeightLayout::Columns) {
    auto tileLoop = scf::ForOp::create(bld, loc, zero, tiles, one);
    OpBuilder tb = OpBuilder::atBlockTerminator(tileLoop.getBody());
    Value t = tileLoop.getInductionVar();
    packTransposed(tb, loc, dims,
                   arith::AddIOp::create(tb, loc, n0, arith::MulIOp::create(tb, loc, t, colsC)),
                   pack, t);
    return pack;
  }
  auto vt = VectorType::get({kCpuLanes}, bld.getF32Type());
  auto kLoop = scf::ForOp::create(bld, loc, zero, sizes[c.k], one);
  OpBuilder kb = OpBuilder::atBlockTerminator(kLoop.getBody());
  dims[c.k] = kLoop.getInductionVar();
  auto tileLoop = scf::ForOp::create(kb, loc, zero, tiles, one);
  OpBuilder lb = OpBuilder::atBlockTerminator(tileLoop.getBody());
  Value t = tileLoop.getInductionVar();
  Value nt = arith::AddIOp::create(lb, loc, n0, arith::MulIOp::create(lb, loc, t, colsC));
  for (int64_t v = 0; v < cols / kCpuLanes; ++v) {
    Value col = cstIndex(lb, loc, v * kCpuLanes);
    dims[c.n] = arith::AddIOp::create(lb, loc, nt, col);
    Value y = vector::LoadOp::create(lb, loc, vt, b, indicesOf(lb, loc, bMap, dims));
    vector::StoreOp::create(lb, loc, y, pack, ValueRange{t, kLoop.getInductionVar(), col});
  }
  return pack;
}

/// The outputs of `rowIdx` x [n0, n0 + cols) in vector accumulators,
/// reading the weights from `pack` when there is one. `dims` holds the
/// batch dims.
void CpuContractionKernels::vectorTile(OpBuilder &bld, Location loc, SmallVector<Value> dims,
                                       ArrayRef<Value> rowIdx, Value n0, Value pack,
                                       Value tile, int64_t chunkDim) {
  auto vt = VectorType::get({lanes}, bld.getF32Type());
  int64_t nv = cols / lanes;
  SmallVector<Value> colIdx, packCol;
  for (int64_t v = 0; v < nv; ++v) {
    packCol.push_back(cstIndex(bld, loc, v * lanes));
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
      init.push_back(startOf(bld, loc, outAt(bld, r, v), lanes));
  auto loop =
      scf::ForOp::create(bld, loc, cstIndex(bld, loc, 0), sizes[c.k], cstIndex(bld, loc, 1), init);
  {
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    Value k = loop.getInductionVar();
    dims[c.k] = k;
    SmallVector<Value> ys;
    for (int64_t v = 0; v < nv; ++v) {
      dims[c.n] = colIdx[v];
      ys.push_back(pack ? vector::LoadOp::create(lb, loc, vt, pack,
                                                          ValueRange{tile, k, packCol[v]})
                        : vector::LoadOp::create(lb, loc, vt, b, indicesOf(lb, loc, bMap, dims)));
    }
    if (!pack && layout == WeightLayout::Columns) {
      // The tile's weight rows kPrefetchRows ahead (the last row past the
      // end), a cache line of each: rows a column tile apart are too far
      // apart for the hardware's prefetchers to run ahead of the loads.
      // With the chunks of a partial looped in the tile, row (j, k + 64)
      // runs on into chunk j + 1: rows j·C + k + 64, up to the last one.
      Value jNow = chunkDim >= 0 ? dims[chunkDim] : Value();
      if (jNow) {
        Value C = cstIndex(lb, loc, c.length);
        Value row = arith::AddIOp::create(
            lb, loc, arith::MulIOp::create(lb, loc, jNow, C),
            arith::AddIOp::create(lb, loc, k, cstIndex(lb, loc, kPrefetchRows)));
        Value last = arith::SubIOp::create(
            lb, loc, arith::MulIOp::create(lb, loc, sizes[chunkDim], C), cstIndex(lb, loc, 1));
        row = arith::MinUIOp::create(lb, loc, row, last);
        dims[chunkDim] = arith::DivUIOp::create(lb, loc, row, C);
        dims[c.k] = arith::RemUIOp::create(lb, loc, row, C);
      } else {
        dims[c.k] = arith::MinUIOp::create(
            lb, loc, arith::AddIOp::create(lb, loc, k, cstIndex(lb, loc, kPrefetchRows)),
            arith::SubIOp::create(lb, loc, sizes[c.k], cstIndex(lb, loc, 1)));
      }
      for (int64_t v = 0; v < nv; v += std::max<int64_t>(1, kLineFloats / lanes)) {
        dims[c.n] = colIdx[v];
        memref::PrefetchOp::create(lb, loc, b, indicesOf(lb, loc, bMap, dims),
                                   /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
      }
      dims[c.k] = k;
      if (jNow)
        dims[chunkDim] = jNow;
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
void CpuContractionKernels::scalarTile(OpBuilder &bld, Location loc, SmallVector<Value> dims,
                                       Value m0, Value mEnd, Value n0, Value nEnd) {
  Value one = cstIndex(bld, loc, 1);
  auto rowLoop = scf::ForOp::create(bld, loc, m0, mEnd, one);
  OpBuilder rb = OpBuilder::atBlockTerminator(rowLoop.getBody());
  dims[c.m] = rowLoop.getInductionVar();
  auto colLoop = scf::ForOp::create(rb, loc, n0, nEnd, one);
  OpBuilder cb = OpBuilder::atBlockTerminator(colLoop.getBody());
  dims[c.n] = colLoop.getInductionVar();
  SmallVector<Value> outIdx = indicesOf(cb, loc, outMap, dims);
  Value init = c.init ? c.init : memref::LoadOp::create(cb, loc, out, outIdx).getResult();
  auto loop = scf::ForOp::create(cb, loc, cstIndex(cb, loc, 0), sizes[c.k], one, ValueRange{init});
  {
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    dims[c.k] = loop.getInductionVar();
    Value x = memref::LoadOp::create(lb, loc, a, indicesOf(lb, loc, aMap, dims));
    Value y = memref::LoadOp::create(lb, loc, b, indicesOf(lb, loc, bMap, dims));
    Value next = lockstep::applyBody(lb, c.op, x, y, loop.getRegionIterArgs()[0]);
    scf::YieldOp::create(lb, loc, next);
  }
  storeOut(cb, loc, loop.getResult(0), dims);
}

/// The packed [k, cols] columns of weights not laid out by columns:
/// Transposed ones tl x tl blocks at a time, read along their contiguous
/// k and transposed in registers, the last k % tl (and Other weights) an
/// element at a time.
void CpuContractionKernels::packTransposed(OpBuilder &bld, Location loc, SmallVector<Value> dims,
                                           Value n0, Value pack, Value tile) {
  int64_t kBlocks = layout == WeightLayout::Transposed ? c.length / tl * tl : 0;
  Value zero = cstIndex(bld, loc, 0), one = cstIndex(bld, loc, 1);
  if (kBlocks) {
    auto kLoop = scf::ForOp::create(bld, loc, zero, cstIndex(bld, loc, kBlocks),
                                    cstIndex(bld, loc, tl));
    OpBuilder kb = OpBuilder::atBlockTerminator(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    for (int64_t v = 0; v < cols / tl; ++v) {
      Value col = cstIndex(kb, loc, v * tl);
      Value n = arith::AddIOp::create(kb, loc, n0, col);
      SmallVector<Value> block = weightBlock(kb, loc, dims, n, k0);
      for (int64_t kk = 0; kk < tl; ++kk) {
        Value k = kk ? arith::AddIOp::create(kb, loc, k0, cstIndex(kb, loc, kk)).getResult() : k0;
        vector::StoreOp::create(kb, loc, block[kk], pack, ValueRange{tile, k, col});
      }
    }
  }
  if (kBlocks == c.length)
    return;
  auto colLoop = scf::ForOp::create(bld, loc, zero, cstIndex(bld, loc, cols), one);
  OpBuilder cb = OpBuilder::atBlockTerminator(colLoop.getBody());
  dims[c.n] = arith::AddIOp::create(cb, loc, n0, colLoop.getInductionVar());
  auto kLoop = scf::ForOp::create(cb, loc, cstIndex(cb, loc, kBlocks), sizes[c.k], one);
  OpBuilder kb = OpBuilder::atBlockTerminator(kLoop.getBody());
  dims[c.k] = kLoop.getInductionVar();
  Value y = memref::LoadOp::create(kb, loc, b, indicesOf(kb, loc, bMap, dims));
  memref::StoreOp::create(kb, loc, y, pack,
                          ValueRange{tile, kLoop.getInductionVar(), colLoop.getInductionVar()});
}

/// Transposed weights W[n : n + tl, k : k + tl] as tl vectors, the i-th
/// holding the tl columns' values at k + i.
SmallVector<Value> CpuContractionKernels::weightBlock(OpBuilder &bld, Location loc,
                                                      SmallVector<Value> dims, Value n, Value k) {
  auto vt = VectorType::get({tl}, bld.getF32Type());
  dims[c.k] = k;
  SmallVector<Value> rowsOfW;
  for (int64_t l = 0; l < tl; ++l) {
    dims[c.n] = l ? arith::AddIOp::create(bld, loc, n, cstIndex(bld, loc, l)).getResult() : n;
    rowsOfW.push_back(vector::LoadOp::create(bld, loc, vt, b, indicesOf(bld, loc, bMap, dims)));
  }
  return tl == 8 ? transpose8x8(bld, loc, rowsOfW) : transposeSquare(bld, loc, rowsOfW);
}

/// The strip's columns [n0, n0 + groups·tl) for every row: row tiles of
/// `rows` rows, then the last rows one at a time.
void CpuContractionKernels::transposedStrip(OpBuilder &bld, Location loc, SmallVector<Value> dims,
                                            Value n0, int64_t groups) {
  Value one = cstIndex(bld, loc, 1), tileC = cstIndex(bld, loc, rows);
  Value mFull = arith::MulIOp::create(
      bld, loc, arith::DivUIOp::create(bld, loc, sizes[c.m], tileC), tileC);
  auto tiles = scf::ForOp::create(bld, loc, cstIndex(bld, loc, 0), mFull, tileC);
  {
    OpBuilder tb = OpBuilder::atBlockTerminator(tiles.getBody());
    SmallVector<Value> rowIdx;
    for (int64_t r = 0; r < rows; ++r)
      rowIdx.push_back(r ? arith::AddIOp::create(tb, loc, tiles.getInductionVar(),
                                                 cstIndex(tb, loc, r))
                               .getResult()
                         : tiles.getInductionVar());
    stripRows(tb, loc, dims, rowIdx, n0, groups);
  }
  auto rest = scf::ForOp::create(bld, loc, mFull, sizes[c.m], one);
  OpBuilder rb = OpBuilder::atBlockTerminator(rest.getBody());
  stripRows(rb, loc, dims, {rest.getInductionVar()}, n0, groups);
}

/// The strip's outputs of `rowIdx` in accumulators held over all of k: each
/// tl x tl block of the weights loaded along k and transposed once for all
/// the rows, its tl values of k folded in increasing order into each row's
/// accumulators; the last k mod tl values gathered a column at a time.
void CpuContractionKernels::stripRows(OpBuilder &bld, Location loc, SmallVector<Value> dims,
                                      ArrayRef<Value> rowIdx, Value n0, int64_t groups) {
  auto vt = VectorType::get({tl}, bld.getF32Type());
  Value zero = cstIndex(bld, loc, 0), one = cstIndex(bld, loc, 1);
  Value lanesC = cstIndex(bld, loc, tl);
  Value kVec = arith::MulIOp::create(
      bld, loc, arith::DivUIOp::create(bld, loc, sizes[c.k], lanesC), lanesC);
  SmallVector<Value> colIdx;
  for (int64_t v = 0; v < groups; ++v)
    colIdx.push_back(v ? arith::AddIOp::create(bld, loc, n0, cstIndex(bld, loc, v * tl))
                             .getResult()
                       : n0);
  int64_t R = rowIdx.size();
  auto outAt = [&](OpBuilder &ob, int64_t r, int64_t v) {
    dims[c.m] = rowIdx[r];
    dims[c.n] = colIdx[v];
    return indicesOf(ob, loc, outMap, dims);
  };
  SmallVector<Value> accs;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t v = 0; v < groups; ++v)
      accs.push_back(startOf(bld, loc, outAt(bld, r, v), tl));
  auto aAt = [&](OpBuilder &ob, int64_t r, Value k) {
    dims[c.m] = rowIdx[r];
    dims[c.k] = k;
    Value x = memref::LoadOp::create(ob, loc, a, indicesOf(ob, loc, aMap, dims));
    return vector::BroadcastOp::create(ob, loc, vt, x).getResult();
  };
  auto blocks = scf::ForOp::create(bld, loc, zero, kVec, lanesC, accs);
  {
    OpBuilder lb = OpBuilder::atBlockBegin(blocks.getBody());
    Value k0 = blocks.getInductionVar();
    SmallVector<SmallVector<Value>> w;
    for (int64_t v = 0; v < groups; ++v)
      w.push_back(weightBlock(lb, loc, dims, colIdx[v], k0));
    SmallVector<Value> acc(blocks.getRegionIterArgs());
    for (int64_t kk = 0; kk < tl; ++kk) {
      Value k = kk ? arith::AddIOp::create(lb, loc, k0, cstIndex(lb, loc, kk)).getResult() : k0;
      for (int64_t r = 0; r < R; ++r) {
        Value xs = aAt(lb, r, k);
        for (int64_t v = 0; v < groups; ++v)
          acc[r * groups + v] = fma(lb, loc, xs, w[v][kk], acc[r * groups + v]);
      }
    }
    scf::YieldOp::create(lb, loc, acc);
  }
  auto rest = scf::ForOp::create(bld, loc, kVec, sizes[c.k], one, blocks.getResults());
  {
    OpBuilder lb = OpBuilder::atBlockBegin(rest.getBody());
    Value k = rest.getInductionVar();
    SmallVector<Value> ys;
    for (int64_t v = 0; v < groups; ++v) {
      SmallVector<Value> col;
      for (int64_t l = 0; l < tl; ++l) {
        dims[c.n] = arith::AddIOp::create(lb, loc, colIdx[v], cstIndex(lb, loc, l));
        dims[c.k] = k;
        col.push_back(memref::LoadOp::create(lb, loc, b, indicesOf(lb, loc, bMap, dims)));
      }
      ys.push_back(vector::FromElementsOp::create(lb, loc, vt, col));
    }
    SmallVector<Value> acc(rest.getRegionIterArgs());
    for (int64_t r = 0; r < R; ++r) {
      Value xs = aAt(lb, r, k);
      for (int64_t v = 0; v < groups; ++v)
        acc[r * groups + v] = fma(lb, loc, xs, ys[v], acc[r * groups + v]);
    }
    scf::YieldOp::create(lb, loc, acc);
  }
  for (int64_t r = 0; r < R; ++r)
    for (int64_t v = 0; v < groups; ++v) {
      dims[c.m] = rowIdx[r];
      dims[c.n] = colIdx[v];
      storeOut(bld, loc, rest.getResult(r * groups + v), dims);
    }
}

void CpuContractionKernels::storeOut(OpBuilder &bld, Location loc, Value v, ArrayRef<Value> dims) {
  auto vt = dyn_cast<VectorType>(v.getType());
  auto store = [&](Value x, Value buffer, ValueRange idx) {
    if (vt)
      vector::StoreOp::create(bld, loc, x, buffer, idx);
    else
      memref::StoreOp::create(bld, loc, x, buffer, idx);
  };
  if (!combine) {
    store(v, out, indicesOf(bld, loc, outMap, dims));
    return;
  }
  // The combine's step for this chunk: out = out + partial (in its order),
  // chunk 0 adding to the forwarded fill's value instead.
  SmallVector<Value> idx = indicesOf(bld, loc, combine->outMap, dims);
  Value prev = vt ? vector::LoadOp::create(bld, loc, vt, combine->out, idx).getResult()
                  : memref::LoadOp::create(bld, loc, combine->out, idx).getResult();
  if (combine->init) {
    Value first = arith::CmpIOp::create(bld, loc, arith::CmpIPredicate::eq,
                                        dims[combine->chunkDim], cstIndex(bld, loc, 0));
    Value init = vt ? vector::BroadcastOp::create(bld, loc, vt, combine->init).getResult()
                    : combine->init;
    prev = arith::SelectOp::create(bld, loc, first, init, prev);
  }
  Value sum = combine->partialFirst ? arith::AddFOp::create(bld, loc, v, prev)
                                    : arith::AddFOp::create(bld, loc, prev, v);
  store(sum, combine->out, idx);
}

std::optional<StripCombine> lockstep::stripCombine(const Contraction &c) {
  linalg::GenericOp p = c.op;
  auto role = [](Operation *op) {
    auto a = op->getAttrOfType<StringAttr>("lockstep.chunk_role");
    return a ? a.getValue() : StringRef();
  };
  if (!c.init || role(p) != "partial")
    return std::nullopt;
  auto comb = dyn_cast_or_null<linalg::GenericOp>(p->getNextNode());
  if (!comb || role(comb) != "combine" || !comb.hasPureBufferSemantics() ||
      comb.getNumDpsInputs() != 1 || comb.getNumDpsInits() != 1)
    return std::nullopt;
  Value partial = p.getDpsInitOperand(0)->get();
  OpOperand *in = comb.getDpsInputOperand(0);
  OpOperand *init = comb.getDpsInitOperand(0);
  if (in->get() != partial)
    return std::nullopt;
  // A fresh buffer of its own: the strips write it while they read the
  // partial's inputs.
  Value root = rootOf(init->get());
  if (!root || !root.getDefiningOp<memref::AllocOp>() || root == rootOf(partial) ||
      root == rootOf(p.getDpsInputOperand(0)->get()) ||
      root == rootOf(p.getDpsInputOperand(1)->get()))
    return std::nullopt;
  StripCombine sc;
  sc.op = comb;
  sc.out = init->get();
  Block *body = comb.getBlock();
  if (!llvm::hasSingleElement(body->without_terminator()))
    return std::nullopt;
  auto add = dyn_cast<arith::AddFOp>(body->front());
  if (!add || body->getTerminator()->getOperand(0) != add.getResult() ||
      !add.getType().isF32() || add.getFastmath() != arith::FastMathFlags::none)
    return std::nullopt;
  Value bin = body->getArgument(0), bout = body->getArgument(1);
  if (add.getLhs() == bin && add.getRhs() == bout)
    sc.partialFirst = true;
  else if (!(add.getLhs() == bout && add.getRhs() == bin))
    return std::nullopt;
  // One reduction dim (the chunks), the input read through a permutation.
  std::optional<unsigned> red;
  for (auto [i, t] : llvm::enumerate(comb.getIteratorTypesArray()))
    if (t == utils::IteratorType::reduction) {
      if (red)
        return std::nullopt;
      red = i;
    }
  AffineMap inMap = comb.getMatchingIndexingMap(in);
  AffineMap combOut = comb.getMatchingIndexingMap(init);
  AffineMap partialOut = p.getMatchingIndexingMap(p.getDpsInitOperand(0));
  if (!red || !inMap.isPermutation() || !combOut.isProjectedPermutation(/*allowZero=*/true) ||
      readsDim(combOut, *red) || partialOut.getNumResults() != inMap.getNumResults())
    return std::nullopt;
  // The partial's index, in its own loop dims, that the combine reads
  // through its dim e.
  auto partialIndexOf = [&](unsigned e) { return partialOut.getResult(*inMap.getResultPosition(
                                              getAffineDimExpr(e, comb.getContext()))); };
  auto j = dyn_cast<AffineDimExpr>(partialIndexOf(*red));
  if (!j || !llvm::is_contained(c.batch, j.getPosition()) ||
      !readsDim(p.getMatchingIndexingMap(p.getDpsInputOperand(1)), j.getPosition()))
    return std::nullopt;
  sc.chunkDim = j.getPosition();
  SmallVector<AffineExpr> results;
  for (AffineExpr e : combOut.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    results.push_back(d ? partialIndexOf(d.getPosition()) : e);
  }
  sc.outMap = AffineMap::get(partialOut.getNumDims(), 0, results, comb.getContext());
  // Its rows contiguous too: the strips add a vector of columns at a time.
  if (!lastIs(sc.outMap, c.n) || !unitLastStride(sc.out))
    return std::nullopt;
  if ((sc.fill = forwardableFill(comb, 0)))
    sc.init = sc.fill.getDpsInputOperand(0)->get();
  return sc;
}

void CpuContractionKernels::buildTransposedPanels(OpBuilder &bld, Location loc) {
  // The batch dims that index the weights (a partial's chunk dim j, which
  // reads W[n, j·C + k]) run inside a work item, around each strip: a
  // strip's weight rows are then read whole, in address order, instead of
  // one chunk's piece of every row a pass (a third of each 3 KB row of
  // GPT-2's lm_head, two thirds skipped, for every chunk).
  SmallVector<unsigned> inner;
  for (unsigned d : c.batch)
    if (bMap.isFunctionOfDim(d))
      inner.push_back(d);
  PanelItem item = panelItem(bld, loc, inner);
  OpBuilder &pb = item.b;
  SmallVector<Value> &dims = item.dims;
  Value n0 = item.n0, nEnd = item.nEnd;
  // Strips of stripGroups vectors, then of one, then single columns.
  Value span = arith::SubIOp::create(pb, loc, nEnd, n0);
  auto roundDown = [&](int64_t step) -> Value {
    Value s = cstIndex(pb, loc, step);
    return arith::AddIOp::create(
        pb, loc, n0, arith::MulIOp::create(pb, loc, arith::DivUIOp::create(pb, loc, span, s), s));
  };
  Value nWide = roundDown(stripGroups * tl), nVec = roundDown(tl);
  auto wide = scf::ForOp::create(pb, loc, n0, nWide, cstIndex(pb, loc, stripGroups * tl));
  OpBuilder wb = OpBuilder::atBlockTerminator(wide.getBody());
  eachPoint(wb, loc, inner, sizes, dims, [&](OpBuilder &b) {
    transposedStrip(b, loc, dims, wide.getInductionVar(), stripGroups);
  });
  auto narrow = scf::ForOp::create(pb, loc, nWide, nVec, cstIndex(pb, loc, tl));
  OpBuilder nb = OpBuilder::atBlockTerminator(narrow.getBody());
  eachPoint(nb, loc, inner, sizes, dims, [&](OpBuilder &b) {
    transposedStrip(b, loc, dims, narrow.getInductionVar(), 1);
  });
  eachPoint(pb, loc, inner, sizes, dims, [&](OpBuilder &b) {
    scalarTile(b, loc, dims, cstIndex(b, loc, 0), sizes[c.m], nVec, nEnd);
  });
}
