//===- ConcatSlices.cpp - A Concat of slices of one tensor as one gather --===//
//
// RoPE's rotate-half, as the exporters write it: Concat(Neg(Slice(x, h..2h)),
// Slice(x, 0..h)) along the last axis. Lowered piece by piece it is a
// negation into a new tensor and two copies into the result: three passes
// over memory, and on a GPU three kernels a projection. Here it is one
// linalg.generic that reads each output element from its element of x
// (tensor.extract at the index shifted by its piece's start), negated for a
// piece under a Neg: the same values (a copy and arith.negf, as the Neg's
// own lowering, are exact), one op, which lockstep-fuse-elementwise can
// then fuse with the rotation's products and sum.
//
// It applies to a Concat every input of which is a Slice of one tensor
// along the concat axis only (static starts, unit steps, every other dim
// whole), each under at most one Neg, of floats; any other Concat is
// lowered piece by piece.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Conversion/ONNXToLinalg.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

struct Piece {
  int64_t start, length; // along the axis, in the source
  bool negated;
};

} // namespace

Value lockstep::concatOfSlices(Operation *concat, LoweringState &s) {
  auto op = dyn_cast<ConcatOp>(concat);
  if (!op)
    return {};
  SmallVector<DimExpr> out = s.dims(op.getResult());
  int64_t rank = out.size(), axis = (int64_t)op.getAxis();
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank || op.getInputs().size() < 2)
    return {};
  auto elt = dyn_cast<FloatType>(s.plainType(op.getResult()).getElementType());
  if (!elt)
    return {};
  Value source;
  SmallVector<Piece> pieces;
  for (Value in : op.getInputs()) {
    Piece p{0, 0, false};
    Value sliced = in;
    if (auto neg = in.getDefiningOp<NegOp>()) {
      p.negated = true;
      sliced = neg.getX();
    }
    auto slice = sliced.getDefiningOp<SliceOp>();
    auto lowered = slice ? s.get(sliced).getDefiningOp<tensor::ExtractSliceOp>()
                         : tensor::ExtractSliceOp();
    if (!lowered || (source && lowered.getSource() != source))
      return {};
    source = lowered.getSource();
    SmallVector<DimExpr> have = s.dims(sliced), whole = s.dims(slice.getData());
    if ((int64_t)have.size() != rank || (int64_t)whole.size() != rank)
      return {};
    for (int64_t d = 0; d < rank; ++d) {
      int64_t offset = lowered.getStaticOffsets()[d], stride = lowered.getStaticStrides()[d];
      if (stride != 1 || ShapedType::isDynamic(offset))
        return {};
      if (d != axis && (offset != 0 || !(have[d] == whole[d])))
        return {};
    }
    std::optional<int64_t> length = have[axis].getConstant();
    if (!length)
      return {};
    p.start = lowered.getStaticOffsets()[axis];
    p.length = *length;
    if (p.length > 0)
      pieces.push_back(p);
  }
  if (pieces.empty())
    return {};
  bool anyNegated = llvm::any_of(pieces, [](const Piece &p) { return p.negated; });
  return buildElementwise(
      s, op.getLoc(), out, elt, {}, {}, [&](OpBuilder &b, Location l, ValueRange) -> Value {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rank; ++d)
          at.push_back(linalg::IndexOp::create(b, l, d));
        Value a = at[axis], from, negated;
        int64_t offset = 0;
        for (const Piece &p : pieces) {
          // Output index a of this piece reads source index a + start - offset.
          Value shifted = arith::AddIOp::create(
              b, l, a, arith::ConstantIndexOp::create(b, l, p.start - offset));
          Value neg = arith::ConstantIntOp::create(b, l, p.negated, 1);
          if (!from) {
            from = shifted;
            negated = neg;
          } else {
            Value here = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, a,
                                               arith::ConstantIndexOp::create(b, l, offset));
            from = arith::SelectOp::create(b, l, here, shifted, from);
            negated = arith::SelectOp::create(b, l, here, neg, negated);
          }
          offset += p.length;
        }
        at[axis] = from;
        Value v = tensor::ExtractOp::create(b, l, source, at);
        if (!anyNegated)
          return v;
        return arith::SelectOp::create(b, l, negated, arith::NegFOp::create(b, l, v), v);
      });
}
