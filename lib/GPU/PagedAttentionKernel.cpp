//===- PagedAttentionKernel.cpp - lockstep.paged_attention on a GPU -------===//
//
// See lockstep/GPU/PagedAttentionKernel.h. The expansion it matches op for
// op is lib/Reductions/ChunkAttention.cpp; the comments name its pieces.
//
//===----------------------------------------------------------------------===//
#include "lockstep/GPU/PagedAttentionKernel.h"
#include "lockstep/Reductions/ChunkStats.h"
#include "lockstep/Reductions/Chunking.h"
#include "lockstep/Reductions/PagedKernelIO.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace lockstep;

namespace {

constexpr int64_t kWarp = 32;
/// Warps a block: each owns one (token, query head); neighbouring heads
/// share their key head, so a block's key reads mostly hit the same lines.
constexpr int64_t kWarpsPerBlock = 4;
/// Keys of a chunk (slots) and value columns a lane handles at most.
constexpr int64_t kMaxSlots = 8;
/// Keys whose shuffles and value loads are issued together before their
/// folds, a loop iteration each (kWarp or more: straight-line code). On the
/// H200 (docs/gpu-runs/2026-12-04-attn/micro.sh, 32 heads over 8 of 64),
/// 8 gave the fastest decode: 23 us a launch at 1 request against 26 for
/// straight-line code and 38 for 16; straight-line code was 7% faster for a
/// 512-token prefill.
constexpr int64_t kKeyGroup = 8;
/// The split form (a warp a chunk, then a warp a pair merging the chunks'
/// statistics) serves a step of at most this many (pair, chunk) items: its
/// scratch is (2 + Dv) floats an item, 17 MB for a head of 64.
constexpr int64_t kSplitWarps = 1 << 16;

Value idx(OpBuilder &b, Location l, int64_t v) { return arith::ConstantIndexOp::create(b, l, v); }

Value toIndex(OpBuilder &b, Location l, Value v) {
  return arith::IndexCastOp::create(b, l, b.getIndexType(), v);
}

Value toI32(OpBuilder &b, Location l, Value v) {
  return arith::IndexCastOp::create(b, l, b.getI32Type(), v);
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool isF32(Value v) {
  return v && cast<ShapedType>(v.getType()).getElementType().isF32();
}

class Kernel : PagedHeads {
public:
  Kernel(RewriterBase &rw, ls::PagedAttentionOp op, int64_t width)
      : PagedHeads(op), rw(rw), op(op), loc(op.getLoc()), C(width),
        S{rw, op.getLoc(), rw.getF32Type(), op.getContext()} {
    slots = ceilDiv(C, kWarp);
    columns = ceilDiv(Dv, kWarp);
  }

  void build(SharedRequest &shared) {
    keysByFour = D % 4 == 0;
    // The key pool row-major (the pool arguments are) when a lane reads 4
    // adjacent values of its key row at a time.
    PagedKernelIO io(rw, op, shared, C, /*keysRowMajor=*/keysByFour);
    in = io.in;
    Value T = io.tokens, bs = io.blockSize, L = io.keys, chunks = io.chunks;
    Value out = io.out;
    transposed = io.transposed();
    Value pairs = arith::MulIOp::create(rw, loc, T, idx(rw, loc, H));
    Value any = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::ugt, pairs, idx(rw, loc, 0));
    scf::IfOp::create(rw, loc, any, [&](OpBuilder &b, Location l) {
      // Split across warps when the (pair, chunk) statistics fit the
      // scratch: one warp a chunk, then one a pair merging them.
      Value items = arith::MulIOp::create(b, l, pairs, chunks);
      Value split = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ule, items,
                                          idx(b, l, kSplitWarps));
      scf::IfOp::create(
          b, l, split,
          [&](OpBuilder &sb, Location sl) {
            Value n = arith::MulIOp::create(sb, sl, items, idx(sb, sl, 2 + Dv));
            Value scratch = memref::AllocOp::create(
                sb, sl, MemRefType::get({ShapedType::kDynamic}, sb.getF32Type()), ValueRange{n});
            launchWarps(sb, sl, items, [&](OpBuilder &wb, Value w) {
              // Chunk-major: a block's warps are neighbouring heads, which
              // share their key head, at the same chunk.
              Value j = arith::DivUIOp::create(wb, sl, w, pairs);
              Value pair = arith::RemUIOp::create(wb, sl, w, pairs);
              Pair p = pairOf(wb, pair, L, chunks);
              Value from = arith::CmpIOp::create(wb, sl, arith::CmpIPredicate::uge, j, p.first);
              Value to = arith::CmpIOp::create(wb, sl, arith::CmpIPredicate::ult, j, p.upper);
              Value live = arith::AndIOp::create(wb, sl, from, to);
              scf::IfOp::create(wb, sl, live, [&](OpBuilder &cb, Location cl) {
                Stats st = chunkStats(cb, p, j, bs, L);
                Value base = arith::MulIOp::create(cb, cl, w, idx(cb, cl, 2 + Dv));
                storeStats(cb, st, scratch, base);
                scf::YieldOp::create(cb, cl);
              });
            });
            launchWarps(sb, sl, pairs, [&](OpBuilder &wb, Value pair) {
              Pair p = pairOf(wb, pair, L, chunks);
              finish(wb, p, out, mergeChunks(wb, p, [&](OpBuilder &cb, Value j) {
                       Value w = arith::AddIOp::create(
                           cb, sl, arith::MulIOp::create(cb, sl, j, pairs), pair);
                       Value base = arith::MulIOp::create(cb, sl, w, idx(cb, sl, 2 + Dv));
                       return loadStats(cb, p, scratch, base);
                     }));
            });
            scf::YieldOp::create(sb, sl);
          },
          [&](OpBuilder &sb, Location sl) {
            launchWarps(sb, sl, pairs, [&](OpBuilder &wb, Value pair) {
              Pair p = pairOf(wb, pair, L, chunks);
              finish(wb, p, out, mergeChunks(wb, p, [&](OpBuilder &cb, Value j) {
                       return chunkStats(cb, p, j, bs, L);
                     }));
            });
            scf::YieldOp::create(sb, sl);
          });
      scf::YieldOp::create(b, l);
    });
    io.replace();
  }

private:
  RewriterBase &rw;
  ls::PagedAttentionOp op;
  Location loc;
  int64_t C, slots = 1, columns = 1;
  bool keysByFour = false;
  /// y stored as [1, T, H, Dv] (see PagedKernelIO).
  bool transposed = false;
  StatsBuilder S;
  Value lane;
  PagedKernelIO::Buffers in;

  Value load(OpBuilder &b, Location l, Value m, ValueRange at) {
    return memref::LoadOp::create(b, l, m, at);
  }

  /// The single element of a scale operand (read at all zeros).
  Value scalar(OpBuilder &b, Location l, Value m) {
    SmallVector<Value> zeros(cast<MemRefType>(m.getType()).getRank(), idx(b, l, 0));
    return load(b, l, m, zeros);
  }

  /// `v` of lane `from` (an index below 32).
  Value shuffle(OpBuilder &b, Location l, Value v, Value from) {
    auto mode = gpu::ShuffleModeAttr::get(b.getContext(), gpu::ShuffleMode::IDX);
    Value width = arith::ConstantIntOp::create(b, l, kWarp, 32);
    return gpu::ShuffleOp::create(b, l, v, toI32(b, l, from), width, mode).getResult(0);
  }

  /// `v` of lane `lane ^ mask`.
  Value shuffleXor(OpBuilder &b, Location l, Value v, int64_t mask) {
    auto mode = gpu::ShuffleModeAttr::get(b.getContext(), gpu::ShuffleMode::XOR);
    Value width = arith::ConstantIntOp::create(b, l, kWarp, 32);
    Value m = arith::ConstantIntOp::create(b, l, mask, 32);
    return gpu::ShuffleOp::create(b, l, v, m, width, mode).getResult(0);
  }

  /// The chunk's max m_j over its first `n` keys (key i is lane i % 32's
  /// slot i / 32): each lane's slots, then across the warp by xor shuffles.
  /// A max is exact in any order (maximumf: NaN propagates, +0 above -0),
  /// so this equals the expansion's fold in key order; a key past `n` is
  /// left out by a select to -inf.
  Value chunkMax(OpBuilder &b, Location l, Value n, ArrayRef<Value> xs) {
    Value m;
    for (int64_t s = 0; s < slots; ++s) {
      Value i = arith::AddIOp::create(b, l, lane, idx(b, l, s * kWarp));
      Value valid = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, i, n);
      Value x = arith::SelectOp::create(b, l, valid, xs[s], S.negInf(b, l));
      m = m ? arith::MaximumFOp::create(b, l, m, x).getResult() : x;
    }
    for (int64_t mask = kWarp / 2; mask >= 1; mask /= 2)
      m = arith::MaximumFOp::create(b, l, m, shuffleXor(b, l, m, mask));
    return m;
  }

  /// s_j and o_j over the first `n` keys of a chunk, in key order from
  /// +0.0, in one pass: key i's weight and value row (`rows`: block · bs +
  /// slot) are shuffled from lane i % 32's slot i / 32, then s = s + p and, for each of this lane's
  /// value columns, o = fma(p, v, o); a key past `n` selects them back.
  /// Each of the folds is the expansion's, op for op and in its order (the
  /// two are independent, so interleaving them changes no bit). The keys
  /// go kKeyGroup at a time: the group's shuffles and value loads, which
  /// wait on no fold, then its folds in key order.
  std::pair<Value, SmallVector<Value>> sumAndValues(OpBuilder &b, Location l, Value n,
                                                    ArrayRef<Value> ps,
                                                    ArrayRef<Value> rows,
                                                    Value hk, ArrayRef<Value> cols) {
    SmallVector<Value> acc{S.cst(b, l, 0.0)};
    for (size_t c = 0; c < cols.size(); ++c)
      acc.push_back(S.cst(b, l, 0.0));
    // Keys u0 .. u0 + g - 1 of slot s: their shuffles and loads first, then
    // the folds in key order.
    auto keys = [&](OpBuilder &fb, Location fl, int64_t s, Value u0, int64_t g,
                    SmallVector<Value> cur) {
      SmallVector<Value> valid, p;
      SmallVector<SmallVector<Value>> v(g);
      for (int64_t u = 0; u < g; ++u) {
        Value from = arith::AddIOp::create(fb, fl, u0, idx(fb, fl, u));
        Value key = arith::AddIOp::create(fb, fl, from, idx(fb, fl, s * kWarp));
        valid.push_back(arith::CmpIOp::create(fb, fl, arith::CmpIPredicate::ult, key, n));
        p.push_back(shuffle(fb, fl, ps[s], from));
        Value row = toIndex(fb, fl, shuffle(fb, fl, rows[s], from));
        for (Value c : cols)
          v[u].push_back(load(fb, fl, in.values, {row, hk, c}));
      }
      for (int64_t u = 0; u < g; ++u) {
        cur[0] = arith::SelectOp::create(fb, fl, valid[u],
                                         arith::AddFOp::create(fb, fl, cur[0], p[u]), cur[0]);
        for (size_t c = 0; c < cols.size(); ++c)
          cur[1 + c] = arith::SelectOp::create(
              fb, fl, valid[u], math::FmaOp::create(fb, fl, p[u], v[u][c], cur[1 + c]),
              cur[1 + c]);
      }
      return cur;
    };
    for (int64_t s = 0; s < slots; ++s) {
      if (kKeyGroup >= kWarp) {
        acc = keys(b, l, s, idx(b, l, 0), kWarp, acc);
        continue;
      }
      auto loop = scf::ForOp::create(
          b, l, idx(b, l, 0), idx(b, l, kWarp), idx(b, l, kKeyGroup), acc,
          [&](OpBuilder &fb, Location fl, Value u0, ValueRange a) {
            scf::YieldOp::create(fb, fl, keys(fb, fl, s, u0, kKeyGroup, SmallVector<Value>(a)));
          });
      acc.assign(loop.getResults().begin(), loop.getResults().end());
    }
    return {acc[0], SmallVector<Value>(acc.begin() + 1, acc.end())};
  }

  /// The dots of this lane's keys (one a slot) with the query, each over d
  /// in order from +0.0 (the expansion's dot generic), at rows (block,
  /// slot). The loads of `step` values of d of every key (and of the
  /// query) are issued before their fmas: as many as keep about 96 values
  /// in flight a lane, so that a head of 64 with two keys a lane takes two
  /// memory latencies, not one a group of 16.
  SmallVector<Value> dots(OpBuilder &b, Location l, Value h, Value t, Value hk,
                          ArrayRef<std::pair<Value, Value>> at) {
    Value zero = idx(b, l, 0);
    Value ks = in.keyScale ? scalar(b, l, in.keyScale) : Value();
    int64_t step = 1;
    int64_t inFlight = 96 / int64_t(at.size() + 1);
    for (int64_t g : {64, 32, 16, 8, 4, 2})
      if (D % g == 0 && (g <= inFlight || g <= 4)) {
        step = g;
        break;
      }
    SmallVector<Value> init(at.size(), S.cst(b, l, 0.0));
    auto loop = scf::ForOp::create(
        b, l, zero, idx(b, l, D), idx(b, l, step), init,
        [&](OpBuilder &fb, Location fl, Value d0, ValueRange acc) {
          SmallVector<Value> qs;
          SmallVector<SmallVector<Value>> keys(at.size());
          for (int64_t u = 0; u < step; ++u) {
            Value d = arith::AddIOp::create(fb, fl, d0, idx(fb, fl, u));
            qs.push_back(load(fb, fl, in.q, {zero, h, t, d}));
            if (keysByFour && u % 4)
              continue;
            for (size_t s = 0; s < at.size(); ++s) {
              SmallVector<Value> at4{at[s].first, at[s].second, hk, d};
              if (!keysByFour) {
                keys[s].push_back(load(fb, fl, in.keys, at4));
                continue;
              }
              // 16 bytes aligned: the row starts at a multiple of D floats.
              auto v4 = VectorType::get({4}, fb.getF32Type());
              Value v = vector::LoadOp::create(fb, fl, v4, in.keys, at4, /*nontemporal=*/false,
                                               llvm::Align(16));
              for (int64_t e = 0; e < 4; ++e)
                keys[s].push_back(vector::ExtractOp::create(fb, fl, v, e));
            }
          }
          SmallVector<Value> next(acc.begin(), acc.end());
          for (size_t s = 0; s < at.size(); ++s)
            for (int64_t u = 0; u < step; ++u) {
              Value key = keys[s][u];
              if (ks)
                key = arith::MulFOp::create(fb, fl, key, ks);
              next[s] = math::FmaOp::create(fb, fl, qs[u], key, next[s]);
            }
          scf::YieldOp::create(fb, fl, next);
        });
    return SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
  }

  /// Key k's score from its dot `s` for the token at position `pos` (the
  /// expansion's x generic): scaled, soft-capped, masked.
  Value score(OpBuilder &b, Location l, Value s, Value k, Value pos) {
    Value c = in.scale ? scalar(b, l, in.scale) : Value();
    std::optional<double> cap;
    if (auto a = op.getSoftcap())
      cap = a->convertToDouble();
    s = S.scaledScore(b, l, s, c, op.getScaleDivides(), cap);
    Value keep = S.keepKey(b, l, k, pos, (int64_t)op.getWindow().value_or(0));
    return arith::SelectOp::create(b, l, keep, s, S.negInf(b, l));
  }

  /// One gpu.launch of `warps` warps, kWarpsPerBlock a block, each running
  /// `fn` with its warp index; whole warps only (every lane of a warp runs
  /// the same loops, which the shuffles need).
  void launchWarps(OpBuilder &b, Location l, Value warps,
                   llvm::function_ref<void(OpBuilder &, Value)> fn) {
    Value one = idx(b, l, 1);
    Value blocks = arith::CeilDivUIOp::create(b, l, warps, idx(b, l, kWarpsPerBlock));
    auto launch = gpu::LaunchOp::create(b, l, blocks, one, one,
                                        idx(b, l, kWarp * kWarpsPerBlock), one, one);
    OpBuilder kb = OpBuilder::atBlockBegin(&launch.getBody().front());
    Value tid = launch.getThreadIds().x;
    Value w = arith::AddIOp::create(
        kb, l, arith::MulIOp::create(kb, l, launch.getBlockIds().x, idx(kb, l, kWarpsPerBlock)),
        arith::DivUIOp::create(kb, l, tid, idx(kb, l, kWarp)));
    lane = arith::RemUIOp::create(kb, l, tid, idx(kb, l, kWarp));
    Value mine = arith::CmpIOp::create(kb, l, arith::CmpIPredicate::ult, w, warps);
    scf::IfOp::create(kb, l, mine, [&](OpBuilder &wb, Location wl) {
      fn(wb, w);
      scf::YieldOp::create(wb, wl);
    });
    gpu::TerminatorOp::create(kb, l);
  }

  /// What a warp knows of its (token, query head) pair.
  struct Pair {
    Value t, h, hk, pos, req;
    /// The chunks with a key that is not masked: [first, upper).
    Value first, upper;
    /// This lane's value columns, clamped into range (the extra ones are
    /// computed and not stored).
    SmallVector<Value> cols;
  };

  Pair pairOf(OpBuilder &b, Value pair, Value L, Value chunks) {
    Location l = loc;
    Pair p;
    p.t = arith::DivUIOp::create(b, l, pair, idx(b, l, H));
    p.h = arith::RemUIOp::create(b, l, pair, idx(b, l, H));
    p.hk = arith::DivUIOp::create(b, l, p.h, idx(b, l, G));
    Value zero = idx(b, l, 0), one = idx(b, l, 1);
    p.pos = toIndex(b, l, load(b, l, in.positions, p.t));
    p.req = toIndex(b, l, load(b, l, in.request, p.t));
    // From the chunk holding key pos − W + 1 (window W) to the one holding
    // pos.
    Value cw = idx(b, l, C);
    p.first = zero;
    if (int64_t w = (int64_t)op.getWindow().value_or(0); w > 0) {
      Value after = arith::AddIOp::create(b, l, p.pos, one);
      Value late = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt, after, idx(b, l, w));
      Value start = arith::SubIOp::create(b, l, after, idx(b, l, w));
      p.first = arith::SelectOp::create(b, l, late, arith::DivUIOp::create(b, l, start, cw), zero);
    }
    p.upper = arith::MinUIOp::create(
        b, l, arith::AddIOp::create(b, l, arith::DivUIOp::create(b, l, p.pos, cw), one), chunks);
    for (int64_t c = 0; c < columns; ++c)
      p.cols.push_back(arith::MinUIOp::create(
          b, l, arith::AddIOp::create(b, l, lane, idx(b, l, c * kWarp)), idx(b, l, Dv - 1)));
    return p;
  }

  /// A chunk's statistics: its max m_j, s_j = Σ exp(x − m_j) and o_j (this
  /// lane's columns).
  struct Stats {
    Value m, s;
    SmallVector<Value> o;
  };

  /// Chunk j's statistics for pair `p`, every lane of the warp taking part.
  Stats chunkStats(OpBuilder &cb, const Pair &p, Value j, Value bs, Value L) {
    Location cl = loc;
    Value cw = idx(cb, cl, C), one = idx(cb, cl, 1);
    Value lastKey = arith::SubIOp::create(cb, cl, L, one);
    Value k0 = arith::MulIOp::create(cb, cl, j, cw);
    Value n = arith::MinUIOp::create(cb, cl, cw, arith::SubIOp::create(cb, cl, L, k0));
    // Each lane scores keys k0 + lane + 32s; a key past the chunk's end is
    // scored at a row in range and never folded.
    SmallVector<Value> keysOf, rows, x;
    SmallVector<std::pair<Value, Value>> at;
    for (int64_t s = 0; s < slots; ++s) {
      Value k = arith::AddIOp::create(cb, cl, k0,
                                      arith::AddIOp::create(cb, cl, lane, idx(cb, cl, s * kWarp)));
      Value kk = arith::MinUIOp::create(cb, cl, arith::MinUIOp::create(cb, cl, k, lastKey), p.pos);
      Value blk = toIndex(cb, cl, load(cb, cl, in.tables,
                                       {p.req, arith::DivUIOp::create(cb, cl, kk, bs).getResult()}));
      Value slot = arith::RemUIOp::create(cb, cl, kk, bs);
      keysOf.push_back(k);
      at.push_back({blk, slot});
      // The key's row of the value pool seen as [blocks · bs, Hk, Dv].
      rows.push_back(toI32(cb, cl, arith::AddIOp::create(
                                       cb, cl, arith::MulIOp::create(cb, cl, blk, bs), slot)));
    }
    SmallVector<Value> dot = dots(cb, cl, p.h, p.t, p.hk, at);
    for (int64_t s = 0; s < slots; ++s)
      x.push_back(score(cb, cl, dot[s], keysOf[s], p.pos));
    // m_j, then exp(x − m_j) once a key, then s_j and o_j.
    Stats st;
    st.m = chunkMax(cb, cl, n, x);
    SmallVector<Value> ps;
    for (int64_t s = 0; s < slots; ++s)
      ps.push_back(S.shiftedExp(cb, cl, x[s], st.m));
    std::tie(st.s, st.o) = sumAndValues(cb, cl, n, ps, rows, p.hk, p.cols);
    return st;
  }

  /// Chunk statistics kept between the two kernels of the split form: at
  /// `base`, m_j, s_j, then o_j's Dv columns.
  void storeStats(OpBuilder &b, const Stats &st, Value scratch, Value base) {
    Location l = loc;
    Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, lane, idx(b, l, 0));
    scf::IfOp::create(b, l, first, [&](OpBuilder &ib, Location il) {
      memref::StoreOp::create(ib, il, st.m, scratch, base);
      memref::StoreOp::create(ib, il, st.s, scratch,
                              ValueRange{arith::AddIOp::create(ib, il, base, idx(ib, il, 1))});
      scf::YieldOp::create(ib, il);
    });
    Value at = arith::AddIOp::create(b, l, base, idx(b, l, 2));
    for (int64_t c = 0; c < columns; ++c) {
      Value e = arith::AddIOp::create(b, l, lane, idx(b, l, c * kWarp));
      Value inRange = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, e, idx(b, l, Dv));
      scf::IfOp::create(b, l, inRange, [&](OpBuilder &ib, Location il) {
        memref::StoreOp::create(ib, il, st.o[c], scratch,
                                ValueRange{arith::AddIOp::create(ib, il, at, e)});
        scf::YieldOp::create(ib, il);
      });
    }
  }

  Stats loadStats(OpBuilder &b, const Pair &p, Value scratch, Value base) {
    Location l = loc;
    Stats st;
    st.m = load(b, l, scratch, base);
    st.s = load(b, l, scratch, arith::AddIOp::create(b, l, base, idx(b, l, 1)).getResult());
    Value at = arith::AddIOp::create(b, l, base, idx(b, l, 2));
    for (Value c : p.cols)
      st.o.push_back(load(b, l, scratch, arith::AddIOp::create(b, l, at, c).getResult()));
    return st;
  }

  /// (m, l, o) merged left to right from (−inf, 0, 0) with the statistics
  /// of chunks first .. upper − 1, each given by `stats`: the expansion's
  /// merge ops in its order.
  SmallVector<Value> mergeChunks(OpBuilder &b, const Pair &p,
                                 llvm::function_ref<Stats(OpBuilder &, Value)> stats) {
    Location l = loc;
    SmallVector<Value> init{S.negInf(b, l), S.cst(b, l, 0.0)};
    for (int64_t c = 0; c < columns; ++c)
      init.push_back(S.cst(b, l, 0.0));
    auto loop = scf::ForOp::create(
        b, l, p.first, p.upper, idx(b, l, 1), init,
        [&](OpBuilder &cb, Location cl, Value j, ValueRange acc) {
          Stats st = stats(cb, j);
          StatsBuilder::RowMerge r = S.mergeRow(cb, cl, acc[0], acc[1], st.m, st.s);
          SmallVector<Value> yield{r.max, r.l};
          for (int64_t c = 0; c < columns; ++c)
            yield.push_back(S.mergeColumn(cb, cl, acc[2 + c], r.alpha, st.o[c], r.beta, st.m));
          scf::YieldOp::create(cb, cl, yield);
        });
    return SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
  }

  /// y = o / l (0 for a row of no key when the op says so), stored.
  void finish(OpBuilder &b, const Pair &p, Value out, ArrayRef<Value> merged) {
    Location l = loc;
    Value zero = idx(b, l, 0);
    Value lsum = merged[1];
    for (int64_t c = 0; c < columns; ++c) {
      Value e = arith::AddIOp::create(b, l, lane, idx(b, l, c * kWarp));
      Value inRange = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, e, idx(b, l, Dv));
      scf::IfOp::create(b, l, inRange, [&](OpBuilder &ib, Location il) {
        Value y = arith::DivFOp::create(ib, il, merged[2 + c], lsum);
        if (op.getZeroEmptyRows()) {
          Value z = S.cst(ib, il, 0.0);
          Value empty = arith::CmpFOp::create(ib, il, arith::CmpFPredicate::OEQ, lsum, z);
          y = arith::SelectOp::create(ib, il, empty, z, y);
        }
        if (transposed)
          memref::StoreOp::create(ib, il, y, out, ValueRange{zero, p.t, p.h, e});
        else
          memref::StoreOp::create(ib, il, y, out, ValueRange{zero, p.h, p.t, e});
        scf::YieldOp::create(ib, il);
      });
    }
  }
};

} // namespace

std::string lockstep::pagedAttentionKernelRefusal(ls::PagedAttentionOp op, int64_t width,
                                                  int64_t maxChunk) {
  auto qt = op.getQuery().getType();
  auto rt = cast<RankedTensorType>(op.getResult().getType());
  if (op->hasAttr(kPlantAttr))
    return "a planted violation is built by the expansion";
  if (!isF32(op.getQuery()) || !isF32(op.getKeyPool()) || !isF32(op.getValuePool()) ||
      !rt.getElementType().isF32() || (op.getScale() && !isF32(op.getScale())) ||
      (op.getKeyScale() && !isF32(op.getKeyScale())))
    return "not f32";
  if (qt.getRank() != 4 || qt.getDimSize(0) != 1 || rt.getRank() != 4 ||
      qt.isDynamicDim(1) || qt.isDynamicDim(3) || op.getValue().getType().isDynamicDim(3))
    return "the query is not [1, H, T, D] with static H and D";
  int64_t D = qt.getDimSize(3), Dv = op.getValue().getType().getDimSize(3);
  if (D > maxChunk)
    return "the head size is chunked (the dot is not one fold)";
  if (width < 1 || ceilDiv(width, kWarp) > kMaxSlots || ceilDiv(Dv, kWarp) > kMaxSlots)
    return "more than 8 keys or value columns a lane";
  auto pt = op.getKeyPool().getType();
  int64_t mb = op.getBlockTables().getType().getDimSize(1), bs = pt.getDimSize(1);
  if (!ShapedType::isDynamic(mb) && !ShapedType::isDynamic(bs) && mb * bs <= width)
    return "the keys are one static chunk (folded whole, without a merge)";
  return "";
}

void lockstep::buildPagedAttentionKernel(RewriterBase &rw, ls::PagedAttentionOp op,
                                         int64_t width, SharedRequest &shared) {
  Kernel(rw, op, width).build(shared);
}
