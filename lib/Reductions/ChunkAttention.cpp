//===- ChunkAttention.cpp - lockstep.attention in the canonical form ------===//
//
// Expands lockstep.attention into linalg by the contract (see the op's
// description). Heads are split as [Hk, G] so that query head hk·G + g reads
// key head hk through plain indexing maps, and the result is collapsed back
// to [B, H, Sq, Dv]:
//
//   dot[b,hk,g,i,k]   = Σ_d fma(q[b,hk·G+g,i,d], k'[b,hk,k,d])   (unmarked:
//                       the pass chunks it like any contraction)
//   x[b,hk,g,i,k]     = scale, softcap and mask (the graph's operand, or the
//                       proven causal kind: keys past the query's position,
//                       and with a window W keys at or before position − W,
//                       are −inf) applied to dot
//   per chunk j of k (width C, from key 0):
//     m_j  = max x,   s_j = Σ exp(x − m_j),   o_j[e] = Σ fma(exp(x − m_j), v[e], ·)
//   merged over j left to right into (m, l, o), then y = o / l.
//
// When Sk is static and at most C the statistics are taken whole; otherwise
// the first floor(Sk/C) chunks are partials over an expand_shape of x and v
// (sliced, never copied), merged by a combine over j, and a tail covers the
// rest. The merge is split by what it depends on: a combine over the rows
// (b, hk, g, i, j) folds (m, l) and writes each chunk's weights
// α_j = exp(m' − m) and β_j = exp(m_j − m) (m' the running max before chunk
// j, m after); a combine over (b, hk, g, i, e, j) folds o = o·α_j + o_j[e]·β_j
// with them. The tail's merge step is split the same way. So the exps are
// taken once a row and chunk, not once a value column, and every value is
// the same ops on the same operands as a merge of (m, l, o) per output
// element would compute.
//
// lockstep.paged_attention (the ragged step) expands the same way, with Sq
// the step's tokens T and a key axis of L = MB·BS positions (the block
// tables' reach). First the new rows are written into the pools at their
// tokens' slots (an scf.for of insert_slice, which bufferization turns into
// stores into the pool arguments themselves), so that every key is a pool
// row; then `rows` [T, L] gives, for token t and key position k, the pool
// row of position min(k, positions[t]) of t's request, through its block
// table. The score and value generics take `rows` as an operand (sliced and
// chunked like the values of lockstep.attention) and read the pools at
// those rows in their bodies. Keys past t's position (and outside its
// window) are masked with −inf, as `causal` does.
//
// A chunk whose keys are all masked has m_j = −inf, and the merge then
// keeps (m, l, o) as they were, by a select: an exact no-op, −0.0 included.
// So the padded key axis (MB·BS changes with the batch) and the chunks
// before a window cannot change a bit.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/Reductions/Chunking.h"
#include "lockstep/Reductions/ChunkStats.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace lockstep;

namespace {

using Iter = utils::IteratorType;

Value toIndex(OpBuilder &b, Location l, Value v) {
  return arith::IndexCastOp::create(b, l, b.getIndexType(), v);
}

/// The keys and values of a ragged step: the pools, flattened to
/// [blocks · block_size, Hk, D], with the step's new rows already written
/// into them, and `rows` [T, L] (i64): the pool row of key position k of
/// token t's request (k clamped to t's own position). Read in generic
/// bodies at the row that `rows` gives through an indexing map.
struct PagedSource {
  Value rows, kFlat, vFlat, keyScale;
  int64_t dv = 0;

  Value read(OpBuilder &b, Location l, bool value, Value row, Value hk, Value c) {
    Value zero = arith::ConstantIndexOp::create(b, l, 0);
    Value x = tensor::ExtractOp::create(b, l, value ? vFlat : kFlat,
                                        ValueRange{toIndex(b, l, row), hk, c});
    if (!value && keyScale) {
      SmallVector<Value> zeros(cast<RankedTensorType>(keyScale.getType()).getRank(), zero);
      x = arith::MulFOp::create(b, l, x, tensor::ExtractOp::create(b, l, keyScale, zeros));
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
  /// With `paged`, v is the pool rows [T, (N,) K] and values are read from
  /// the value pool at those rows.
  Stats stats(Value x, Value v, bool chunked, int64_t width, StringRef role,
              PagedSource *paged = nullptr) {
    auto xt = cast<RankedTensorType>(x.getType());
    unsigned n = xt.getRank(); // 5, or 6 when chunked
    SmallVector<OpFoldResult> xs = tensor::getMixedSizes(rw, loc, x);
    SmallVector<OpFoldResult> rowSizes(xs.begin(), xs.end() - 1);
    int64_t dv = paged ? paged->dv : cast<RankedTensorType>(v.getType()).getShape().back();
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
      // v is the rows operand, [T, (N,) K]: indexed by (i, (j,) k).
      SmallVector<int> ro = {3};
      if (chunked)
        ro.push_back(4);
      ro.push_back((int)k);
      o = generic(fill(oSizes, cst(rw, loc, 0.0)), {p, v},
                  {map(no, xo), map(no, ro), map(no, oo)}, oIters,
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value val = paged->read(b, l, /*value=*/true, a[1],
                                            linalg::IndexOp::create(b, l, 1),
                                            linalg::IndexOp::create(b, l, e));
                    return math::FmaOp::create(b, l, a[0], val, a[2]);
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
  int64_t window = 0;             // causal: keep the last `window` keys (0: all)
  std::optional<double> softcap;  // s = tanh(s / c) * c
  PagedSource *paged = nullptr; // with k and v null
  Value positions;              // paged: [T] i64
  OpFoldResult keyLength;       // paged: MB·BS
  int64_t Hk = 0, Dv = 0;
  bool plantNoSkip = false;     // a planted violation (see ChunkStats.h)
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
  B.skipMasked = !P.plantNoSkip;
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
    dot = B.generic(B.fill(xSizes, B.cst(rw, loc, 0.0)), {q5, paged->rows},
                    {B.map(6, {0, 1, 2, 3, 5}), B.map(6, {3, 4}), B.map(6, {0, 1, 2, 3, 4})},
                    dIters, [&](OpBuilder &b, Location l, ValueRange a) {
                      Value key = paged->read(b, l, /*value=*/false, a[1],
                                              linalg::IndexOp::create(b, l, 1),
                                              linalg::IndexOp::create(b, l, 5));
                      return math::FmaOp::create(b, l, a[0], key, a[2]);
                    })
              .getResult(0);
  // x: scale, then mask.
  Value x = dot;
  Value mask = P.mask, fill = P.fill, scale = P.scale;
  bool causal = P.causal;
  int64_t window = P.window;
  std::optional<double> softcap = P.softcap;
  // Causal: query i is key position i + (Sk - Sq); paged: positions[i].
  Value shift;
  if (causal && !paged)
    shift = arith::SubIOp::create(rw, loc, getValueOrCreateConstantIndexOp(rw, loc, sk),
                                  getValueOrCreateConstantIndexOp(rw, loc, sq));
  if (mask || scale || causal || softcap) {
    SmallVector<Value> ins{dot};
    SmallVector<AffineMap> maps{B.map(5, {0, 1, 2, 3, 4})};
    if (paged) {
      ins.push_back(P.positions);
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
                    unsigned i = paged ? 2 : 1;
                    Value s = B.scaledScore(b, l, a[0], scale ? a[i] : Value(), divides,
                                            softcap);
                    if (scale)
                      ++i;
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
                      Value keep = B.keepKey(b, l, ki, last, window);
                      s = arith::SelectOp::create(b, l, keep, s, B.negInf(b, l));
                    }
                    return s;
                  })
            .getResult(0);
  }

  // The statistics over k, chunked from key 0.
  Value L = tensor::DimOp::create(rw, loc, x, 4); // the verifier traces counts to it
  std::optional<int64_t> Ls = getConstantIntValue(sk);
  SmallVector<OpFoldResult> rowSizes{batch, sz(Hk), sz(G), sq};
  SmallVector<OpFoldResult> oSizes{batch, sz(Hk), sz(G), sq, sz(Dv)};
  Value l, o; // l per row, o per output element
  if (Ls && *Ls <= C) {
    AttentionBuilder::Stats st = B.stats(x, paged ? paged->rows : v, false, *Ls, "whole", paged);
    l = st.s;
    o = st.o;
  } else {
    OpFoldResult len = Ls ? OpFoldResult(sk) : OpFoldResult(L);
    ChunkSplit split = splitLength(rw, loc, len, C);
    Value xc = B.chunkAxis(x, 4, sz(0), split.covered, split.whole, C);
    Value vc = paged ? B.chunkAxis(paged->rows, 1, sz(0), split.covered, split.whole, C)
                     : B.chunkAxis(v, 2, sz(0), split.covered, split.whole, C);
    AttentionBuilder::Stats st = B.stats(xc, vc, true, C, "partial", paged);
    // The merge over j, left to right, in two combines, so that the weights
    // are computed once a row, not once a value column: one over
    // (b, hk, g, i, j) folds (m, l) and writes each chunk's α_j and β_j, one
    // over (b, hk, g, i, e, j) folds o with them. Each value is still the
    // merge step's (ChunkStats.h) on the same operands, so no bit changes.
    AffineMap chunk = B.map(5, {0, 1, 2, 3, 4}), row = B.map(5, {0, 1, 2, 3});
    SmallVector<Iter> rowIt(5, Iter::parallel);
    rowIt.back() = Iter::reduction;
    SmallVector<OpFoldResult> wSizes = tensor::getMixedSizes(rw, loc, st.m);
    Value mInit = B.fill(rowSizes, B.negInf(rw, loc)),
          lInit = B.fill(rowSizes, B.cst(rw, loc, 0.0)),
          aInit = tensor::EmptyOp::create(rw, loc, wSizes, elt),
          bInit = tensor::EmptyOp::create(rw, loc, wSizes, elt);
    auto rowMerge = linalg::GenericOp::create(
        rw, loc, TypeRange{mInit.getType(), lInit.getType(), aInit.getType(), bInit.getType()},
        ValueRange{st.m, st.s}, ValueRange{mInit, lInit, aInit, bInit},
        SmallVector<AffineMap>{chunk, chunk, row, row, chunk, chunk}, rowIt,
        [&](OpBuilder &b, Location bl, ValueRange a) {
          StatsBuilder::RowMerge r = B.mergeRow(b, bl, a[2], a[3], a[0], a[1]);
          linalg::YieldOp::create(b, bl, ValueRange{r.max, r.l, r.alpha, r.beta});
        });
    B.mark(rowMerge, C, "combine");
    Value m = rowMerge.getResult(0), alpha = rowMerge.getResult(2),
          beta = rowMerge.getResult(3);
    l = rowMerge.getResult(1);
    SmallVector<Iter> it(6, Iter::parallel);
    it.back() = Iter::reduction;
    AffineMap stat = B.map(6, {0, 1, 2, 3, 5}), out = B.map(6, {0, 1, 2, 3, 4}),
              oj = B.map(6, {0, 1, 2, 3, 5, 4});
    auto colMerge = B.generic(B.fill(oSizes, B.cst(rw, loc, 0.0)), {alpha, beta, st.m, st.o},
                              {stat, stat, stat, oj, out}, it,
                              [&](OpBuilder &b, Location bl, ValueRange a) {
                                return B.mergeColumn(b, bl, a[4], a[0], a[3], a[1], a[2]);
                              });
    B.mark(colMerge, C, "combine");
    o = colMerge.getResult(0);
    if (!split.divisible) {
      OpFoldResult tail = split.tail(rw, loc, len);
      Value xt = B.chunkAxis(x, 4, split.covered, tail, {}, 0);
      Value vtl = paged ? B.chunkAxis(paged->rows, 1, split.covered, tail, {}, 0)
                        : B.chunkAxis(v, 2, split.covered, tail, {}, 0);
      AttentionBuilder::Stats ts = B.stats(xt, vtl, false, C, "tail", paged);
      // The last merge step, split the same way: its weights once a row.
      SmallVector<OpFoldResult> tSizes = tensor::getMixedSizes(rw, loc, ts.m);
      Value ta = tensor::EmptyOp::create(rw, loc, tSizes, elt),
            tb = tensor::EmptyOp::create(rw, loc, tSizes, elt);
      AffineMap row4 = B.map(4, {0, 1, 2, 3});
      auto rowFin = linalg::GenericOp::create(
          rw, loc, TypeRange{l.getType(), ta.getType(), tb.getType()}, ValueRange{ts.m, ts.s, m},
          ValueRange{l, ta, tb}, SmallVector<AffineMap>(6, row4),
          SmallVector<Iter>(4, Iter::parallel),
          [&](OpBuilder &b, Location bl, ValueRange a) {
            StatsBuilder::RowMerge r = B.mergeRow(b, bl, a[2], a[3], a[0], a[1]);
            linalg::YieldOp::create(b, bl, ValueRange{r.l, r.alpha, r.beta});
          });
      l = rowFin.getResult(0);
      AffineMap rows = B.map(5, {0, 1, 2, 3}), id = B.map(5, {0, 1, 2, 3, 4});
      o = B.generic(o, {rowFin.getResult(1), rowFin.getResult(2), ts.m, ts.o},
                    {rows, rows, rows, id, id}, SmallVector<Iter>(5, Iter::parallel),
                    [&](OpBuilder &b, Location bl, ValueRange a) {
                      return B.mergeColumn(b, bl, a[4], a[0], a[3], a[1], a[2]);
                    })
              .getResult(0);
    }
  }
  // y = o / l (0 for an empty row when asked), as [B, H, Sq, Dv].
  bool zeroEmpty = P.zeroEmpty;
  AffineMap id = B.map(5, {0, 1, 2, 3, 4});
  Value y = B.generic(tensor::EmptyOp::create(rw, loc, oSizes, elt), {o, l},
                      {id, B.map(5, {0, 1, 2, 3}), id},
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
  P.window = (int64_t)op.getWindow().value_or(0);
  if (auto c = op.getSoftcap())
    P.softcap = c->convertToDouble();
  P.Hk = op.getKey().getType().getDimSize(1);
  P.Dv = op.getValue().getType().getDimSize(3);
  return expandAttention(rw, op, P, C);
}

namespace {

/// Writes the T new rows of `fresh` [1, Hk, T, D] into `pool` [NB, BS, Hk, D]
/// at each token's slot (its request's block table at its position). After
/// bufferization this writes the function's pool argument in place.
Value writeRows(RewriterBase &rw, Location loc, Value pool, Value fresh, Value req,
                Value positions, Value tables, Value bs) {
  auto ft = cast<RankedTensorType>(fresh.getType());
  int64_t Hk = ft.getDimSize(1), D = ft.getDimSize(3);
  Value zero = arith::ConstantIndexOp::create(rw, loc, 0),
        one = arith::ConstantIndexOp::create(rw, loc, 1);
  Value T = tensor::DimOp::create(rw, loc, fresh, 2);
  auto loop = scf::ForOp::create(
      rw, loc, zero, T, one, ValueRange{pool},
      [&](OpBuilder &b, Location l, Value t, ValueRange acc) {
        Value r = toIndex(b, l, tensor::ExtractOp::create(b, l, req, ValueRange{t}));
        Value p = toIndex(b, l, tensor::ExtractOp::create(b, l, positions, ValueRange{t}));
        Value blk = toIndex(b, l, tensor::ExtractOp::create(
                                      b, l, tables,
                                      ValueRange{r, arith::DivUIOp::create(b, l, p, bs)}));
        Value slot = arith::RemUIOp::create(b, l, p, bs);
        auto rowType = RankedTensorType::get({Hk, D}, ft.getElementType());
        auto i = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
        Value row = tensor::ExtractSliceOp::create(
            b, l, rowType, fresh, SmallVector<OpFoldResult>{i(0), i(0), t, i(0)},
            SmallVector<OpFoldResult>{i(1), i(Hk), i(1), i(D)},
            SmallVector<OpFoldResult>{i(1), i(1), i(1), i(1)});
        Value next = tensor::InsertSliceOp::create(
            b, l, row, acc[0], SmallVector<OpFoldResult>{blk, slot, i(0), i(0)},
            SmallVector<OpFoldResult>{i(1), i(1), i(Hk), i(D)},
            SmallVector<OpFoldResult>{i(1), i(1), i(1), i(1)});
        scf::YieldOp::create(b, l, next);
      });
  // Distinct tokens have distinct (request, position) pairs, so distinct
  // slots: no two iterations write the same element.
  loop->setAttr(kDisjointIterationsAttr, rw.getUnitAttr());
  return loop.getResult(0);
}

} // namespace

lockstep::PagedWrites lockstep::writePagedRows(RewriterBase &rw, ls::PagedAttentionOp op,
                                               Value request) {
  Location loc = op.getLoc();
  Value positions = op.getPositions(), starts = op.getSeqStarts(),
        tables = op.getBlockTables();
  Value bs = getValueOrCreateConstantIndexOp(rw, loc,
                                             tensor::getMixedSize(rw, loc, op.getKeyPool(), 1));
  if (request) {
    PagedWrites w;
    w.request = request;
    w.keyPool = writeRows(rw, loc, op.getKeyPool(), op.getKey(), request, positions, tables, bs);
    w.valuePool =
        writeRows(rw, loc, op.getValuePool(), op.getValue(), request, positions, tables, bs);
    return w;
  }
  // Each token's request: the number of requests that start at or before
  // it, less one (an exact integer count).
  OpFoldResult T = tensor::getMixedSize(rw, loc, op.getQuery(), 2);
  Type i64 = rw.getI64Type();
  Value init = linalg::FillOp::create(
                   rw, loc, arith::ConstantOp::create(rw, loc, i64, rw.getI64IntegerAttr(-1)).getResult(),
                   tensor::EmptyOp::create(rw, loc, ArrayRef<OpFoldResult>{T}, i64).getResult())
                   .getResult(0);
  MLIRContext *ctx = op.getContext();
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  Value req = linalg::GenericOp::create(
                  rw, loc, init.getType(), ValueRange{starts}, ValueRange{init},
                  SmallVector<AffineMap>{AffineMap::get(2, 0, {dim(1)}, ctx),
                                         AffineMap::get(2, 0, {dim(0)}, ctx)},
                  SmallVector<Iter>{Iter::parallel, Iter::reduction},
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    Value t = arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                         linalg::IndexOp::create(b, l, 0));
                    Value in = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, a[0], t);
                    Value one = arith::ExtUIOp::create(b, l, b.getI64Type(), in);
                    linalg::YieldOp::create(b, l, ValueRange{arith::AddIOp::create(b, l, a[1], one)});
                  })
                  .getResult(0);
  PagedWrites w;
  w.request = req;
  w.keyPool = writeRows(rw, loc, op.getKeyPool(), op.getKey(), req, positions, tables, bs);
  w.valuePool = writeRows(rw, loc, op.getValuePool(), op.getValue(), req, positions, tables, bs);
  return w;
}

FailureOr<Value> lockstep::chunkPagedAttention(RewriterBase &rw, ls::PagedAttentionOp op,
                                               int64_t C) {
  Location loc = op.getLoc();
  Value positions = op.getPositions(), tables = op.getBlockTables();
  OpFoldResult T = tensor::getMixedSize(rw, loc, op.getQuery(), 2);
  Type i64 = rw.getI64Type();
  MLIRContext *ctx = op.getContext();
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  // The new rows go into the pools first; then every key is a pool row.
  PagedWrites writes = writePagedRows(rw, op);
  Value req = writes.request, kPool = writes.keyPool, vPool = writes.valuePool;
  OpFoldResult bs = tensor::getMixedSize(rw, loc, op.getKeyPool(), 1),
               mb = tensor::getMixedSize(rw, loc, tables, 1);
  Value bsv = getValueOrCreateConstantIndexOp(rw, loc, bs);
  auto flat = [&](Value pool) {
    auto pt = cast<RankedTensorType>(pool.getType());
    int64_t n = ShapedType::isDynamic(pt.getDimSize(0)) || ShapedType::isDynamic(pt.getDimSize(1))
                    ? ShapedType::kDynamic
                    : pt.getDimSize(0) * pt.getDimSize(1);
    auto ft = RankedTensorType::get({n, pt.getDimSize(2), pt.getDimSize(3)}, pt.getElementType());
    return tensor::CollapseShapeOp::create(rw, loc, ft, pool,
                                           SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}})
        .getResult();
  };
  AttentionParts P;
  P.q = op.getQuery();
  P.keyScale = op.getKeyScale();
  P.scale = op.getScale();
  P.divides = op.getScaleDivides();
  P.zeroEmpty = op.getZeroEmptyRows();
  P.causal = true;
  // Planted violations for the verifier's tests (--reduction-policy=plant-*):
  // keys past a token's position left unmasked, or merges that fold chunks
  // of padding only.
  if (auto plant = op->getAttrOfType<StringAttr>(kPlantAttr)) {
    P.causal = plant.getValue() != "unmasked-padding";
    P.plantNoSkip = plant.getValue() == "merge-no-skip";
  }
  P.window = (int64_t)op.getWindow().value_or(0);
  if (auto c = op.getSoftcap())
    P.softcap = c->convertToDouble();
  P.positions = positions;
  P.Hk = op.getKey().getType().getDimSize(1);
  P.Dv = op.getValue().getType().getDimSize(3);
  std::optional<int64_t> bsc = getConstantIntValue(bs), mbc = getConstantIntValue(mb);
  if (bsc && mbc)
    P.keyLength = rw.getIndexAttr(*bsc * *mbc);
  else
    P.keyLength =
        arith::MulIOp::create(rw, loc, getValueOrCreateConstantIndexOp(rw, loc, mb), bsv)
            .getResult();
  // rows[t, k]: the pool row of position min(k, positions[t]) of t's request.
  Value rowsInit = tensor::EmptyOp::create(rw, loc, ArrayRef<OpFoldResult>{T, P.keyLength}, i64);
  Value rows = linalg::GenericOp::create(
                   rw, loc, rowsInit.getType(), ValueRange{req, positions}, ValueRange{rowsInit},
                   SmallVector<AffineMap>{AffineMap::get(2, 0, {dim(0)}, ctx),
                                          AffineMap::get(2, 0, {dim(0)}, ctx),
                                          AffineMap::get(2, 0, {dim(0), dim(1)}, ctx)},
                   SmallVector<Iter>{Iter::parallel, Iter::parallel},
                   [&](OpBuilder &b, Location l, ValueRange a) {
                     Value r = toIndex(b, l, a[0]);
                     Value p = arith::MinUIOp::create(b, l, linalg::IndexOp::create(b, l, 1),
                                                      toIndex(b, l, a[1]));
                     Value blk = toIndex(
                         b, l,
                         tensor::ExtractOp::create(
                             b, l, tables, ValueRange{r, arith::DivUIOp::create(b, l, p, bsv)}));
                     Value row = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, blk, bsv),
                                                       arith::RemUIOp::create(b, l, p, bsv));
                     linalg::YieldOp::create(
                         b, l, ValueRange{arith::IndexCastOp::create(b, l, b.getI64Type(), row)});
                   })
                   .getResult(0);
  PagedSource src{rows, flat(kPool), flat(vPool), op.getKeyScale(), P.Dv};
  P.paged = &src;
  return expandAttention(rw, op, P, C);
}
