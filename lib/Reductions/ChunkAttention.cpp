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
// lockstep.paged_attention (the ragged step) expands the same way, with Sq
// the step's tokens T and a key axis of MB·BS positions (the block tables'
// reach). Keys and values are not operands there: the score and value
// generics read them in their bodies, for token t at key position p (clamped
// to t's own position), from the pools through t's request's block table
// when p is before the request's new tokens, and from the new rows
// otherwise. Keys past t's position are masked with −inf, as `causal` does.
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

Value toIndex(OpBuilder &b, Location l, Value v) {
  return arith::IndexCastOp::create(b, l, b.getIndexType(), v);
}

/// The keys and values of a ragged step: read in generic bodies.
struct PagedSource {
  Value req;       // [T] i64: each token's request
  Value positions; // [T] i64
  Value starts;    // [R+1] i64
  Value tables;    // [R, MB] i32
  Value blockSize; // index
  Value kPool, vPool, kNew, vNew, keyScale;

  /// Element (hk, c) of the key (or value) at position `kp` of token t's
  /// request, or at t's own position when kp is past it.
  Value read(OpBuilder &b, Location l, bool value, Value t, Value hk, Value kp, Value c) {
    auto at = [&](Value tensor, ValueRange idx) {
      return tensor::ExtractOp::create(b, l, tensor, idx).getResult();
    };
    Value r = toIndex(b, l, at(req, {t}));
    Value s0 = toIndex(b, l, at(starts, {r}));
    Value p0 = toIndex(b, l, at(positions, {s0}));
    Value pt = toIndex(b, l, at(positions, {t}));
    Value p = arith::MinUIOp::create(b, l, kp, pt);
    Value inPast = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, p, p0);
    Value zero = arith::ConstantIndexOp::create(b, l, 0);
    // Both reads stay in bounds; the select keeps one.
    Value pp = arith::SelectOp::create(b, l, inPast, p, zero);
    Value blk = toIndex(b, l, at(tables, {r, arith::DivUIOp::create(b, l, pp, blockSize)}));
    Value slot = arith::RemUIOp::create(b, l, pp, blockSize);
    Value fromPool = at(value ? vPool : kPool, {blk, slot, hk, c});
    Value off = arith::SelectOp::create(b, l, inPast, zero, arith::SubIOp::create(b, l, p, p0));
    Value row = arith::AddIOp::create(b, l, s0, off);
    Value fromNew = at(value ? vNew : kNew, {zero, hk, row, c});
    Value x = arith::SelectOp::create(b, l, inPast, fromPool, fromNew);
    if (!value && keyScale) {
      SmallVector<Value> zeros(cast<RankedTensorType>(keyScale.getType()).getRank(), zero);
      x = arith::MulFOp::create(b, l, x, at(keyScale, zeros));
    }
    return x;
  }
};

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
  /// With `paged`, v is null and values are read in the body, at key
  /// position (j·C + k) when chunked, or keyOffset + k.
  Stats stats(Value x, Value v, bool chunked, int64_t width, StringRef role,
              PagedSource *paged = nullptr, OpFoldResult keyOffset = {}) {
    auto xt = cast<RankedTensorType>(x.getType());
    unsigned n = xt.getRank(); // 5, or 6 when chunked
    SmallVector<OpFoldResult> xs = tensor::getMixedSizes(rw, loc, x);
    SmallVector<OpFoldResult> rowSizes(xs.begin(), xs.end() - 1);
    int64_t dv = paged ? cast<RankedTensorType>(paged->vNew.getType()).getShape().back()
                       : cast<RankedTensorType>(v.getType()).getShape().back();
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
    linalg::GenericOp o;
    if (!paged) {
      o = generic(fill(oSizes, cst(rw, loc, 0.0)), {p, v},
                  {map(no, xo), map(no, vo), map(no, oo)}, oIters,
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    return math::FmaOp::create(b, l, a[0], a[1], a[2]);
                  });
    } else {
      Value base = keyOffset ? getValueOrCreateConstantIndexOp(rw, loc, keyOffset) : Value();
      o = generic(fill(oSizes, cst(rw, loc, 0.0)), {p}, {map(no, xo), map(no, oo)}, oIters,
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value kp = linalg::IndexOp::create(b, l, k);
                    if (chunked)
                      kp = arith::AddIOp::create(
                          b, l,
                          arith::MulIOp::create(b, l, linalg::IndexOp::create(b, l, 4),
                                                arith::ConstantIndexOp::create(b, l, width)),
                          kp);
                    else if (base)
                      kp = arith::AddIOp::create(b, l, base, kp);
                    Value val = paged->read(b, l, /*value=*/true, linalg::IndexOp::create(b, l, 3),
                                            linalg::IndexOp::create(b, l, 1), kp,
                                            linalg::IndexOp::create(b, l, e));
                    return math::FmaOp::create(b, l, a[0], val, a[1]);
                  });
    }
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

namespace {

/// The operands of either attention op, as the expansion reads them.
struct AttentionParts {
  Value q, k, v, mask, fill, keyScale, scale;
  bool divides = false, zeroEmpty = false, causal = false;
  PagedSource *paged = nullptr; // with k and v null
  OpFoldResult keyLength;       // paged: MB·BS
  int64_t Hk = 0, Dv = 0;
};

FailureOr<Value> expandAttention(RewriterBase &rw, Operation *op, AttentionParts &P,
                                 int64_t C) {
  Location loc = op->getLoc();
  Value q = P.q, k = P.k, v = P.v;
  PagedSource *paged = P.paged;
  auto qt = cast<RankedTensorType>(q.getType());
  Type elt = qt.getElementType();
  int64_t H = qt.getDimSize(1), Hk = P.Hk, G = H / Hk, D = qt.getDimSize(3), Dv = P.Dv;
  AttentionBuilder B{{rw, loc, elt, op->getContext()}, G};
  OpFoldResult batch = tensor::getMixedSize(rw, loc, q, 0),
               sq = tensor::getMixedSize(rw, loc, q, 2),
               sk = paged ? P.keyLength : tensor::getMixedSize(rw, loc, k, 2);
  auto sz = [&](int64_t c) -> OpFoldResult { return rw.getIndexAttr(c); };

  // k' = key · key_scale (paged: where the key is read).
  if (Value ks = P.keyScale; ks && !paged) {
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
  Value dot;
  if (!paged)
    dot = B.generic(B.fill(xSizes, B.cst(rw, loc, 0.0)), {q5, k},
                    {B.map(6, {0, 1, 2, 3, 5}), B.map(6, {0, 1, 4, 5}), B.map(6, {0, 1, 2, 3, 4})},
                    dIters, [&](OpBuilder &b, Location l, ValueRange a) {
                      return math::FmaOp::create(b, l, a[0], a[1], a[2]);
                    })
              .getResult(0);
  else
    dot = B.generic(B.fill(xSizes, B.cst(rw, loc, 0.0)), {q5},
                    {B.map(6, {0, 1, 2, 3, 5}), B.map(6, {0, 1, 2, 3, 4})}, dIters,
                    [&](OpBuilder &b, Location l, ValueRange a) {
                      Value key = paged->read(b, l, /*value=*/false,
                                              linalg::IndexOp::create(b, l, 3),
                                              linalg::IndexOp::create(b, l, 1),
                                              linalg::IndexOp::create(b, l, 4),
                                              linalg::IndexOp::create(b, l, 5));
                      return math::FmaOp::create(b, l, a[0], key, a[1]);
                    })
              .getResult(0);
  // x: scale, then mask.
  Value x = dot;
  Value mask = P.mask, fill = P.fill, scale = P.scale;
  bool causal = P.causal;
  // Causal: query i is key position i + (Sk - Sq); paged: positions[i].
  Value shift;
  if (causal && !paged)
    shift = arith::SubIOp::create(rw, loc, getValueOrCreateConstantIndexOp(rw, loc, sk),
                                  getValueOrCreateConstantIndexOp(rw, loc, sq));
  if (mask || scale || causal) {
    SmallVector<Value> ins{dot};
    SmallVector<AffineMap> maps{B.map(5, {0, 1, 2, 3, 4})};
    if (paged) {
      ins.push_back(paged->positions);
      maps.push_back(B.map(5, {3}));
    }
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
          e.push_back(getAffineConstantExpr(0, op->getContext()));
          continue;
        }
        static const unsigned loop[4] = {0, 1, 3, 4};
        if (full == 1)
          e.push_back(getAffineDimExpr(1, op->getContext()) * G +
                      getAffineDimExpr(2, op->getContext()));
        else
          e.push_back(getAffineDimExpr(loop[full], op->getContext()));
      }
      ins.push_back(mask);
      maps.push_back(AffineMap::get(5, 0, e, op->getContext()));
      if (fill) {
        ins.push_back(fill);
        maps.push_back(B.scalarMap(5, fill));
      }
    }
    maps.push_back(B.map(5, {0, 1, 2, 3, 4}));
    bool divides = P.divides;
    x = B.generic(tensor::EmptyOp::create(rw, loc, xSizes, elt), ins, maps,
                  SmallVector<Iter>(5, Iter::parallel),
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value s = a[0];
                    unsigned i = paged ? 2 : 1;
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
                      Value last = paged ? toIndex(b, l, a[1])
                                         : arith::AddIOp::create(b, l, qi, shift).getResult();
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
    AttentionBuilder::Stats st = B.stats(x, v, false, *Ls, "whole", paged);
    l = st.s;
    o = st.o;
    lMap = B.map(5, {0, 1, 2, 3}); // l per row
  } else {
    OpFoldResult len = Ls ? OpFoldResult(sk) : OpFoldResult(L);
    ChunkSplit split = splitLength(rw, loc, len, C);
    Value xc = B.chunkAxis(x, 4, sz(0), split.covered, split.whole, C);
    Value vc = paged ? Value() : B.chunkAxis(v, 2, sz(0), split.covered, split.whole, C);
    AttentionBuilder::Stats st = B.stats(xc, vc, true, C, "partial", paged);
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
      Value vtl = paged ? Value() : B.chunkAxis(v, 2, split.covered, tail, {}, 0);
      AttentionBuilder::Stats ts = B.stats(xt, vtl, false, C, "tail", paged, split.covered);
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
  bool zeroEmpty = P.zeroEmpty;
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
             rw, loc, cast<RankedTensorType>(op->getResult(0).getType()), y,
             SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}})
      .getResult();
}

} // namespace

FailureOr<Value> lockstep::chunkAttention(RewriterBase &rw, ls::AttentionOp op, int64_t C) {
  AttentionParts P;
  P.q = op.getQuery();
  P.k = op.getKey();
  P.v = op.getValue();
  P.mask = op.getMask();
  P.fill = op.getFill();
  P.keyScale = op.getKeyScale();
  P.scale = op.getScale();
  P.divides = op.getScaleDivides();
  P.zeroEmpty = op.getZeroEmptyRows();
  P.causal = op.getCausal();
  P.Hk = op.getKey().getType().getDimSize(1);
  P.Dv = op.getValue().getType().getDimSize(3);
  return expandAttention(rw, op, P, C);
}

FailureOr<Value> lockstep::chunkPagedAttention(RewriterBase &rw, ls::PagedAttentionOp op,
                                               int64_t C) {
  Location loc = op.getLoc();
  PagedSource src;
  src.positions = op.getPositions();
  src.starts = op.getSeqStarts();
  src.tables = op.getBlockTables();
  src.kPool = op.getKeyPool();
  src.vPool = op.getValuePool();
  src.kNew = op.getKey();
  src.vNew = op.getValue();
  src.keyScale = op.getKeyScale();
  // Each token's request: the number of requests that start at or before
  // it, less one (an exact integer count).
  OpFoldResult T = tensor::getMixedSize(rw, loc, op.getQuery(), 2);
  Type i64 = rw.getI64Type();
  Value init = linalg::FillOp::create(
                   rw, loc, arith::ConstantOp::create(rw, loc, i64, rw.getI64IntegerAttr(-1)).getResult(),
                   tensor::EmptyOp::create(rw, loc, ArrayRef<OpFoldResult>{T}, i64).getResult())
                   .getResult(0);
  MLIRContext *ctx = op.getContext();
  AffineMap byR = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx),
            byT = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  src.req = linalg::GenericOp::create(
                rw, loc, init.getType(), ValueRange{src.starts}, ValueRange{init},
                SmallVector<AffineMap>{byR, byT},
                SmallVector<Iter>{Iter::parallel, Iter::reduction},
                [&](OpBuilder &b, Location l, ValueRange a) {
                  Value t = arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                       linalg::IndexOp::create(b, l, 0));
                  Value in = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, a[0], t);
                  Value one = arith::ExtUIOp::create(b, l, b.getI64Type(), in);
                  linalg::YieldOp::create(b, l, ValueRange{arith::AddIOp::create(b, l, a[1], one)});
                })
                .getResult(0);
  OpFoldResult bs = tensor::getMixedSize(rw, loc, src.kPool, 1),
               mb = tensor::getMixedSize(rw, loc, src.tables, 1);
  src.blockSize = getValueOrCreateConstantIndexOp(rw, loc, bs);
  AttentionParts P;
  P.q = op.getQuery();
  P.keyScale = op.getKeyScale();
  P.scale = op.getScale();
  P.divides = op.getScaleDivides();
  P.zeroEmpty = op.getZeroEmptyRows();
  P.causal = true;
  P.paged = &src;
  P.Hk = op.getKey().getType().getDimSize(1);
  P.Dv = op.getValue().getType().getDimSize(3);
  std::optional<int64_t> bsc = getConstantIntValue(bs), mbc = getConstantIntValue(mb);
  if (bsc && mbc)
    P.keyLength = rw.getIndexAttr(*bsc * *mbc);
  else
    P.keyLength = arith::MulIOp::create(rw, loc, getValueOrCreateConstantIndexOp(rw, loc, mb),
                                        src.blockSize)
                      .getResult();
  return expandAttention(rw, op, P, C);
}
