//===- PagedAttentionKernel.cpp - lockstep.paged_attention on the CPU -----===//
//
// See lockstep/CPU/PagedAttentionKernel.h. The expansion it matches op for
// op is lib/Reductions/ChunkAttention.cpp.
//
//===----------------------------------------------------------------------===//
#include "lockstep/CPU/PagedAttentionKernel.h"
#include "lockstep/CPU/ContractionKernels.h"
#include "lockstep/Reductions/ChunkStats.h"
#include "lockstep/Reductions/Chunking.h"
#include "lockstep/Reductions/PagedKernelIO.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace lockstep;

namespace {

/// Keys scored together: their dots share each load of the lanes' queries.
constexpr int64_t kKeyGroup = 4;

Value idx(OpBuilder &b, Location l, int64_t v) { return arith::ConstantIndexOp::create(b, l, v); }

Value toIndex(OpBuilder &b, Location l, Value v) {
  return arith::IndexCastOp::create(b, l, b.getIndexType(), v);
}

Value add(OpBuilder &b, Location l, Value x, Value y) { return arith::AddIOp::create(b, l, x, y); }
Value mul(OpBuilder &b, Location l, Value x, Value y) { return arith::MulIOp::create(b, l, x, y); }
Value minu(OpBuilder &b, Location l, Value x, Value y) {
  return arith::MinUIOp::create(b, l, x, y);
}

class Kernel : PagedHeads {
public:
  Kernel(RewriterBase &rw, ls::PagedAttentionOp op, int64_t width, int64_t lanes)
      : PagedHeads(op), rw(rw), op(op), loc(op.getLoc()), C(width), V(lanes) {
    for (int64_t w : {V, int64_t(16), int64_t(8), int64_t(4), int64_t(2), int64_t(1)})
      if (w <= V && Dv % w == 0) {
        W = w;
        break;
      }
    // About 16 accumulators: kKeyGroup keys for each of the G heads.
    for (int64_t k = kKeyGroup; k >= 1; k /= 2)
      if ((k * G <= 16 || k == 1) && C % k == 0) {
        keyGroup = k;
        break;
      }
    f32 = rw.getF32Type();
    lanesType = VectorType::get({V}, f32);
    colsType = VectorType::get({W}, f32);
  }

  void build(SharedRequest &shared) {
    PagedKernelIO io(rw, op, shared, C);
    in = io.in;
    Value T = io.tokens;
    L = io.keys;
    chunks = io.chunks;
    bs = io.blockSize;
    out = io.out;
    transposed = io.transposed();
    keysFlat = memref::CollapseShapeOp::create(rw, loc, in.keys,
                                               ArrayRef<ReassociationIndices>{{0, 1, 2, 3}});
    Value blocks = arith::CeilDivUIOp::create(rw, loc, T, idx(rw, loc, V));
    Value zero = idx(rw, loc, 0), one = idx(rw, loc, 1);
    scf::ParallelOp::create(
        rw, loc, ValueRange{zero, zero}, ValueRange{blocks, idx(rw, loc, Hk)},
        ValueRange{one, one}, [&](OpBuilder &b, Location l, ValueRange iv) {
          // Its scratch on the stack (lockstep-outline-parallel gives a
          // thread's iterations one buffer each). The last blocks first:
          // their tokens see the most keys, and the pool's threads claim
          // chunks of iterations in order, so the long ones go out first.
          Value last = arith::SubIOp::create(b, l, blocks, one);
          block(b, arith::SubIOp::create(b, l, last, iv[0]), iv[1], T);
          scf::ReduceOp::create(b, l);
        });
    io.replace();
  }

private:
  RewriterBase &rw;
  ls::PagedAttentionOp op;
  Location loc;
  int64_t C, V, W = 1, keyGroup = 1;
  Type f32;
  VectorType lanesType, colsType;
  PagedKernelIO::Buffers in;
  Value L, chunks, bs, out, keysFlat;
  bool transposed = false;

  /// Per iteration: the lanes' queries by head and d ([G][D][V]), a chunk's
  /// scores then weights by head and key ([G][C][V]; a single token's at
  /// stride 1), o by head and lane ([G][V][Dv]), and per head α, β, m_j
  /// and l by lane ([G][4][V]).
  struct Scratch {
    Value q, x, o, stats;
  };

  /// What a run knows: its tokens [a, a + n) (lane u holds token
  /// a + min(u, n − 1)), request, key head, positions.
  struct Run {
    Value a, n, r, hk, minPos, maxPos, posv;
    SmallVector<Value> tok;
  };

  Value c(OpBuilder &b, int64_t v) { return idx(b, loc, v); }

  Value load(OpBuilder &b, Value m, ValueRange at) { return memref::LoadOp::create(b, loc, m, at); }

  void store(OpBuilder &b, Value v, Value m, ValueRange at) {
    memref::StoreOp::create(b, loc, v, m, at);
  }

  Value scalar(OpBuilder &b, Value m) {
    SmallVector<Value> zeros(cast<MemRefType>(m.getType()).getRank(), c(b, 0));
    return load(b, m, zeros);
  }

  Value scratch(OpBuilder &b, int64_t n) {
    return memref::AllocaOp::create(b, loc, MemRefType::get({n}, f32), ValueRange{},
                                    b.getI64IntegerAttr(64));
  }

  Value vload(OpBuilder &b, VectorType t, Value m, ValueRange at) {
    return vector::LoadOp::create(b, loc, t, m, at);
  }

  void vstore(OpBuilder &b, Value v, Value m, ValueRange at) {
    vector::StoreOp::create(b, loc, v, m, at);
  }

  Value splat(OpBuilder &b, VectorType t, Value x) {
    return vector::BroadcastOp::create(b, loc, t, x);
  }

  /// An index into scratch: base + Σ i_k · stride_k.
  Value at(OpBuilder &b, int64_t base, ArrayRef<std::pair<Value, int64_t>> terms) {
    Value v = c(b, base);
    for (auto [i, stride] : terms)
      v = add(b, loc, v, stride == 1 ? i : mul(b, loc, i, c(b, stride)));
    return v;
  }

  /// The pool row (block · bs + slot) of key position `k` of request `r`.
  Value rowOf(OpBuilder &b, Value r, Value k) {
    Value blk = toIndex(b, loc, load(b, in.tables, {r, arith::DivUIOp::create(b, loc, k, bs)}));
    return add(b, loc, mul(b, loc, blk, bs), arith::RemUIOp::create(b, loc, k, bs));
  }

  /// The scaled, capped and masked score of a dot (vectors of any lanes):
  /// the expansion's x generic.
  Value score(OpBuilder &b, StatsBuilder &S, Value dot, Value keep) {
    Value scale = in.scale ? scalar(b, in.scale) : Value();
    if (scale && isa<VectorType>(S.elt))
      scale = splat(b, cast<VectorType>(S.elt), scale);
    std::optional<double> cap;
    if (auto a = op.getSoftcap())
      cap = a->convertToDouble();
    Value x = S.scaledScore(b, loc, dot, scale, op.getScaleDivides(), cap);
    return arith::SelectOp::create(b, loc, keep, x, S.negInf(b, loc));
  }

  /// Whether key `kv` (i64 lanes) is kept for the query at position `posv`
  /// (i64 lanes), StatsBuilder::keepKey's test: k <= pos, and with a window
  /// W also k + W > pos.
  Value keep(OpBuilder &b, Value kv, Value posv) {
    Value kept = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, kv, posv);
    if (int64_t w = (int64_t)op.getWindow().value_or(0); w > 0) {
      auto vt = cast<VectorType>(kv.getType());
      Value wv = splat(b, vt, arith::ConstantIntOp::create(b, loc, vt.getElementType(), w));
      Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                           arith::AddIOp::create(b, loc, kv, wv), posv);
      kept = arith::AndIOp::create(b, loc, kept, inside);
    }
    return kept;
  }

  /// The tokens [t0, min(t0 + V, T)) of block `i`, split into runs of one
  /// request, for the query heads of key head `hk`.
  void block(OpBuilder &b, Value i, Value hk, Value T) {
    Value t0 = mul(b, loc, i, c(b, V));
    Value tEnd = minu(b, loc, add(b, loc, t0, c(b, V)), T);
    Scratch s{scratch(b, G * D * V), scratch(b, G * C * V), scratch(b, G * V * Dv),
              scratch(b, G * 4 * V)};
    scf::ForOp::create(b, loc, t0, tEnd, c(b, 1), ValueRange{},
                       [&](OpBuilder &fb, Location fl, Value a, ValueRange) {
                         // A run starts at the block's first token and
                         // where the request changes.
                         Value first = arith::CmpIOp::create(fb, fl, arith::CmpIPredicate::eq, a, t0);
                         Value r = load(fb, in.request, a);
                         Value before = arith::SubIOp::create(
                             fb, fl, arith::MaxUIOp::create(fb, fl, a, c(fb, 1)), c(fb, 1));
                         Value other = arith::CmpIOp::create(fb, fl, arith::CmpIPredicate::ne, r,
                                                             load(fb, in.request, before));
                         Value starts = arith::OrIOp::create(fb, fl, first, other);
                         scf::IfOp::create(fb, fl, starts, [&](OpBuilder &ib, Location il) {
                           run(ib, s, a, tEnd, r, hk);
                           scf::YieldOp::create(ib, il);
                         });
                         scf::YieldOp::create(fb, fl);
                       });
  }

  /// The run of request `r64` from token `a` to the first token of another
  /// request or tEnd.
  void run(OpBuilder &b, Scratch &s, Value a, Value tEnd, Value r64, Value hk) {
    auto scan = scf::WhileOp::create(
        b, loc, TypeRange{b.getIndexType()}, ValueRange{add(b, loc, a, c(b, 1))},
        [&](OpBuilder &wb, Location wl, ValueRange e) {
          Value inside = arith::CmpIOp::create(wb, wl, arith::CmpIPredicate::ult, e[0], tEnd);
          // Read in range only: the request of token e, or of a again.
          Value t = arith::SelectOp::create(wb, wl, inside, e[0], a);
          Value same = arith::CmpIOp::create(wb, wl, arith::CmpIPredicate::eq,
                                             load(wb, in.request, t), r64);
          scf::ConditionOp::create(wb, wl, arith::AndIOp::create(wb, wl, inside, same), e);
        },
        [&](OpBuilder &wb, Location wl, ValueRange e) {
          scf::YieldOp::create(wb, wl, add(wb, wl, e[0], c(wb, 1)));
        });
    Run R;
    R.a = a;
    R.n = arith::SubIOp::create(b, loc, scan.getResult(0), a);
    R.r = toIndex(b, loc, r64);
    R.hk = hk;
    Value last = arith::SubIOp::create(b, loc, R.n, c(b, 1));
    SmallVector<Value> pos;
    for (int64_t u = 0; u < V; ++u) {
      R.tok.push_back(add(b, loc, a, minu(b, loc, c(b, u), last)));
      pos.push_back(load(b, in.positions, R.tok.back()));
      Value p = toIndex(b, loc, pos.back());
      R.minPos = R.minPos ? minu(b, loc, R.minPos, p) : p;
      R.maxPos = R.maxPos ? arith::MaxUIOp::create(b, loc, R.maxPos, p).getResult() : p;
    }
    R.posv = vector::FromElementsOp::create(b, loc, VectorType::get({V}, pos[0].getType()), pos);
    StatsBuilder SC{rw, loc, colsType, rw.getContext()};
    Value zeroCols = SC.cst(b, loc, 0.0);
    scf::ForOp::create(b, loc, c(b, 0), c(b, G * V * Dv), c(b, W), ValueRange{},
                       [&](OpBuilder &fb, Location fl, Value i, ValueRange) {
                         vstore(fb, zeroCols, s.o, i);
                         scf::YieldOp::create(fb, fl);
                       });
    // One token: its keys are the lanes; more: its tokens are.
    Value single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, R.n, c(b, 1));
    scf::IfOp::create(
        b, loc, single,
        [&](OpBuilder &tb, Location tl) {
          chunksOf(tb, s, R, /*keyLanes=*/true);
          scf::YieldOp::create(tb, tl);
        },
        [&](OpBuilder &eb, Location el) {
          transposeQueries(eb, s, R);
          chunksOf(eb, s, R, /*keyLanes=*/false);
          scf::YieldOp::create(eb, el);
        });
    for (int64_t g = 0; g < G; ++g)
      finish(b, SC, s, R, g);
  }

  /// The lanes' queries of each head, transposed into s.q.
  void transposeQueries(OpBuilder &b, Scratch &s, const Run &R) {
    scf::ForOp::create(b, loc, c(b, 0), c(b, D), c(b, 1), ValueRange{},
                       [&](OpBuilder &fb, Location fl, Value d, ValueRange) {
                         for (int64_t g = 0; g < G; ++g) {
                           Value h = add(fb, fl, mul(fb, fl, R.hk, c(fb, G)), c(fb, g));
                           SmallVector<Value> qs;
                           for (int64_t u = 0; u < V; ++u)
                             qs.push_back(load(fb, in.q, {c(fb, 0), h, R.tok[u], d}));
                           vstore(fb, vector::FromElementsOp::create(fb, fl, lanesType, qs), s.q,
                                  at(fb, g * D * V, {{d, V}}));
                         }
                         scf::YieldOp::create(fb, fl);
                       });
  }

  /// The chunks of the run, from the one holding key minPos − W + 1
  /// (window W) to the one holding maxPos, merged left to right into each
  /// head's (m, l) (lanes of tokens, or one token's scalars) and o.
  void chunksOf(OpBuilder &b, Scratch &s, const Run &R, bool keyLanes) {
    Value zero = c(b, 0), one = c(b, 1), cw = c(b, C);
    Value firstChunk = zero;
    if (int64_t w = (int64_t)op.getWindow().value_or(0); w > 0) {
      Value after = add(b, loc, R.minPos, one);
      Value late = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, after, c(b, w));
      Value start = arith::SubIOp::create(b, loc, after, c(b, w));
      firstChunk = arith::SelectOp::create(b, loc, late,
                                           arith::DivUIOp::create(b, loc, start, cw), zero);
    }
    Value upper = minu(b, loc, add(b, loc, arith::DivUIOp::create(b, loc, R.maxPos, cw), one),
                       chunks);
    StatsBuilder S{rw, loc, keyLanes ? f32 : Type(lanesType), rw.getContext()};
    SmallVector<Value> init;
    for (int64_t g = 0; g < G; ++g) {
      init.push_back(S.negInf(b, loc));
      init.push_back(S.cst(b, loc, 0.0));
    }
    auto merged = scf::ForOp::create(
        b, loc, firstChunk, upper, one, init,
        [&](OpBuilder &cb, Location cl, Value j, ValueRange acc) {
          Value k0 = mul(cb, cl, j, cw);
          Value keys = minu(cb, cl, cw, arith::SubIOp::create(cb, cl, L, k0));
          Value rowLimit = minu(cb, cl, arith::SubIOp::create(cb, cl, L, one), R.maxPos);
          if (keyLanes)
            keyLaneScores(cb, s, R, k0, keys, rowLimit);
          else
            tokenLaneScores(cb, s, R, k0, rowLimit);
          SmallVector<Value> next;
          for (int64_t g = 0; g < G; ++g) {
            // m_j, then exp(x − m_j) once a key and their sum, in key order.
            int64_t stride = keyLanes ? 1 : V;
            auto xAt = [&](OpBuilder &fb, Value k) { return at(fb, g * C * V, {{k, stride}}); };
            auto get = [&](OpBuilder &fb, Value k) {
              return keyLanes ? load(fb, s.x, xAt(fb, k)) : vload(fb, lanesType, s.x, xAt(fb, k));
            };
            auto put = [&](OpBuilder &fb, Value v, Value k) {
              if (keyLanes)
                store(fb, v, s.x, xAt(fb, k));
              else
                vstore(fb, v, s.x, xAt(fb, k));
            };
            Value mj = scf::ForOp::create(
                           cb, cl, zero, keys, one, ValueRange{S.negInf(cb, cl)},
                           [&](OpBuilder &fb, Location fl, Value k, ValueRange m) {
                             scf::YieldOp::create(
                                 fb, fl, arith::MaximumFOp::create(fb, fl, m[0], get(fb, k)).getResult());
                           })
                           .getResult(0);
            Value sj = scf::ForOp::create(
                           cb, cl, zero, keys, one, ValueRange{S.cst(cb, cl, 0.0)},
                           [&](OpBuilder &fb, Location fl, Value k, ValueRange sum) {
                             Value p = S.shiftedExp(fb, fl, get(fb, k), mj);
                             put(fb, p, k);
                             scf::YieldOp::create(
                                 fb, fl, arith::AddFOp::create(fb, fl, sum[0], p).getResult());
                           })
                           .getResult(0);
            StatsBuilder::RowMerge rm = S.mergeRow(cb, cl, acc[2 * g], acc[2 * g + 1], mj, sj);
            Value base = c(cb, g * 4 * V);
            auto keepStat = [&](Value v, int64_t slot) {
              Value i = add(cb, cl, base, c(cb, slot * V));
              if (keyLanes)
                store(cb, v, s.stats, i);
              else
                vstore(cb, v, s.stats, i);
            };
            keepStat(rm.alpha, 0);
            keepStat(rm.beta, 1);
            keepStat(mj, 2);
            values(cb, s, R, g, k0, keys, stride);
            next.push_back(rm.max);
            next.push_back(rm.l);
          }
          scf::YieldOp::create(cb, cl, next);
        });
    for (int64_t g = 0; g < G; ++g) {
      Value i = c(b, g * 4 * V + 3 * V);
      if (keyLanes)
        store(b, merged.getResult(2 * g + 1), s.stats, i);
      else
        vstore(b, merged.getResult(2 * g + 1), s.stats, i);
    }
  }

  /// Lanes of tokens: the scores of chunk keys k0 .. k0 + C − 1 for every
  /// head and lane into s.x ([g][key][lane]): each key's row read at
  /// min(k, rowLimit) once for the G heads, its dot over d in order from
  /// +0.0, then scaled, capped and masked. Keys past the chunk's end are
  /// scored and never read.
  void tokenLaneScores(OpBuilder &b, Scratch &s, const Run &R, Value k0, Value rowLimit) {
    Value ks = in.keyScale ? scalar(b, in.keyScale) : Value();
    StatsBuilder S{rw, loc, lanesType, rw.getContext()};
    auto posType = cast<VectorType>(R.posv.getType());
    scf::ForOp::create(
        b, loc, c(b, 0), c(b, C), c(b, keyGroup), ValueRange{},
        [&](OpBuilder &gb, Location gl, Value c0, ValueRange) {
          SmallVector<Value> k, row;
          for (int64_t u = 0; u < keyGroup; ++u) {
            k.push_back(add(gb, gl, k0, add(gb, gl, c0, c(gb, u))));
            row.push_back(rowOf(gb, R.r, minu(gb, gl, k.back(), rowLimit)));
          }
          SmallVector<Value> init(G * keyGroup, S.cst(gb, gl, 0.0));
          auto dots = scf::ForOp::create(
              gb, gl, c(gb, 0), c(gb, D), c(gb, 1), init,
              [&](OpBuilder &db, Location dl, Value d, ValueRange acc) {
                SmallVector<Value> qv, next;
                for (int64_t g = 0; g < G; ++g)
                  qv.push_back(vload(db, lanesType, s.q, at(db, g * D * V, {{d, V}})));
                for (int64_t u = 0; u < keyGroup; ++u) {
                  Value key = load(db, in.keys, {arith::DivUIOp::create(db, dl, row[u], bs),
                                                 arith::RemUIOp::create(db, dl, row[u], bs),
                                                 R.hk, d});
                  if (ks)
                    key = arith::MulFOp::create(db, dl, key, ks);
                  Value kv = splat(db, lanesType, key);
                  for (int64_t g = 0; g < G; ++g)
                    next.push_back(
                        math::FmaOp::create(db, dl, qv[g], kv, acc[u * G + g]));
                }
                scf::YieldOp::create(db, dl, next);
              });
          for (int64_t u = 0; u < keyGroup; ++u) {
            Value kv = splat(gb, posType,
                             arith::IndexCastOp::create(gb, gl, posType.getElementType(), k[u]));
            Value kept = keep(gb, kv, R.posv);
            for (int64_t g = 0; g < G; ++g)
              vstore(gb, score(gb, S, dots.getResult(u * G + g), kept), s.x,
                     at(gb, g * C * V, {{add(gb, gl, c0, c(gb, u)), V}}));
          }
          scf::YieldOp::create(gb, gl);
        });
  }

  /// One token, its keys the lanes: the scores of chunk keys k0 .. k0 +
  /// C − 1 for every head into s.x ([g][key]): V keys' rows (at
  /// min(k, rowLimit)) gathered at each d, the dots over d in order from
  /// +0.0, then scaled, capped and masked; keys past the chunk's end are
  /// −inf (never read past the max).
  void keyLaneScores(OpBuilder &b, Scratch &s, const Run &R, Value k0, Value keys,
                     Value rowLimit) {
    Value ks = in.keyScale ? scalar(b, in.keyScale) : Value();
    StatsBuilder S{rw, loc, lanesType, rw.getContext()};
    auto posType = cast<VectorType>(R.posv.getType());
    Value t = R.tok[0];
    Value pos = splat(b, posType, load(b, in.positions, t));
    scf::ForOp::create(
        b, loc, c(b, 0), c(b, C), c(b, V), ValueRange{},
        [&](OpBuilder &gb, Location gl, Value c0, ValueRange) {
          SmallVector<Value> offs, kIdx;
          for (int64_t u = 0; u < V; ++u) {
            Value k = add(gb, gl, k0, add(gb, gl, c0, c(gb, u)));
            kIdx.push_back(arith::IndexCastOp::create(gb, gl, posType.getElementType(), k));
            Value row = rowOf(gb, R.r, minu(gb, gl, k, rowLimit));
            offs.push_back(mul(gb, gl, add(gb, gl, mul(gb, gl, row, c(gb, Hk)), R.hk), c(gb, D)));
          }
          SmallVector<Value> init(G, S.cst(gb, gl, 0.0));
          // Folds d's keys (a vector of the lanes' values) into each head's
          // dots, in increasing d.
          auto foldD = [&](OpBuilder &db, Location dl, Value d, Value kv, SmallVector<Value> &acc) {
            if (ks)
              kv = arith::MulFOp::create(db, dl, kv, splat(db, lanesType, ks));
            for (int64_t g = 0; g < G; ++g) {
              Value h = add(db, dl, mul(db, dl, R.hk, c(db, G)), c(db, g));
              Value q = splat(db, lanesType, load(db, in.q, {c(db, 0), h, t, d}));
              acc[g] = math::FmaOp::create(db, dl, q, kv, acc[g]);
            }
          };
          scf::ForOp dots;
          if (D % V == 0) {
            // V values of d at a time: each lane's key row read as one
            // vector along d, the V rows transposed into a vector of the
            // lanes for each d (a gather a d was most of a decode step's
            // attention).
            dots = scf::ForOp::create(
                gb, gl, c(gb, 0), c(gb, D), c(gb, V), init,
                [&](OpBuilder &db, Location dl, Value d0, ValueRange acc) {
                  SmallVector<Value> rows, next(acc.begin(), acc.end());
                  for (int64_t u = 0; u < V; ++u)
                    rows.push_back(vload(db, lanesType, keysFlat, add(db, dl, offs[u], d0)));
                  SmallVector<Value> cols = transposeSquare(db, dl, rows);
                  for (int64_t j = 0; j < V; ++j)
                    foldD(db, dl, add(db, dl, d0, c(db, j)), cols[j], next);
                  scf::YieldOp::create(db, dl, next);
                });
          } else {
            // Else the lanes' values of each d gathered.
            auto offType = VectorType::get({V}, gb.getIndexType());
            Value all = arith::ConstantOp::create(
                gb, gl, DenseElementsAttr::get(VectorType::get({V}, gb.getI1Type()), true));
            Value none = S.cst(gb, gl, 0.0);
            Value base = vector::FromElementsOp::create(gb, gl, offType, offs);
            dots = scf::ForOp::create(
                gb, gl, c(gb, 0), c(gb, D), c(gb, 1), init,
                [&](OpBuilder &db, Location dl, Value d, ValueRange acc) {
                  Value offsets = arith::AddIOp::create(db, dl, base, splat(db, offType, d));
                  Value kv = vector::GatherOp::create(db, dl, lanesType, keysFlat,
                                                      ValueRange{c(db, 0)}, offsets, all, none);
                  SmallVector<Value> next(acc.begin(), acc.end());
                  foldD(db, dl, d, kv, next);
                  scf::YieldOp::create(db, dl, next);
                });
          }
          Value kv = vector::FromElementsOp::create(gb, gl, posType, kIdx);
          // Lanes past the chunk's keys are −inf: left out of the max.
          Value end = splat(gb, posType, arith::IndexCastOp::create(
                                             gb, gl, posType.getElementType(), add(gb, gl, k0, keys)));
          Value in = arith::CmpIOp::create(gb, gl, arith::CmpIPredicate::ult, kv, end);
          Value kept = arith::AndIOp::create(gb, gl, keep(gb, kv, pos), in);
          for (int64_t g = 0; g < G; ++g)
            vstore(gb, score(gb, S, dots.getResult(g), kept), s.x, at(gb, g * C * V, {{c0, 1}}));
          scf::YieldOp::create(gb, gl);
        });
  }

  /// For each lane of the run whose chunk max for head g is not −inf: o_j
  /// over the chunk's keys in order from +0.0 (the value row of
  /// min(k, position)), merged into the lane's o. Key k's weight is at
  /// s.x[g][k · stride + lane].
  void values(OpBuilder &b, Scratch &s, const Run &R, int64_t g, Value k0, Value keys,
              int64_t stride) {
    StatsBuilder SC{rw, loc, colsType, rw.getContext()};
    Value negInf = StatsBuilder{rw, loc, f32, rw.getContext()}.negInf(b, loc);
    int64_t cols = Dv / W;
    scf::ForOp::create(
        b, loc, c(b, 0), R.n, c(b, 1), ValueRange{},
        [&](OpBuilder &lb, Location ll, Value u, ValueRange) {
          Value stats = c(lb, g * 4 * V);
          Value mj = load(lb, s.stats, at(lb, g * 4 * V + 2 * V, {{u, 1}}));
          Value skip = arith::CmpFOp::create(lb, ll, arith::CmpFPredicate::OEQ, mj, negInf);
          auto live = scf::IfOp::create(lb, ll, TypeRange{}, skip, /*withElse=*/true);
          OpBuilder eb = live.getElseBodyBuilder();
          Value pos = toIndex(eb, ll, load(eb, in.positions, add(eb, ll, R.a, u)));
          SmallVector<Value> init(cols, SC.cst(eb, ll, 0.0));
          auto oj = scf::ForOp::create(
              eb, ll, c(eb, 0), keys, c(eb, 1), init,
              [&](OpBuilder &fb, Location fl, Value k, ValueRange acc) {
                Value row = rowOf(fb, R.r, minu(fb, fl, add(fb, fl, k0, k), pos));
                Value p = load(fb, s.x, at(fb, g * C * V, {{k, stride}, {u, 1}}));
                Value pv = splat(fb, colsType, p);
                SmallVector<Value> next;
                for (int64_t w = 0; w < cols; ++w)
                  next.push_back(math::FmaOp::create(
                      fb, fl, pv, vload(fb, colsType, in.values, {row, R.hk, c(fb, w * W)}),
                      acc[w]));
                scf::YieldOp::create(fb, fl, next);
              });
          Value alpha = splat(eb, colsType, load(eb, s.stats, add(eb, ll, stats, u)));
          Value beta = splat(eb, colsType,
                             load(eb, s.stats, add(eb, ll, stats, add(eb, ll, u, c(eb, V)))));
          Value mjv = splat(eb, colsType, mj);
          for (int64_t w = 0; w < cols; ++w) {
            Value i = at(eb, g * V * Dv + w * W, {{u, Dv}});
            Value o = vload(eb, colsType, s.o, i);
            vstore(eb, SC.mergeColumn(eb, ll, o, alpha, oj.getResult(w), beta, mjv), s.o, i);
          }
          scf::YieldOp::create(lb, ll);
        });
  }

  /// y = o / l (0 for a row of no key when the op says so) of head g for
  /// each lane of the run, stored.
  void finish(OpBuilder &b, StatsBuilder &SC, Scratch &s, const Run &R, int64_t g) {
    scf::ForOp::create(
        b, loc, c(b, 0), R.n, c(b, 1), ValueRange{},
        [&](OpBuilder &lb, Location ll, Value u, ValueRange) {
          Value t = add(lb, ll, R.a, u);
          Value h = add(lb, ll, mul(lb, ll, R.hk, c(lb, G)), c(lb, g));
          Value lsum = splat(lb, colsType, load(lb, s.stats, at(lb, g * 4 * V + 3 * V, {{u, 1}})));
          for (int64_t w = 0; w < Dv / W; ++w) {
            Value e = c(lb, w * W);
            Value o = vload(lb, colsType, s.o, at(lb, g * V * Dv + w * W, {{u, Dv}}));
            Value y = arith::DivFOp::create(lb, ll, o, lsum);
            if (op.getZeroEmptyRows()) {
              Value z = SC.cst(lb, ll, 0.0);
              Value empty = arith::CmpFOp::create(lb, ll, arith::CmpFPredicate::OEQ, lsum, z);
              y = arith::SelectOp::create(lb, ll, empty, z, y);
            }
            if (transposed)
              vstore(lb, y, out, {c(lb, 0), t, h, e});
            else
              vstore(lb, y, out, {c(lb, 0), h, t, e});
          }
          scf::YieldOp::create(lb, ll);
        });
  }
};

} // namespace

void lockstep::buildCpuPagedAttention(RewriterBase &rw, ls::PagedAttentionOp op, int64_t width,
                                      int64_t lanes, SharedRequest &shared) {
  Kernel(rw, op, width, lanes).build(shared);
}
