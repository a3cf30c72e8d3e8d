//===- FoldShapeConstants.cpp - The onnx-fold-shape-constants pass --------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace lockstep {
#define GEN_PASS_DEF_ONNXFOLDSHAPECONSTANTS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

/// The constant values of `sym`, when every one is a constant.
std::optional<SmallVector<int64_t>> constantValues(DimsAttr sym) {
  SmallVector<int64_t> out;
  for (const DimExpr &e : sym.getExprs()) {
    auto k = e.getConstant();
    if (!k)
      return std::nullopt;
    out.push_back(*k);
  }
  return out;
}

struct ONNXFoldShapeConstantsPass
    : public lockstep::impl::ONNXFoldShapeConstantsBase<
          ONNXFoldShapeConstantsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    OpBuilder b(&getContext());
    SmallVector<Operation *> folded;
    func.walk([&](Operation *op) {
      auto sym = op->getAttrOfType<DimsAttr>("onnx.sym");
      if (!sym || op->getNumResults() != 1)
        return;
      auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      auto vals = constantValues(sym);
      if (!type || !type.hasStaticShape() || !vals ||
          type.getNumElements() != (int64_t)vals->size())
        return;
      Type elt = type.getElementType();
      auto intTy = dyn_cast<IntegerType>(elt);
      if (!intTy)
        return;
      SmallVector<APInt> ints;
      for (int64_t v : *vals)
        ints.push_back(APInt(intTy.getWidth(), v, /*isSigned=*/intTy.getWidth() > 1));
      b.setInsertionPoint(op);
      auto cst = ConstantOp::create(b, op->getLoc(), type,
                                    DenseElementsAttr::get(type, ints));
      op->getResult(0).replaceAllUsesWith(cst);
      folded.push_back(op);
    });
    // Erase ops left without uses, last first, so that whole shape
    // subgraphs go.
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().getOps())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (isa<ONNXNodeOpInterface, WeightOp>(op) && op->use_empty())
        op->erase();
  }
};

} // namespace
