//===- ContractionKernel.cpp - A contraction's tiled GPU launch -----------===//
//
// The kernel of lockstep-tile-contractions, for one tile shape (see
// lockstep/GPU/ContractionKernel.h). Each step of BK values of k: the
// threads copy both inputs' tiles of that step into workgroup memory, wait,
// and each folds its outputs over the step's k in increasing order with the
// generic's body. The copies are software-pipelined: the next step's values
// are loaded into registers before this step's fold and stored after it (or,
// with one buffer, at the start of the next step).
//
//===----------------------------------------------------------------------===//
#include "lockstep/GPU/ContractionKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using lockstep::Contraction;
using lockstep::TileShape;

bool lockstep::contiguousGroups(Value memref, AffineMap map, unsigned dim, int64_t width) {
  auto t = dyn_cast<MemRefType>(memref.getType());
  if (!t || t.getRank() == 0 || !t.getElementType().isIntOrFloat() ||
      t.getElementTypeBitWidth() != 32 || map.getNumResults() != (unsigned)t.getRank())
    return false;
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  int64_t size = t.getShape().back();
  if (!last || last.getPosition() != dim || ShapedType::isDynamic(size) || size % width)
    return false;
  if (t.getLayout().isIdentity())
    return true; // every stride a multiple of the last size, offset 0
  auto [strides, offset] = t.getStridesAndOffset();
  if (strides.back() != 1 || ShapedType::isDynamic(offset) || offset % width)
    return false;
  return llvm::all_of(ArrayRef(strides).drop_back(), [&](int64_t s) {
    return !ShapedType::isDynamic(s) && s % width == 0;
  });
}

namespace {

Value idx(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value add(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AddIOp::create(b, loc, x, y);
}

Value addc(OpBuilder &b, Location loc, Value x, int64_t y) {
  return y ? add(b, loc, x, idx(b, loc, y)) : x;
}

Value mulc(OpBuilder &b, Location loc, Value x, int64_t y) {
  return y == 1 ? x : arith::MulIOp::create(b, loc, x, idx(b, loc, y)).getResult();
}

Value ult(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
}

/// A load of `t` at `indices`: an element, or a vector of adjacent ones
/// aligned to its size.
Value loadAt(OpBuilder &b, Location loc, Type t, Value memref, ValueRange indices) {
  auto v = dyn_cast<VectorType>(t);
  if (!v)
    return memref::LoadOp::create(b, loc, memref, indices);
  return vector::LoadOp::create(b, loc, v, memref, indices, /*nontemporal=*/false,
                                llvm::Align(v.getNumElements() * v.getElementTypeBitWidth() / 8));
}

/// The store of `value` (an element, or an aligned vector) at `indices`.
void storeAt(OpBuilder &b, Location loc, Value value, Value memref, ValueRange indices) {
  auto v = dyn_cast<VectorType>(value.getType());
  if (!v) {
    memref::StoreOp::create(b, loc, value, memref, indices);
    return;
  }
  vector::StoreOp::create(b, loc, value, memref, indices, /*nontemporal=*/false,
                          llvm::Align(v.getNumElements() * v.getElementTypeBitWidth() / 8));
}

/// `cond ? load : 0`.
Value guardedLoad(OpBuilder &b, Location loc, Value cond, Type t, Value memref,
                  ValueRange indices) {
  auto branch = scf::IfOp::create(b, loc, TypeRange{t}, cond, /*withElse=*/true);
  OpBuilder tb = branch.getThenBodyBuilder();
  scf::YieldOp::create(tb, loc, loadAt(tb, loc, t, memref, indices));
  OpBuilder eb = branch.getElseBodyBuilder();
  scf::YieldOp::create(eb, loc, arith::ConstantOp::create(eb, loc, t, eb.getZeroAttr(t)).getResult());
  return branch.getResult(0);
}

/// A builder inside `if (cond)` at `b` (at `b` itself without a cond).
OpBuilder guarded(OpBuilder &b, Location loc, Value cond) {
  if (!cond)
    return b;
  auto guard = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
  return OpBuilder::atBlockBegin(&guard.getThenRegion().front());
}

/// The elements of `v` (itself when a scalar).
SmallVector<Value> elementsOf(OpBuilder &b, Location loc, Value v) {
  auto t = dyn_cast<VectorType>(v.getType());
  if (!t)
    return {v};
  SmallVector<Value> out;
  for (int64_t l = 0; l < t.getNumElements(); ++l)
    out.push_back(vector::ExtractOp::create(b, loc, v, l));
  return out;
}

/// `width` elements of type `e` as one value: a vector, or `e` for 1.
Type groupType(Type e, int64_t width) {
  return width == 1 ? e : VectorType::get({width}, e);
}

/// One input's tile: [k0, k0 + bk) x [p0, p0 + extent) of input `which`
/// (its own dim `own`), kept as tile[buffer][k][p]. The threads copy it in
/// units of `width` elements adjacent along its fast dim (k when `kFast`,
/// else p): unit tid, tid + threads, ..., fast dim first, zeros past the
/// own dim's end.
struct Share {
  unsigned which, own;
  int64_t extent;
  bool kFast;
  int64_t width;
  Value tile, p0;
};

class Tiler {
public:
  Tiler(const Contraction &c, ArrayRef<Value> sizes, const TileShape &shape, Location loc)
      : c(c), sizes(sizes), s(shape), loc(loc) {
    // Weights with k fastest (W[n, k]) would have a warp's loads of one k
    // touch 32 rows: they are staged, whose copy reads along k.
    if (c.bKFastest)
      s.direct = false;
    bk = s.maxBK;
    while (c.length % bk)
      bk /= 2; // the length is a multiple of 8
  }

  /// One launch for the tilers of `group` (one contraction, or several
  /// that read the same first input: the same rows, batch points, k and
  /// tile types): block x runs over the first one's column tiles, then the
  /// next one's, each block's tile that of one member, under a condition
  /// uniform in the block. The workgroup tiles are shared: a block uses
  /// only its member's.
  static void build(OpBuilder &b, Location loc, ArrayRef<Tiler *> group, Value gridZ) {
    Tiler &t0 = *group.front();
    SmallVector<Value> starts, counts;
    Value gx;
    for (Tiler *t : group) {
      Value n = arith::CeilDivUIOp::create(b, loc, t->sizes[t->c.n], idx(b, loc, t->s.bn()));
      starts.push_back(gx ? gx : idx(b, loc, 0));
      counts.push_back(n);
      gx = gx ? add(b, loc, gx, n) : n;
    }
    Value gy = arith::CeilDivUIOp::create(b, loc, t0.sizes[t0.c.m], idx(b, loc, t0.s.bm()));
    auto launch = gpu::LaunchOp::create(b, loc, gx, gy, gridZ, idx(b, loc, t0.s.tx),
                                        idx(b, loc, t0.s.ty), idx(b, loc, 1));
    Share a0 = t0.share(0, t0.c.m, t0.s.bm()), w0 = t0.share(1, t0.c.n, t0.s.bn());
    Value aTile = launch.addWorkgroupAttribution(t0.tileType(a0), loc);
    Value wTile;
    if (!t0.s.direct)
      wTile = launch.addWorkgroupAttribution(t0.tileType(w0), loc);
    OpBuilder kb = OpBuilder::atBlockBegin(&launch.getBody().front());
    Value bx = launch.getBlockIds().x;
    for (auto [i, t] : llvm::enumerate(group)) {
      Share a = t->share(0, t->c.m, t->s.bm()), w = t->share(1, t->c.n, t->s.bn());
      assert(t->tileType(a) == t0.tileType(a0) && (t0.s.direct || t->tileType(w) == t0.tileType(w0)) &&
             "a group's members share their workgroup tiles");
      a.tile = aTile;
      w.tile = wTile;
      if (group.size() == 1) {
        t->body(kb, launch, bx, a, w);
        break;
      }
      // bx - start wraps past the count below the member's first block.
      Value x = arith::SubIOp::create(kb, loc, bx, starts[i]);
      auto mine = scf::IfOp::create(kb, loc, ult(kb, loc, x, counts[i]), /*withElse=*/false);
      OpBuilder mb = OpBuilder::atBlockBegin(&mine.getThenRegion().front());
      t->body(mb, launch, x, a, w);
    }
    gpu::TerminatorOp::create(kb, loc);
  }

private:
  Contraction c; // a copy: ops are not const
  ArrayRef<Value> sizes; // each loop dim's extent
  TileShape s;
  Location loc;
  int64_t bk;
  // Set at the start of body().
  Value tid, tyOff, txOff; // tyOff: ty·vec, txOff: tx·vec
  SmallVector<Value> dims;  // the batch dims (the rest are set per use)

  bool blocked() const { return s.vec > 1; }
  int64_t stages() const { return blocked() ? 2 : 1; }
  int64_t pad() const { return blocked() ? s.vec : 1; }

  Type elementOf(unsigned input) {
    return cast<MemRefType>(c.op.getDpsInputOperand(input)->get().getType()).getElementType();
  }

  Share share(unsigned which, unsigned own, int64_t extent) {
    OpOperand *in = c.op.getDpsInputOperand(which);
    bool kFast = which == 0 ? c.aKFastest : c.bKFastest;
    bool vec = blocked() && lockstep::contiguousGroups(in->get(), c.op.getMatchingIndexingMap(in),
                                                       kFast ? c.k : own, s.vec);
    return {which, own, extent, kFast, vec ? s.vec : 1, {}, {}};
  }

  MemRefType tileType(const Share &sh) {
    SmallVector<int64_t> shape;
    if (stages() == 2)
      shape.push_back(2);
    shape.append({bk, sh.extent + pad()});
    auto wg = gpu::AddressSpaceAttr::get(c.op.getContext(), gpu::AddressSpace::Workgroup);
    return MemRefType::get(shape, elementOf(sh.which), MemRefLayoutAttrInterface{}, wg);
  }

  SmallVector<Value> at(Value buf, Value k, Value p) {
    if (buf)
      return {buf, k, p};
    return {k, p};
  }

  /// The kernel of this member, its column tiles numbered by `blockX`.
  void body(OpBuilder &b, gpu::LaunchOp launch, Value blockX, Share &a, Share &w) {
    Value tx = launch.getThreadIds().x, ty = launch.getThreadIds().y;
    tid = add(b, loc, tx, mulc(b, loc, ty, s.tx));
    tyOff = mulc(b, loc, ty, s.vec);
    txOff = mulc(b, loc, tx, s.vec);
    a.p0 = mulc(b, loc, launch.getBlockIds().y, s.bm());
    w.p0 = mulc(b, loc, blockX, s.bn());
    // The batch dims from block z, last fastest.
    dims.assign(c.k + 1, Value());
    Value rest = launch.getBlockIds().z;
    for (int i = (int)c.batch.size() - 1; i >= 0; --i) {
      unsigned d = c.batch[i];
      dims[d] = i == 0 ? rest : arith::RemUIOp::create(b, loc, rest, sizes[d]).getResult();
      if (i > 0)
        rest = arith::DivUIOp::create(b, loc, rest, sizes[d]);
    }
    Outputs outs(*this, b, a.p0, w.p0);
    SmallVector<Value> carried = outs.load(b);
    size_t nAcc = carried.size();
    SmallVector<Value> firstA = loadShare(b, a, idx(b, loc, 0));
    SmallVector<Value> firstW = loadShare(b, w, idx(b, loc, 0));
    size_t nA = firstA.size();
    if (stages() == 2) {
      storeShare(b, a, idx(b, loc, 0), firstA);
      storeShare(b, w, idx(b, loc, 0), firstW);
      gpu::BarrierOp::create(b, loc);
    }
    carried.append(firstA);
    carried.append(firstW);
    auto outer = scf::ForOp::create(b, loc, idx(b, loc, 0), idx(b, loc, c.length),
                                    idx(b, loc, bk), carried);
    OpBuilder lb = OpBuilder::atBlockBegin(outer.getBody());
    Value k0 = outer.getInductionVar();
    ValueRange args = outer.getRegionIterArgs();
    ValueRange argsA = args.slice(nAcc, nA), argsW = args.drop_front(nAcc + nA);
    Value buf, other; // this step's buffer and the next step's (two buffers)
    if (stages() == 2) {
      Value step = arith::DivUIOp::create(lb, loc, k0, idx(lb, loc, bk));
      buf = arith::RemUIOp::create(lb, loc, step, idx(lb, loc, 2));
      other = arith::SubIOp::create(lb, loc, idx(lb, loc, 1), buf);
    } else {
      storeShare(lb, a, buf, argsA);
      storeShare(lb, w, buf, argsW);
      gpu::BarrierOp::create(lb, loc);
    }
    // The next step's k (the last step loads its own again: in range).
    Value next = arith::MinUIOp::create(lb, loc, addc(lb, loc, k0, bk), idx(lb, loc, c.length - bk));
    SmallVector<Value> nextA = loadShare(lb, a, next);
    SmallVector<Value> nextW = loadShare(lb, w, next);
    SmallVector<Value> yielded = fold(lb, a, w, buf, args.take_front(nAcc), argsW);
    if (stages() == 2) {
      storeShare(lb, a, other, nextA);
      storeShare(lb, w, other, nextW);
    }
    gpu::BarrierOp::create(lb, loc);
    yielded.append(nextA);
    yielded.append(nextW);
    scf::YieldOp::create(lb, loc, yielded);
    outs.store(b, outer.getResults().take_front(nAcc));
  }

  /// The fold of one step: over k of the tiles in `buf`, increasing. The
  /// register-blocked tiles unroll it by 2: fully unrolled, ptxas hoists
  /// the workgroup loads of later k and takes over 128 registers a thread
  /// (one block of 256 an SM); by 2 it stays under.
  SmallVector<Value> fold(OpBuilder &b, const Share &a, const Share &w, Value buf,
                          ValueRange accs, ValueRange wRegs) {
    if (s.direct) { // the step's k unrolled whole: registers are not indexed
      SmallVector<Value> cur(accs);
      for (int64_t u = 0; u < bk; ++u)
        cur = foldOne(b, a, w, buf, idx(b, loc, u), cur, wRegs.slice(u * s.tn, s.tn));
      return cur;
    }
    int64_t unroll = blocked() ? 2 : 1;
    auto inner =
        scf::ForOp::create(b, loc, idx(b, loc, 0), idx(b, loc, bk), idx(b, loc, unroll), accs);
    OpBuilder ib = OpBuilder::atBlockBegin(inner.getBody());
    SmallVector<Value> cur(inner.getRegionIterArgs());
    for (int64_t u = 0; u < unroll; ++u)
      cur = foldOne(ib, a, w, buf, addc(ib, loc, inner.getInductionVar(), u), cur);
    scf::YieldOp::create(ib, loc, cur);
    return SmallVector<Value>(inner.getResults());
  }

  /// Every output folded with k = kk of the tiles.
  SmallVector<Value> foldOne(OpBuilder &b, const Share &a, const Share &w, Value buf, Value kk,
                             ValueRange accs, ValueRange wRegs = {}) {
    SmallVector<Value> as = fragment(b, a, buf, kk, tyOff, s.ty, s.tm);
    SmallVector<Value> ws = s.direct ? SmallVector<Value>(wRegs)
                                     : fragment(b, w, buf, kk, txOff, s.tx, s.tn);
    SmallVector<Value> next;
    for (int64_t i = 0; i < s.tm; ++i)
      for (int64_t j = 0; j < s.tn; ++j)
        next.push_back(lockstep::applyBody(b, c.op, as[i], ws[j], accs[i * s.tn + j]));
    return next;
  }

  /// A thread's `count` values of `sh`'s tile at k = kk: groups of vec at
  /// `off` + g·threadsAlong·vec.
  SmallVector<Value> fragment(OpBuilder &b, const Share &sh, Value buf, Value kk, Value off,
                              int64_t threadsAlong, int64_t count) {
    Type t = groupType(elementOf(sh.which), s.vec);
    SmallVector<Value> values;
    for (int64_t g = 0; g < count / s.vec; ++g) {
      Value p = addc(b, loc, off, g * threadsAlong * s.vec);
      values.append(elementsOf(b, loc, loadAt(b, loc, t, sh.tile, at(buf, kk, p))));
    }
    return values;
  }

  /// Unit e0 + tid of `sh`'s tile: the (k, p) of its first element, and
  /// whether it is in the tile (only the last units can pass its end).
  std::tuple<Value, Value, Value> slot(OpBuilder &b, const Share &sh, int64_t e0) {
    int64_t total = bk * sh.extent / sh.width;
    Value e = addc(b, loc, tid, e0);
    int64_t fast = (sh.kFast ? bk : sh.extent) / sh.width;
    Value lo = mulc(b, loc, arith::RemUIOp::create(b, loc, e, idx(b, loc, fast)), sh.width);
    Value hi = arith::DivUIOp::create(b, loc, e, idx(b, loc, fast));
    Value inTile;
    if (e0 + s.threads() > total)
      inTile = ult(b, loc, e, idx(b, loc, total));
    return sh.kFast ? std::tuple{lo, hi, inTile} : std::tuple{hi, lo, inTile};
  }

  int64_t units(const Share &sh) { return bk * sh.extent / sh.width; }

  /// This thread's units of `sh`'s tile at k0, loaded (all loads first, so
  /// that they are in flight together).
  SmallVector<Value> loadShare(OpBuilder &b, const Share &sh, Value k0) {
    OpOperand *in = c.op.getDpsInputOperand(sh.which);
    AffineMap map = c.op.getMatchingIndexingMap(in);
    Type t = groupType(elementOf(sh.which), sh.width);
    SmallVector<Value> values;
    if (s.direct && sh.which == 1)
      return loadOwn(b, sh, k0);
    for (int64_t e0 = 0; e0 < units(sh); e0 += s.threads()) {
      auto [kk, pp, inTile] = slot(b, sh, e0);
      Value p = add(b, loc, sh.p0, pp);
      SmallVector<Value> d(dims);
      d[sh.own] = p;
      d[c.k] = add(b, loc, k0, kk);
      // A unit along p is whole or past the end: width divides the size.
      Value inRange = ult(b, loc, p, sizes[sh.own]);
      if (inTile)
        inRange = arith::AndIOp::create(b, loc, inRange, inTile);
      values.push_back(
          guardedLoad(b, loc, inRange, t, in->get(), lockstep::indicesOf(b, loc, map, d)));
    }
    return values;
  }

  /// The direct tiles' share of the second input: this thread's TN columns
  /// (tx + j·TX) at each of the step's BK values of k, k outermost. A column
  /// past the end reads the last one (n > 0 is the host's condition): its
  /// outputs are never stored, and no load needs a branch.
  SmallVector<Value> loadOwn(OpBuilder &b, const Share &sh, Value k0) {
    OpOperand *in = c.op.getDpsInputOperand(sh.which);
    AffineMap map = c.op.getMatchingIndexingMap(in);
    Value last = arith::SubIOp::create(b, loc, sizes[sh.own], idx(b, loc, 1));
    SmallVector<Value> cols;
    for (int64_t j = 0; j < s.tn; ++j)
      cols.push_back(arith::MinUIOp::create(b, loc, addc(b, loc, add(b, loc, sh.p0, txOff),
                                                         j * s.tx), last));
    SmallVector<Value> values;
    for (int64_t i = 0; i < bk; ++i)
      for (Value col : cols) {
        SmallVector<Value> d(dims);
        d[sh.own] = col;
        d[c.k] = addc(b, loc, k0, i);
        values.push_back(memref::LoadOp::create(b, loc, in->get(),
                                                lockstep::indicesOf(b, loc, map, d)));
      }
    return values;
  }

  /// Stores the values of loadShare into buffer `buf` of the tile: a unit
  /// along p as one vector, a unit along k element by element.
  void storeShare(OpBuilder &b, const Share &sh, Value buf, ValueRange values) {
    if (s.direct && sh.which == 1)
      return; // kept in registers
    int64_t e0 = 0;
    for (Value v : values) {
      auto [kk, pp, inTile] = slot(b, sh, e0);
      e0 += s.threads();
      OpBuilder gb = guarded(b, loc, inTile);
      if (!sh.kFast) {
        storeAt(gb, loc, v, sh.tile, at(buf, kk, pp));
        continue;
      }
      SmallVector<Value> elems = elementsOf(gb, loc, v);
      for (auto [l, x] : llvm::enumerate(elems))
        storeAt(gb, loc, x, sh.tile, at(buf, addc(gb, loc, kk, l), pp));
    }
  }

  /// A thread's outputs: rows i and columns j, each output i·TN + j; read
  /// and written in groups of `width` columns where the output allows.
  struct Outputs {
    Tiler &t;
    Value mem;
    AffineMap map;
    int64_t width;
    SmallVector<Value> rows, cols, rowIn, colIn;

    Outputs(Tiler &t, OpBuilder &b, Value m0, Value n0) : t(t) {
      Contraction &c = t.c;
      Location loc = t.loc;
      mem = c.op.getDpsInitOperand(0)->get();
      map = c.op.getMatchingIndexingMap(c.op.getDpsInitOperand(0));
      width = t.blocked() && lockstep::contiguousGroups(mem, map, c.n, t.s.vec) ? t.s.vec : 1;
      auto coord = [&](Value p0, Value off, int64_t along, int64_t i) {
        int64_t v = t.s.vec;
        return add(b, loc, p0, addc(b, loc, off, i % v + i / v * along * v));
      };
      for (int64_t i = 0; i < t.s.tm; ++i) {
        rows.push_back(coord(m0, t.tyOff, t.s.ty, i));
        rowIn.push_back(ult(b, loc, rows.back(), t.sizes[c.m]));
      }
      for (int64_t j = 0; j < t.s.tn; ++j) {
        cols.push_back(coord(n0, t.txOff, t.s.tx, j));
        colIn.push_back(ult(b, loc, cols.back(), t.sizes[c.n]));
      }
    }

    /// The place of output (i, j) and whether it is in range (for a group
    /// of columns from j: all of it, as width divides the size).
    std::pair<SmallVector<Value>, Value> place(OpBuilder &b, int64_t i, int64_t j) {
      SmallVector<Value> d(t.dims);
      d[t.c.m] = rows[i];
      d[t.c.n] = cols[j];
      Value in = arith::AndIOp::create(b, t.loc, rowIn[i], colIn[j]);
      return {lockstep::indicesOf(b, t.loc, map, d), in};
    }

    /// Each output's own value (zero past the ends), or the forwarded
    /// fill's value for all of them.
    SmallVector<Value> load(OpBuilder &b) {
      if (t.c.init)
        return SmallVector<Value>(t.s.tm * t.s.tn, t.c.init);
      Type e = cast<MemRefType>(mem.getType()).getElementType();
      SmallVector<Value> values;
      for (int64_t i = 0; i < t.s.tm; ++i)
        for (int64_t j = 0; j < t.s.tn; j += width) {
          auto [where, in] = place(b, i, j);
          Value v = guardedLoad(b, t.loc, in, groupType(e, width), mem, where);
          values.append(elementsOf(b, t.loc, v));
        }
      return values;
    }

    /// Stores the outputs in range.
    void store(OpBuilder &b, ValueRange accs) {
      for (int64_t i = 0; i < t.s.tm; ++i)
        for (int64_t j = 0; j < t.s.tn; j += width) {
          auto [where, in] = place(b, i, j);
          OpBuilder sb = guarded(b, t.loc, in);
          ValueRange group = accs.slice(i * t.s.tn + j, width);
          Value v = width == 1 ? group.front()
                               : vector::FromElementsOp::create(
                                     sb, t.loc, VectorType::get({width}, group.front().getType()),
                                     group)
                                     .getResult();
          storeAt(sb, t.loc, v, mem, where);
        }
    }
  };
};

} // namespace

void lockstep::buildContractionLaunch(OpBuilder &b, Location loc, const Contraction &c,
                                      ArrayRef<Value> sizes, const TileShape &shape,
                                      Value gridZ) {
  buildContractionGroupLaunch(b, loc, {c}, {SmallVector<Value>(sizes)}, shape, gridZ);
}

void lockstep::buildContractionGroupLaunch(OpBuilder &b, Location loc,
                                           ArrayRef<Contraction> group,
                                           ArrayRef<SmallVector<Value>> sizes,
                                           const TileShape &shape, Value gridZ) {
  SmallVector<Tiler, 1> tilers;
  for (auto [c, s] : llvm::zip_equal(group, sizes))
    tilers.emplace_back(c, s, shape, loc);
  SmallVector<Tiler *> members;
  for (Tiler &t : tilers)
    members.push_back(&t);
  Tiler::build(b, loc, members, gridZ);
}
