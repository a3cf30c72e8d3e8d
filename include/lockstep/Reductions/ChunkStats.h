//===- ChunkStats.h - Chunk-local softmax statistics, shared ----*- C++ -*-===//
//
// The pieces of the contract's chunk-local statistics that softmax and
// attention share: exp(x - m) with the -inf convention, and the left-to-right
// merge weights. Also used by the GPU kernel of lockstep.paged_attention
// (lib/GPU/PagedAttentionKernel.cpp), which must build the same ops.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_REDUCTIONS_CHUNKSTATS_H
#define LOCKSTEP_REDUCTIONS_CHUNKSTATS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace lockstep {

struct StatsBuilder {
  mlir::RewriterBase &rw;
  mlir::Location loc;
  mlir::Type elt;
  mlir::MLIRContext *ctx;
  /// False only for a planted violation (--reduction-policy=plant-merge-no-skip),
  /// which the verifier must refuse: the merge then folds a chunk of padding
  /// only like any other.
  bool skipMasked = true;

  /// `v` of type `elt`: a float, or every lane of a vector (the CPU kernel
  /// of lockstep.paged_attention builds the same ops on vectors of tokens).
  mlir::Value cst(mlir::OpBuilder &b, mlir::Location l, double v) {
    mlir::Type scalar = mlir::getElementTypeOrSelf(elt);
    return constant(b, l, b.getFloatAttr(scalar, v));
  }
  mlir::Value negInf(mlir::OpBuilder &b, mlir::Location l) {
    mlir::Type scalar = mlir::getElementTypeOrSelf(elt);
    auto sem = &llvm::cast<mlir::FloatType>(scalar).getFloatSemantics();
    return constant(b, l, b.getFloatAttr(scalar, llvm::APFloat::getInf(*sem, true)));
  }
  mlir::Value constant(mlir::OpBuilder &b, mlir::Location l, mlir::FloatAttr a) {
    if (auto vt = llvm::dyn_cast<mlir::VectorType>(elt))
      return mlir::arith::ConstantOp::create(b, l, vt, mlir::DenseElementsAttr::get(vt, llvm::ArrayRef<mlir::Attribute>{a}));
    return mlir::arith::ConstantOp::create(b, l, elt, a);
  }
  mlir::Value isNegInf(mlir::OpBuilder &b, mlir::Location l, mlir::Value v) {
    return mlir::arith::CmpFOp::create(b, l, mlir::arith::CmpFPredicate::OEQ, v,
                                       negInf(b, l));
  }
  /// A tensor of `sizes` filled with `v`.
  mlir::Value fill(llvm::ArrayRef<mlir::OpFoldResult> sizes, mlir::Value v) {
    mlir::Value e = mlir::tensor::EmptyOp::create(rw, loc, sizes, elt);
    return mlir::linalg::FillOp::create(rw, loc, v, e).getResult(0);
  }
  /// exp(x - m), or 0 when m = -inf (a chunk of -inf only: every term 0).
  mlir::Value shiftedExp(mlir::OpBuilder &b, mlir::Location l, mlir::Value x,
                         mlir::Value m) {
    mlir::Value e = mlir::math::ExpOp::create(
        b, l, mlir::arith::SubFOp::create(b, l, x, m));
    return mlir::arith::SelectOp::create(b, l, isNegInf(b, l, m), cst(b, l, 0.0), e);
  }
  struct Weights {
    mlir::Value max, alpha, beta;
  };
  /// The merge of a running max `m` with a chunk's max `mj`: the new max,
  /// α = exp(m - max) and β = exp(mj - max), each 0 when its own max is -inf.
  Weights weights(mlir::OpBuilder &b, mlir::Location l, mlir::Value m, mlir::Value mj) {
    mlir::Value mn = mlir::arith::MaximumFOp::create(b, l, m, mj);
    mlir::Value alpha = shiftedExp(b, l, m, mn), beta = shiftedExp(b, l, mj, mn);
    alpha = mlir::arith::SelectOp::create(b, l, isNegInf(b, l, m), cst(b, l, 0.0), alpha);
    beta = mlir::arith::SelectOp::create(b, l, isNegInf(b, l, mj), cst(b, l, 0.0), beta);
    return {mn, alpha, beta};
  }
  /// One left-to-right merge step of (m, l, o) with a chunk's (mj, sj, oj),
  /// in two halves so that the weights are computed once per row, not once
  /// per value column: mergeRow gives the new max, l·α + sj·β and the
  /// weights α, β; mergeColumn gives o·α + oj·β with them. A chunk whose max
  /// is −inf (every key masked) leaves (m, l, o) exactly as they are, by a
  /// select, so that any number of masked chunks is an exact no-op (even for
  /// an o of −0.0, which o·1 + 0 would turn into +0.0).
  struct RowMerge {
    mlir::Value max, l, alpha, beta;
  };
  RowMerge mergeRow(mlir::OpBuilder &b, mlir::Location l, mlir::Value m, mlir::Value ls,
                    mlir::Value mj, mlir::Value sj) {
    Weights w = weights(b, l, m, mj);
    mlir::Value nl = blend(b, l, ls, w.alpha, sj, w.beta);
    if (!skipMasked)
      return {w.max, nl, w.alpha, w.beta};
    mlir::Value skip = isNegInf(b, l, mj);
    return {mlir::arith::SelectOp::create(b, l, skip, m, w.max),
            mlir::arith::SelectOp::create(b, l, skip, ls, nl), w.alpha, w.beta};
  }
  mlir::Value mergeColumn(mlir::OpBuilder &b, mlir::Location l, mlir::Value o,
                          mlir::Value alpha, mlir::Value oj, mlir::Value beta,
                          mlir::Value mj) {
    mlir::Value no = blend(b, l, o, alpha, oj, beta);
    if (!skipMasked)
      return no;
    return mlir::arith::SelectOp::create(b, l, isNegInf(b, l, mj), o, no);
  }
  /// A key's score before its mask, in the graph's order: the dot `s`
  /// scaled by `scale` when there is one (a product, or a division when
  /// `divides`), then soft-capped by `cap` when there is one (a division,
  /// Lockstep's tanh, a product). The CPU's expansion and the GPU kernel of
  /// lockstep.paged_attention both build it here, so the two are the same
  /// ops in the same order.
  mlir::Value scaledScore(mlir::OpBuilder &b, mlir::Location l, mlir::Value s,
                          mlir::Value scale, bool divides, std::optional<double> cap) {
    if (scale)
      s = divides ? mlir::arith::DivFOp::create(b, l, s, scale).getResult()
                  : mlir::arith::MulFOp::create(b, l, s, scale).getResult();
    if (cap) {
      mlir::Value c = cst(b, l, *cap);
      s = mlir::arith::DivFOp::create(b, l, s, c);
      s = mlir::math::TanhOp::create(b, l, s);
      s = mlir::arith::MulFOp::create(b, l, s, c);
    }
    return s;
  }
  /// Whether key `k` (an index) is kept for the query at key position
  /// `last`: k <= last, and with a window of `window` keys (0: none) also
  /// last - window < k, written k + window > last (no underflow).
  mlir::Value keepKey(mlir::OpBuilder &b, mlir::Location l, mlir::Value k, mlir::Value last,
                      int64_t window) {
    mlir::Value keep =
        mlir::arith::CmpIOp::create(b, l, mlir::arith::CmpIPredicate::ule, k, last);
    if (window > 0) {
      mlir::Value w = mlir::arith::ConstantIndexOp::create(b, l, window);
      mlir::Value inside = mlir::arith::CmpIOp::create(
          b, l, mlir::arith::CmpIPredicate::ugt, mlir::arith::AddIOp::create(b, l, k, w), last);
      keep = mlir::arith::AndIOp::create(b, l, keep, inside);
    }
    return keep;
  }
  /// acc·α + x·β: two products and a sum, no fma.
  mlir::Value blend(mlir::OpBuilder &b, mlir::Location l, mlir::Value acc,
                    mlir::Value alpha, mlir::Value x, mlir::Value beta) {
    // Built in sequence: argument evaluation order is unspecified in C++.
    mlir::Value a = mlir::arith::MulFOp::create(b, l, acc, alpha);
    mlir::Value c = mlir::arith::MulFOp::create(b, l, x, beta);
    return mlir::arith::AddFOp::create(b, l, a, c);
  }
};

} // namespace lockstep

#endif
