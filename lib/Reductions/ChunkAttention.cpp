//===- ChunkAttention.cpp - lockstep.attention in the canonical form ------===//
//
// Expands lockstep.attention into linalg by the contract (see the op's
// description). Heads are split as [Hk, G] so that query head hk·G + g reads
// key head hk through plain indexing maps, and the result is collapsed back
// to [B, H, Sq, Dv]:
//
//   dot[b,hk,g,i,k]   = Σ_d fma(q[b,hk·G+g,i,d], k'[b,hk,k,d])   (unmarked:
//                       the pass chunks it like any contraction)
//   x[b,hk,g,i,k]     = scale and mask applied to dot
//   per chunk j of k (width C, from key 0):
//     m_j  = max x,   s_j = Σ exp(x − m_j),   o_j[e] = Σ fma(exp(x − m_j), v[e], ·)
//   merged over j left to right into (m, l, o), then y = o / l.
//
// When Sk is static and at most C the statistics are taken whole; otherwise
// the first floor(Sk/C) chunks are partials over an expand_shape of x and v
// (sliced, never copied), merged by a combine over j, and a tail covers the
// rest. The running max and sum are carried per output element e as well, so
// that one combine generic merges (m, l, o) together.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/Reductions/Chunking.h"
#include "ChunkStats.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace lockstep;

namespace {

using Iter = utils::IteratorType;

struct AttentionBuilder : StatsBuilder {
  int64_t groups;

  /// A map over `n` dims whose results are the dims `pos` (-1: constant 0).
  AffineMap map(unsigned n, ArrayRef<int> pos) {
    SmallVector<AffineExpr> e;
    for (int p : pos)
      e.push_back(p < 0 ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(p, ctx));
    return AffineMap::get(n, 0, e, ctx);
  }
  /// A single element read at every point: all results constant 0.
  AffineMap scalarMap(unsigned n, Value s) {
    SmallVector<int> pos(cast<RankedTensorType>(s.getType()).getRank(), -1);
    return map(n, pos);
  }
  linalg::GenericOp generic(Value init, ValueRange ins, ArrayRef<AffineMap> maps,
                            ArrayRef<Iter> iters,
                            function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
        rw, loc, init.getType(), ins, ValueRange{init}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          linalg::YieldOp::create(b, l, ValueRange{body(b, l, a)});
        });
  }
  void mark(Operation *op, int64_t width, StringRef role) {
    op->setAttr(kChunkWidthAttr, rw.getI64IntegerAttr(width));
    op->setAttr(kChunkRoleAttr, rw.getStringAttr(role));
  }

  struct Stats {
    Value m, s, o;
  };
  /// The statistics of x [B,Hk,G,Sq,(N,)K] over its last dim K with values
  /// v [B,Hk,(N,)K,Dv]: m, s [B,Hk,G,Sq(,N)] and o [B,Hk,G,Sq,(N,)Dv].
  /// `chunked` when x and v carry the chunk dim N.
  Stats stats(Value x, Value v, bool chunked, int64_t width, StringRef role) {
    auto xt = cast<RankedTensorType>(x.getType());
    unsigned n = xt.getRank(); // 5, or 6 when chunked
    SmallVector<OpFoldResult> xs = tensor::getMixedSizes(rw, loc, x);
    SmallVector<OpFoldResult> rowSizes(xs.begin(), xs.end() - 1);
    int64_t dv = cast<RankedTensorType>(v.getType()).getShape().back();
    // m and s over (rows.., k).
    SmallVector<int> rows;
    for (unsigned d = 0; d + 1 < n; ++d)
      rows.push_back(d);
    SmallVector<int> all = rows;
    all.push_back(n - 1);
    SmallVector<Iter> iters(n, Iter::parallel);
    iters.back() = Iter::reduction;
    Value m = generic(fill(rowSizes, negInf(rw, loc)), {x}, {map(n, all), map(n, rows)},
                      iters, [&](OpBuilder &b, Location l, ValueRange a) {
                        return arith::MaximumFOp::create(b, l, a[1], a[0]);
                      })
                  .getResult(0);
    // p = exp(x - m_j), once per score (not once per value column).
    Value p = generic(tensor::EmptyOp::create(rw, loc, xs, elt), {x, m},
                      {map(n, all), map(n, rows), map(n, all)},
                      SmallVector<Iter>(n, Iter::parallel),
                      [&](OpBuilder &b, Location l, ValueRange a) {
                        return shiftedExp(b, l, a[0], a[1]);
                      })
                  .getResult(0);
    auto s = generic(fill(rowSizes, cst(rw, loc, 0.0)), {p}, {map(n, all), map(n, rows)},
                     iters, [&](OpBuilder &b, Location l, ValueRange a) {
                       return arith::AddFOp::create(b, l, a[1], a[0]);
                     });
    mark(s, width, role);
    // o over (rows.., e, k): one more parallel dim e before k.
    unsigned no = n + 1, e = n - 1, k = n;
    SmallVector<int> xo = rows, oo = rows, vo = {0, 1};
    xo.push_back(k);
    oo.push_back(e);
    if (chunked)
      vo.push_back(4); // j
    vo.append({(int)k, (int)e});
    SmallVector<OpFoldResult> oSizes = rowSizes;
    oSizes.push_back(rw.getIndexAttr(dv));
    SmallVector<Iter> oIters(no, Iter::parallel);
    oIters.back() = Iter::reduction;
    auto o = generic(fill(oSizes, cst(rw, loc, 0.0)), {p, v},
                     {map(no, xo), map(no, vo), map(no, oo)}, oIters,
                     [&](OpBuilder &b, Location l, ValueRange a) {
                       return math::FmaOp::create(b, l, a[0], a[1], a[2]);
                     });
    mark(o, width, role);
    return {m, s.getResult(0), o.getResult(0)};
  }

  /// Slices `t` along `axis` to [off, off + len) and, when `width` > 0,
  /// expands that axis into [len / width, width].
  Value chunkAxis(Value t, unsigned axis, OpFoldResult off, OpFoldResult len,
                  OpFoldResult count, int64_t width) {
    auto tt = cast<RankedTensorType>(t.getType());
    unsigned n = tt.getRank();
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rw, loc, t);
    SmallVector<OpFoldResult> offs(n, rw.getIndexAttr(0)), ones(n, rw.getIndexAttr(1));
    offs[axis] = off;
    sizes[axis] = len;
    Value s = tensor::ExtractSliceOp::create(rw, loc, t, offs, sizes, ones);
    if (width == 0)
      return s;
    return expandChunks(rw, loc, s, sizes, axis, count, width);
  }
};

} // namespace

FailureOr<Value> lockstep::chunkAttention(RewriterBase &rw, ls::AttentionOp op,
                                          int64_t C) {
  Location loc = op.getLoc();
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  auto qt = cast<RankedTensorType>(q.getType()), kt = cast<RankedTensorType>(k.getType()),
       vt = cast<RankedTensorType>(v.getType());
  Type elt = qt.getElementType();
  int64_t H = qt.getDimSize(1), Hk = kt.getDimSize(1), G = H / Hk, D = qt.getDimSize(3),
          Dv = vt.getDimSize(3);
  AttentionBuilder B{{rw, loc, elt, op.getContext()}, G};
  OpFoldResult batch = tensor::getMixedSize(rw, loc, q, 0),
               sq = tensor::getMixedSize(rw, loc, q, 2),
               sk = tensor::getMixedSize(rw, loc, k, 2);
  auto sz = [&](int64_t c) -> OpFoldResult { return rw.getIndexAttr(c); };

  // k' = key · key_scale.
  if (Value ks = op.getKeyScale()) {
    SmallVector<Iter> it(4, Iter::parallel);
    k = B.generic(tensor::EmptyOp::create(rw, loc, tensor::getMixedSizes(rw, loc, k), elt),
                  {k, ks}, {B.map(4, {0, 1, 2, 3}), B.scalarMap(4, ks), B.map(4, {0, 1, 2, 3})},
                  it, [&](OpBuilder &b, Location l, ValueRange a) {
                    return arith::MulFOp::create(b, l, a[0], a[1]);
                  })
            .getResult(0);
  }
  // Query heads as [Hk, G].
  auto q5t = RankedTensorType::get({qt.getDimSize(0), Hk, G, qt.getDimSize(2), D}, elt);
  Value q5 = tensor::ExpandShapeOp::create(
      rw, loc, q5t, q, SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}},
      SmallVector<OpFoldResult>{batch, sz(Hk), sz(G), sq, sz(D)});
  // dot over (b, hk, g, i, k, d).
  SmallVector<OpFoldResult> xSizes{batch, sz(Hk), sz(G), sq, sk};
  SmallVector<Iter> dIters(6, Iter::parallel);
  dIters.back() = Iter::reduction;
  Value dot = B.generic(B.fill(xSizes, B.cst(rw, loc, 0.0)), {q5, k},
                        {B.map(6, {0, 1, 2, 3, 5}), B.map(6, {0, 1, 4, 5}),
                         B.map(6, {0, 1, 2, 3, 4})},
                        dIters, [&](OpBuilder &b, Location l, ValueRange a) {
                          return math::FmaOp::create(b, l, a[0], a[1], a[2]);
                        })
                  .getResult(0);
  // x: scale, then mask.
  Value x = dot;
  Value mask = op.getMask(), fill = op.getFill(), scale = op.getScale();
  bool causal = op.getCausal();
  // Causal: query i is key position i + (Sk - Sq).
  Value shift;
  if (causal)
    shift = arith::SubIOp::create(rw, loc, getValueOrCreateConstantIndexOp(rw, loc, sk),
                                  getValueOrCreateConstantIndexOp(rw, loc, sq));
  if (mask || scale || causal) {
    SmallVector<Value> ins{dot};
    SmallVector<AffineMap> maps{B.map(5, {0, 1, 2, 3, 4})};
    if (scale) {
      ins.push_back(scale);
      maps.push_back(B.scalarMap(5, scale));
    }
    if (mask) {
      // Right-aligned numpy broadcast of the mask to [B, H, Sq, Sk]; its head
      // dim, when not 1, is read at hk·G + g.
      auto mt = cast<RankedTensorType>(mask.getType());
      unsigned r = mt.getRank();
      SmallVector<AffineExpr> e;
      for (unsigned a = 0; a < r; ++a) {
        unsigned full = a + (4 - r); // position in [B, H, Sq, Sk]
        if (mt.getDimSize(a) == 1) {
          e.push_back(getAffineConstantExpr(0, op.getContext()));
          continue;
        }
        static const unsigned loop[4] = {0, 1, 3, 4};
        if (full == 1)
          e.push_back(getAffineDimExpr(1, op.getContext()) * G +
                      getAffineDimExpr(2, op.getContext()));
        else
          e.push_back(getAffineDimExpr(loop[full], op.getContext()));
      }
      ins.push_back(mask);
      maps.push_back(AffineMap::get(5, 0, e, op.getContext()));
      if (fill) {
        ins.push_back(fill);
        maps.push_back(B.scalarMap(5, fill));
      }
    }
    maps.push_back(B.map(5, {0, 1, 2, 3, 4}));
    bool divides = op.getScaleDivides();
    x = B.generic(tensor::EmptyOp::create(rw, loc, xSizes, elt), ins, maps,
                  SmallVector<Iter>(5, Iter::parallel),
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value s = a[0];
                    unsigned i = 1;
                    if (scale) {
                      s = divides ? arith::DivFOp::create(b, l, s, a[i]).getResult()
                                  : arith::MulFOp::create(b, l, s, a[i]).getResult();
                      ++i;
                    }
                    if (mask) {
                      if (fill)
                        s = arith::SelectOp::create(b, l, a[i], s, a[i + 1]);
                      else
                        s = arith::AddFOp::create(b, l, s, a[i]);
                    }
                    if (causal) {
                      Value qi = linalg::IndexOp::create(b, l, 3);
                      Value ki = linalg::IndexOp::create(b, l, 4);
                      Value last = arith::AddIOp::create(b, l, qi, shift);
                      Value keep = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ule, ki, last);
                      s = arith::SelectOp::create(b, l, keep, s, B.negInf(b, l));
                    }
                    return s;
                  })
            .getResult(0);
  }

  // The statistics over k, chunked from key 0.
  Value L = tensor::DimOp::create(rw, loc, x, 4); // the verifier traces counts to it
  std::optional<int64_t> Ls = getConstantIntValue(sk);
  SmallVector<OpFoldResult> oSizes{batch, sz(Hk), sz(G), sq, sz(Dv)};
  Value l, o;
  AffineMap lMap = B.map(5, {0, 1, 2, 3, 4}); // l per output element
  if (Ls && *Ls <= C) {
    AttentionBuilder::Stats st = B.stats(x, v, false, *Ls, "whole");
    l = st.s;
    o = st.o;
    lMap = B.map(5, {0, 1, 2, 3}); // l per row
  } else {
    OpFoldResult len = Ls ? OpFoldResult(sk) : OpFoldResult(L);
    ChunkSplit split = splitLength(rw, loc, len, C);
    Value xc = B.chunkAxis(x, 4, sz(0), split.covered, split.whole, C);
    Value vc = B.chunkAxis(v, 2, sz(0), split.covered, split.whole, C);
    AttentionBuilder::Stats st = B.stats(xc, vc, true, C, "partial");
    // Merge over j (dim 5 of (b, hk, g, i, e, j)), left to right.
    SmallVector<Iter> it(6, Iter::parallel);
    it.back() = Iter::reduction;
    AffineMap stat = B.map(6, {0, 1, 2, 3, 5}), out = B.map(6, {0, 1, 2, 3, 4}),
              oj = B.map(6, {0, 1, 2, 3, 5, 4});
    Value mInit = B.fill(oSizes, B.negInf(rw, loc)), lInit = B.fill(oSizes, B.cst(rw, loc, 0.0)),
          oInit = B.fill(oSizes, B.cst(rw, loc, 0.0));
    auto merged = linalg::GenericOp::create(
        rw, loc, TypeRange{mInit.getType(), lInit.getType(), oInit.getType()},
        ValueRange{st.m, st.s, st.o}, ValueRange{mInit, lInit, oInit},
        SmallVector<AffineMap>{stat, stat, oj, out, out, out}, it,
        [&](OpBuilder &b, Location bl, ValueRange a) {
          StatsBuilder::Weights w = B.weights(b, bl, a[3], a[0]);
          linalg::YieldOp::create(b, bl,
                                  ValueRange{w.max, B.blend(b, bl, a[4], w.alpha, a[1], w.beta),
                                             B.blend(b, bl, a[5], w.alpha, a[2], w.beta)});
        });
    B.mark(merged, C, "combine");
    Value m = merged.getResult(0);
    l = merged.getResult(1);
    o = merged.getResult(2);
    if (!split.divisible) {
      OpFoldResult tail = split.tail(rw, loc, len);
      Value xt = B.chunkAxis(x, 4, split.covered, tail, {}, 0);
      Value vtl = B.chunkAxis(v, 2, split.covered, tail, {}, 0);
      AttentionBuilder::Stats ts = B.stats(xt, vtl, false, C, "tail");
      AffineMap rows = B.map(5, {0, 1, 2, 3}), id = B.map(5, {0, 1, 2, 3, 4});
      auto fin = linalg::GenericOp::create(
          rw, loc, TypeRange{m.getType(), l.getType(), o.getType()},
          ValueRange{ts.m, ts.s, ts.o}, ValueRange{m, l, o},
          SmallVector<AffineMap>{rows, rows, id, id, id, id},
          SmallVector<Iter>(5, Iter::parallel),
          [&](OpBuilder &b, Location bl, ValueRange a) {
            StatsBuilder::Weights w = B.weights(b, bl, a[3], a[0]);
            linalg::YieldOp::create(
                b, bl,
                ValueRange{w.max, B.blend(b, bl, a[4], w.alpha, a[1], w.beta),
                           B.blend(b, bl, a[5], w.alpha, a[2], w.beta)});
          });
      m = fin.getResult(0);
      l = fin.getResult(1);
      o = fin.getResult(2);
    }
  }
  // y = o / l (0 for an empty row when asked), as [B, H, Sq, Dv].
  bool zeroEmpty = op.getZeroEmptyRows();
  AffineMap id = B.map(5, {0, 1, 2, 3, 4});
  Value y = B.generic(tensor::EmptyOp::create(rw, loc, oSizes, elt), {o, l}, {id, lMap, id},
                      SmallVector<Iter>(5, Iter::parallel),
                      [&](OpBuilder &b, Location bl, ValueRange a) {
                        Value r = arith::DivFOp::create(b, bl, a[0], a[1]);
                        if (!zeroEmpty)
                          return r;
                        Value z = B.cst(b, bl, 0.0);
                        Value empty = arith::CmpFOp::create(b, bl, arith::CmpFPredicate::OEQ,
                                                            a[1], z);
                        return arith::SelectOp::create(b, bl, empty, z, r).getResult();
                      })
                .getResult(0);
  return tensor::CollapseShapeOp::create(
             rw, loc, cast<RankedTensorType>(op.getOutput().getType()), y,
             SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}})
      .getResult();
}
