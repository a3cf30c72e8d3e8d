//===- TileContractions.cpp - The lockstep-tile-contractions pass ---------===//
//
// Gives each bufferized contraction (a linalg.generic with two inputs, one
// output and one innermost reduction dim k of static length) a GPU launch
// tiled for reuse: a block owns a BM x BN tile of (m, n) for one point of
// the batch dims, stages BK values of k of both inputs in workgroup memory,
// and each thread folds its TM x TN outputs over them with the generic's
// body, k increasing, from the output's own value. So each output's fold is
// the generic's, and only which thread computes it changes (see the pass's
// description in Passes.td). The host picks the tiled launch or the plain
// generic (a point a thread, lockstep-map-to-gpu) from the sizes of the call.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Reductions/Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace lockstep {
#define GEN_PASS_DEF_TILECONTRACTIONS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

/// A tile shape: TX x TY threads, each owning TM rows (ty + i*TY) and TN
/// columns (tx + j*TX) of a BM x BN tile, staging BK values of k a step
/// (BK is at most `maxBK`, and divides the reduction's length).
struct TileShape {
  int64_t tx, ty, tm, tn, maxBK;
  int64_t bm() const { return ty * tm; }
  int64_t bn() const { return tx * tn; }
  int64_t threads() const { return tx * ty; }
};

/// The tile shapes, from the most rows up; the host takes the first whose
/// row limit holds the call's rows.
struct ShapeChoice {
  int64_t maxRows; // 0: no limit
  TileShape shape;
};
constexpr ShapeChoice kShapes[] = {
    // One row (a decode step of one request): 64 columns, a thread each,
    // 64 values of k a step (each thread stages 64 of the weights).
    {1, {64, 1, 1, 1, 64}},
    // Up to 8 rows: 8x64 tiles, each thread 4 rows of one column.
    {8, {64, 2, 4, 1, 64}},
    // Up to 64 rows: 16x64 tiles, 64 values of k a step, so that a block
    // keeps 16 KiB of the weights in flight.
    {64, {64, 4, 4, 1, 64}},
    // Many rows (prefill): 64x64 tiles, each thread 4x4 outputs.
    {0, {16, 16, 4, 4, 16}},
};
constexpr int64_t kMaxGridZ = 65535;

using lockstep::Contraction;
using lockstep::indicesOf;

/// A contraction whose k is its last loop (lockstep-reductions-innermost
/// puts it there), of a static length divisible by 8.
std::optional<Contraction> match(linalg::GenericOp op) {
  std::optional<Contraction> c = lockstep::matchContraction(op);
  if (!c || c->k + 1 != op.getNumLoops() || ShapedType::isDynamic(c->length) ||
      c->length % 8)
    return std::nullopt;
  return c;
}

Value idx(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value zeroOf(OpBuilder &b, Location loc, Type t) {
  return arith::ConstantOp::create(b, loc, t, b.getZeroAttr(t));
}

/// `cond ? load : 0`.
Value guardedLoad(OpBuilder &b, Location loc, Value cond, Value memref,
                  ArrayRef<Value> idx) {
  Type t = cast<MemRefType>(memref.getType()).getElementType();
  auto branch = scf::IfOp::create(b, loc, TypeRange{t}, cond, /*withElse=*/true);
  OpBuilder tb = branch.getThenBodyBuilder();
  scf::YieldOp::create(tb, loc, memref::LoadOp::create(tb, loc, memref, idx).getResult());
  OpBuilder eb = branch.getElseBodyBuilder();
  scf::YieldOp::create(eb, loc, zeroOf(eb, loc, t));
  return branch.getResult(0);
}

class Tiler {
public:
  Tiler(Contraction &c, ArrayRef<Value> sizes, TileShape shape) : c(c), sizes(sizes), s(shape) {
    bk = s.maxBK;
    while (c.length % bk)
      bk /= 2; // the length is a multiple of 8
  }

  /// The launch, built at `b`.
  void build(OpBuilder &b, Location loc, Value gridZ) {
    auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
    Value gx = arith::CeilDivUIOp::create(b, loc, sizes[c.n], cst(s.bn()));
    Value gy = arith::CeilDivUIOp::create(b, loc, sizes[c.m], cst(s.bm()));
    auto launch = gpu::LaunchOp::create(b, loc, gx, gy, gridZ, cst(s.tx), cst(s.ty), cst(1));
    auto wg = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
    Value aTile = launch.addWorkgroupAttribution(
        MemRefType::get({bk, s.bm() + 1}, elementOf(0), MemRefLayoutAttrInterface{}, wg), loc);
    Value bTile = launch.addWorkgroupAttribution(
        MemRefType::get({bk, s.bn() + 1}, elementOf(1), MemRefLayoutAttrInterface{}, wg), loc);
    Block &kb = launch.getBody().front();
    OpBuilder kbb = OpBuilder::atBlockBegin(&kb);
    body(kbb, loc, launch, aTile, bTile);
    gpu::TerminatorOp::create(kbb, loc);
  }

private:
  Contraction &c;
  ArrayRef<Value> sizes; // each loop dim's extent
  TileShape s;
  int64_t bk;

  Type elementOf(unsigned input) {
    return cast<MemRefType>(c.op.getDpsInputOperand(input)->get().getType()).getElementType();
  }

  void body(OpBuilder &b, Location loc, gpu::LaunchOp launch, Value aTile, Value bTile) {
    auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
    Value tx = launch.getThreadIds().x, ty = launch.getThreadIds().y;
    Value m0 = arith::MulIOp::create(b, loc, launch.getBlockIds().y, cst(s.bm()));
    Value n0 = arith::MulIOp::create(b, loc, launch.getBlockIds().x, cst(s.bn()));
    // The batch dims from block z, last fastest.
    SmallVector<Value> dims(c.k + 1);
    Value rest = launch.getBlockIds().z;
    for (int i = (int)c.batch.size() - 1; i >= 0; --i) {
      unsigned d = c.batch[i];
      dims[d] = i == 0 ? rest : arith::RemUIOp::create(b, loc, rest, sizes[d]).getResult();
      if (i > 0)
        rest = arith::DivUIOp::create(b, loc, rest, sizes[d]);
    }
    // This thread's rows and columns, and whether each is in range.
    SmallVector<Value> rows, cols, rowIn, colIn;
    for (int64_t i = 0; i < s.tm; ++i) {
      rows.push_back(arith::AddIOp::create(
          b, loc, m0, arith::AddIOp::create(b, loc, ty, cst(i * s.ty))));
      rowIn.push_back(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            rows.back(), sizes[c.m]));
    }
    for (int64_t j = 0; j < s.tn; ++j) {
      cols.push_back(arith::AddIOp::create(
          b, loc, n0, arith::AddIOp::create(b, loc, tx, cst(j * s.tx))));
      colIn.push_back(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            cols.back(), sizes[c.n]));
    }
    Value out = c.op.getDpsInitOperand(0)->get();
    AffineMap outMap = c.op.getMatchingIndexingMap(c.op.getDpsInitOperand(0));
    auto outIndex = [&](OpBuilder &ob, int64_t i, int64_t j) {
      SmallVector<Value> d(dims);
      d[c.m] = rows[i];
      d[c.n] = cols[j];
      return indicesOf(ob, loc, outMap, d);
    };
    // Each output starts from its own value (zero past the end).
    SmallVector<Value> init;
    for (int64_t i = 0; i < s.tm; ++i)
      for (int64_t j = 0; j < s.tn; ++j) {
        Value in = arith::AndIOp::create(b, loc, rowIn[i], colIn[j]);
        init.push_back(guardedLoad(b, loc, in, out, outIndex(b, i, j)));
      }
    Value tid = arith::AddIOp::create(b, loc, tx, arith::MulIOp::create(b, loc, ty, cst(s.tx)));
    // Software pipelining: the values of the next step's tiles are loaded
    // into registers while this step's are folded, so that every load of a
    // step is in flight at once and behind the arithmetic. The carried
    // values are the outputs' accumulators, then A's and B's shares.
    Share shareA{0, aTile, c.m, s.bm(), c.aKFastest, m0};
    Share shareB{1, bTile, c.n, s.bn(), c.bKFastest, n0};
    SmallVector<Value> carried(init);
    SmallVector<Value> firstA = loadShare(b, loc, shareA, tid, cst(0), dims);
    SmallVector<Value> firstB = loadShare(b, loc, shareB, tid, cst(0), dims);
    carried.append(firstA);
    carried.append(firstB);
    size_t nAcc = init.size(), nA = firstA.size();
    auto outer = scf::ForOp::create(b, loc, cst(0), cst(c.length), cst(bk), carried);
    {
      OpBuilder lb = OpBuilder::atBlockBegin(outer.getBody());
      Value k0 = outer.getInductionVar();
      ValueRange args = outer.getRegionIterArgs();
      storeShare(lb, loc, shareA, tid, args.slice(nAcc, nA));
      storeShare(lb, loc, shareB, tid, args.slice(nAcc + nA, args.size() - nAcc - nA));
      gpu::BarrierOp::create(lb, loc);
      // The next step's k (the last step loads its own again: in range).
      Value next = arith::MinUIOp::create(lb, loc, arith::AddIOp::create(lb, loc, k0, idx(lb, loc, bk)),
                                          idx(lb, loc, c.length - bk));
      SmallVector<Value> nextA = loadShare(lb, loc, shareA, tid, next, dims);
      SmallVector<Value> nextB = loadShare(lb, loc, shareB, tid, next, dims);
      auto inner = scf::ForOp::create(lb, loc, idx(lb, loc, 0), idx(lb, loc, bk), idx(lb, loc, 1),
                                      args.take_front(nAcc));
      {
        OpBuilder ib = OpBuilder::atBlockBegin(inner.getBody());
        Value kk = inner.getInductionVar();
        SmallVector<Value> as, bs;
        for (int64_t i = 0; i < s.tm; ++i)
          as.push_back(memref::LoadOp::create(
              ib, loc, aTile,
              ValueRange{kk, arith::AddIOp::create(ib, loc, ty, idx(ib, loc, i * s.ty))}));
        for (int64_t j = 0; j < s.tn; ++j)
          bs.push_back(memref::LoadOp::create(
              ib, loc, bTile,
              ValueRange{kk, arith::AddIOp::create(ib, loc, tx, idx(ib, loc, j * s.tx))}));
        SmallVector<Value> nextAcc;
        for (int64_t i = 0; i < s.tm; ++i)
          for (int64_t j = 0; j < s.tn; ++j)
            nextAcc.push_back(
                lockstep::applyBody(ib, c.op, as[i], bs[j],
                                inner.getRegionIterArgs()[i * s.tn + j]));
        scf::YieldOp::create(ib, loc, nextAcc);
      }
      gpu::BarrierOp::create(lb, loc);
      SmallVector<Value> yielded(inner.getResults());
      yielded.append(nextA);
      yielded.append(nextB);
      scf::YieldOp::create(lb, loc, yielded);
    }
    for (int64_t i = 0; i < s.tm; ++i)
      for (int64_t j = 0; j < s.tn; ++j) {
        Value in = arith::AndIOp::create(b, loc, rowIn[i], colIn[j]);
        auto store = scf::IfOp::create(b, loc, in, /*withElse=*/false);
        OpBuilder sb = OpBuilder::atBlockBegin(&store.getThenRegion().front());
        memref::StoreOp::create(sb, loc, outer.getResult(i * s.tn + j), out, outIndex(sb, i, j));
      }
  }

  /// One input's tile: [k0, k0 + bk) x [p0, p0 + extent) of input `which`
  /// (its own dim `own`), kept as tile[k][p]. Each thread copies elements
  /// tid, tid + threads, ..., in the order that reads the input's last dim
  /// fastest, zeros past the dim's end.
  struct Share {
    unsigned which;
    Value tile;
    unsigned own;
    int64_t extent;
    bool kFastest;
    Value p0;
  };

  /// Element e0 + tid of `sh`'s tile: its (k, p) in the tile, and whether
  /// it is in the tile (only the last slot can pass its end).
  std::tuple<Value, Value, Value> slot(OpBuilder &b, Location loc, const Share &sh, Value tid,
                                       int64_t e0) {
    int64_t total = bk * sh.extent;
    Value e = arith::AddIOp::create(b, loc, tid, idx(b, loc, e0));
    int64_t fast = sh.kFastest ? bk : sh.extent;
    Value lo = arith::RemUIOp::create(b, loc, e, idx(b, loc, fast));
    Value hi = arith::DivUIOp::create(b, loc, e, idx(b, loc, fast));
    Value inTile;
    if (e0 + s.threads() > total)
      inTile = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, e, idx(b, loc, total));
    return sh.kFastest ? std::tuple{lo, hi, inTile} : std::tuple{hi, lo, inTile};
  }

  /// This thread's share of `sh`'s tile at k0, loaded (all loads first, so
  /// that they are in flight together).
  SmallVector<Value> loadShare(OpBuilder &b, Location loc, const Share &sh, Value tid, Value k0,
                               ArrayRef<Value> batchDims) {
    Value input = c.op.getDpsInputOperand(sh.which)->get();
    AffineMap map = c.op.getMatchingIndexingMap(c.op.getDpsInputOperand(sh.which));
    SmallVector<Value> values;
    for (int64_t e0 = 0; e0 < bk * sh.extent; e0 += s.threads()) {
      auto [kk, pp, inTile] = slot(b, loc, sh, tid, e0);
      Value p = arith::AddIOp::create(b, loc, sh.p0, pp);
      SmallVector<Value> d(batchDims);
      d[sh.own] = p;
      d[c.k] = arith::AddIOp::create(b, loc, k0, kk);
      Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, p, sizes[sh.own]);
      if (inTile)
        in = arith::AndIOp::create(b, loc, in, inTile);
      values.push_back(guardedLoad(b, loc, in, input, indicesOf(b, loc, map, d)));
    }
    return values;
  }

  /// Stores the values of loadShare into the tile.
  void storeShare(OpBuilder &b, Location loc, const Share &sh, Value tid, ValueRange values) {
    int64_t e0 = 0;
    for (Value v : values) {
      auto [kk, pp, inTile] = slot(b, loc, sh, tid, e0);
      e0 += s.threads();
      if (!inTile) {
        memref::StoreOp::create(b, loc, v, sh.tile, ValueRange{kk, pp});
        continue;
      }
      auto guard = scf::IfOp::create(b, loc, inTile, /*withElse=*/false);
      OpBuilder gb = OpBuilder::atBlockBegin(&guard.getThenRegion().front());
      memref::StoreOp::create(gb, loc, v, sh.tile, ValueRange{kk, pp});
    }
  }
};

struct TileContractionsPass
    : public lockstep::impl::TileContractionsBase<TileContractionsPass> {
  using TileContractionsBase::TileContractionsBase;

  void runOnOperation() override {
    SmallVector<Contraction> found;
    getOperation().walk([&](linalg::GenericOp g) {
      if (auto c = match(g))
        found.push_back(*c);
    });
    for (Contraction &c : found)
      tile(c);
  }

  void tile(Contraction &c) {
    linalg::GenericOp op = c.op;
    Location loc = op.getLoc();
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
    for (const ShapeChoice &choice : kShapes) {
      if (choice.maxRows == 0) {
        Tiler(c, sizes, choice.shape).build(tb, loc, gridZ);
        break;
      }
      Value fits = arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::ule, sizes[c.m],
                                         arith::ConstantIndexOp::create(tb, loc, choice.maxRows));
      auto pick = scf::IfOp::create(tb, loc, fits, /*withElse=*/true);
      OpBuilder sb = OpBuilder::atBlockBegin(&pick.getThenRegion().front());
      Tiler(c, sizes, choice.shape).build(sb, loc, gridZ);
      tb = OpBuilder::atBlockBegin(&pick.getElseRegion().front());
    }
    op->moveBefore(branch.getElseRegion().front().getTerminator());
    ++numTiled;
  }
};

} // namespace
