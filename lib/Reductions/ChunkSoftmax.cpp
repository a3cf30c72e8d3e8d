//===- ChunkSoftmax.cpp - Softmax with chunk-local statistics -------------===//
//
// The contract's softmax over an axis of length L with chunk width C:
//
//   for each chunk j:  m_j = max x,  s_j = Σ exp(x - m_j)  (0 when m_j = -inf)
//   merged left to right from (m, l) = (-inf, +0):
//     m' = max(m, m_j)
//     α  = exp(m - m')  (0 when m = -inf),  β = exp(m_j - m')  (0 when m_j = -inf)
//     l' = l·α + s_j·β  (two products and a sum, no fma)
//   y = exp(x - m) / l
//
// The first merge gives (m_0, s_0) exactly, so a single chunk is the usual
// max, exp, sum, divide. Chunks are [jC, jC + C) with a tail [floor(L/C)·C, L)
// as in ChunkGeneric.cpp. The sums are marked partial, tail or whole; the
// merge over j is marked combine; the maxima are exact and unmarked.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Reductions/Chunking.h"
#include "lockstep/Reductions/ChunkStats.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace lockstep;

namespace {

using Iter = utils::IteratorType;

struct SoftmaxBuilder : StatsBuilder {
  /// One merge of (m, l) with the chunk statistics (mj, sj).
  std::pair<Value, Value> merge(OpBuilder &b, Location l, Value m, Value lsum,
                                Value mj, Value sj) {
    Weights w = weights(b, l, m, mj);
    return {w.max, blend(b, l, lsum, w.alpha, sj, w.beta)};
  }
  AffineMap dropDim(unsigned n, unsigned d) {
    SmallVector<AffineExpr> e;
    for (unsigned i = 0; i < n; ++i)
      if (i != d)
        e.push_back(getAffineDimExpr(i, ctx));
    return AffineMap::get(n, 0, e, ctx);
  }
  SmallVector<OpFoldResult> without(ArrayRef<OpFoldResult> s, unsigned d) {
    SmallVector<OpFoldResult> r(s);
    r.erase(r.begin() + d);
    return r;
  }
  /// The max and the shifted-exp sum of `x` over its dim `d` (the chunk's
  /// elements); the sum is marked with `width` and `role`.
  std::pair<Value, Value> stats(Value x, unsigned d, int64_t width, StringRef role) {
    unsigned n = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<OpFoldResult> sizes = without(tensor::getMixedSizes(rw, loc, x), d);
    SmallVector<Iter> iters(n, Iter::parallel);
    iters[d] = Iter::reduction;
    AffineMap id = AffineMap::getMultiDimIdentityMap(n, ctx), drop = dropDim(n, d);
    Value mInit = fill(sizes, negInf(rw, loc));
    Value m = linalg::GenericOp::create(
                  rw, loc, mInit.getType(), ValueRange{x}, ValueRange{mInit},
                  SmallVector<AffineMap>{id, drop}, iters,
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    linalg::YieldOp::create(b, l, ValueRange{arith::MaximumFOp::create(b, l, a[1], a[0])});
                  })
                  .getResult(0);
    Value sInit = fill(sizes, cst(rw, loc, 0.0));
    auto s = linalg::GenericOp::create(
        rw, loc, sInit.getType(), ValueRange{x, m}, ValueRange{sInit},
        SmallVector<AffineMap>{id, drop, drop}, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value e = shiftedExp(b, l, a[0], a[1]);
          linalg::YieldOp::create(b, l, ValueRange{arith::AddFOp::create(b, l, a[2], e)});
        });
    s->setAttr(kChunkWidthAttr, rw.getI64IntegerAttr(width));
    s->setAttr(kChunkRoleAttr, rw.getStringAttr(role));
    return {m, s.getResult(0)};
  }
};

} // namespace

FailureOr<Value> lockstep::chunkSoftmax(RewriterBase &rw, linalg::SoftmaxOp op,
                                        int64_t C) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  auto xt = cast<RankedTensorType>(x.getType());
  SoftmaxBuilder B{{rw, loc, xt.getElementType(), op.getContext()}};
  unsigned d = op.getDimension(), n = xt.getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rw, loc, x);
  if (xt.isDynamicDim(d)) // unfolded: the verifier traces chunk counts to it
    sizes[d] = tensor::DimOp::create(rw, loc, x, d).getResult();
  OpFoldResult L = sizes[d];
  std::optional<int64_t> Ls = getConstantIntValue(L);

  Value m, l;
  if ((Ls && *Ls <= C) || C <= 0) {
    std::tie(m, l) = B.stats(x, d, Ls ? *Ls : 0, "whole");
  } else {
    ChunkSplit split = splitLength(rw, loc, L, C);
    bool divisible = split.divisible;
    OpFoldResult nFull = split.whole, lFull = split.covered;
    SmallVector<OpFoldResult> zeros(n, rw.getIndexAttr(0)), ones(n, rw.getIndexAttr(1));
    Value full = x;
    if (!divisible) {
      SmallVector<OpFoldResult> fs = sizes;
      fs[d] = lFull;
      full = tensor::ExtractSliceOp::create(rw, loc, x, zeros, fs, ones);
    }
    Value chunks = expandChunks(rw, loc, full, sizes, d, nFull, C);
    // Per chunk statistics over the inner dim d + 1: [.., nFull, ..].
    auto [mj, sj] = B.stats(chunks, d + 1, C, "partial");
    // Merged over j (dim d), left to right.
    SmallVector<OpFoldResult> statSizes = B.without(sizes, d);
    Value mInit = B.fill(statSizes, B.negInf(rw, loc));
    Value lInit = B.fill(statSizes, B.cst(rw, loc, 0.0));
    SmallVector<Iter> iters(n, Iter::parallel);
    iters[d] = Iter::reduction;
    AffineMap id = AffineMap::getMultiDimIdentityMap(n, op.getContext()),
              drop = B.dropDim(n, d);
    auto merged = linalg::GenericOp::create(
        rw, loc, TypeRange{mInit.getType(), lInit.getType()}, SmallVector<Value>{mj, sj},
        SmallVector<Value>{mInit, lInit}, SmallVector<AffineMap>{id, id, drop, drop}, iters,
        [&](OpBuilder &b, Location bl, ValueRange a) {
          auto [mn, ln] = B.merge(b, bl, a[2], a[3], a[0], a[1]);
          linalg::YieldOp::create(b, bl, SmallVector<Value>{mn, ln});
        });
    merged->setAttr(kChunkWidthAttr, rw.getI64IntegerAttr(C));
    merged->setAttr(kChunkRoleAttr, rw.getStringAttr("combine"));
    m = merged.getResult(0);
    l = merged.getResult(1);
    if (!divisible) {
      SmallVector<OpFoldResult> offs = zeros, ts = sizes;
      offs[d] = lFull;
      ts[d] = split.tail(rw, loc, L);
      Value tailX = tensor::ExtractSliceOp::create(rw, loc, x, offs, ts, ones);
      auto [mt, st] = B.stats(tailX, d, C, "tail");
      unsigned sr = n - 1;
      AffineMap sid = AffineMap::getMultiDimIdentityMap(sr, op.getContext());
      auto fin = linalg::GenericOp::create(
          rw, loc, TypeRange{m.getType(), l.getType()}, SmallVector<Value>{mt, st},
          SmallVector<Value>{m, l}, SmallVector<AffineMap>(4, sid),
          SmallVector<Iter>(sr, Iter::parallel),
          [&](OpBuilder &b, Location bl, ValueRange a) {
            auto [mn, ln] = B.merge(b, bl, a[2], a[3], a[0], a[1]);
            linalg::YieldOp::create(b, bl, SmallVector<Value>{mn, ln});
          });
      m = fin.getResult(0);
      l = fin.getResult(1);
    }
  }
  AffineMap id = AffineMap::getMultiDimIdentityMap(n, op.getContext()),
            drop = B.dropDim(n, d);
  Value out = op.getOutput();
  auto y = linalg::GenericOp::create(
      rw, loc, out.getType(), ValueRange{x, m, l}, ValueRange{out},
      SmallVector<AffineMap>{id, drop, drop, id}, SmallVector<Iter>(n, Iter::parallel),
      [&](OpBuilder &b, Location bl, ValueRange a) {
        Value e = math::ExpOp::create(b, bl, arith::SubFOp::create(b, bl, a[0], a[1]));
        linalg::YieldOp::create(b, bl, ValueRange{arith::DivFOp::create(b, bl, e, a[2])});
      });
  return y.getResult(0);
}
