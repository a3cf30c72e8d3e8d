//===- InferShapes.cpp - The onnx-infer-shapes pass -----------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/Shape/ShapeInference.h"

#include "mlir/IR/Builders.h"

namespace lockstep {
#define GEN_PASS_DEF_ONNXINFERSHAPES
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

struct ONNXInferShapesPass
    : public lockstep::impl::ONNXInferShapesBase<ONNXInferShapesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    llvm::DenseMap<Value, SymTensor> known;
    auto lookup = [&](Value v) -> const SymTensor * {
      auto it = known.find(v);
      if (it != known.end())
        return &it->second;
      auto dims = getSymbolicDims(v.getType());
      if (!dims)
        return nullptr;
      SymTensor t{cast<ShapedType>(v.getType()).getElementType(), *dims,
                  std::nullopt};
      if (Operation *def = v.getDefiningOp())
        if (auto sym = def->getAttrOfType<DimsAttr>("onnx.sym")) {
          t.values.emplace();
          for (auto &e : sym.getExprs())
            t.values->push_back(e);
        }
      return &known.try_emplace(v, std::move(t)).first->second;
    };

    for (Operation &op : func.getBody().getOps()) {
      if (!isa<ONNXNodeOpInterface, WeightOp>(op))
        continue;
      SmallVector<SymTensor> results;
      std::string error;
      if (failed(inferSymbolicShapes(&op, lookup, results, error))) {
        op.emitError("cannot infer the shape of the result: ") << error;
        return signalPassFailure();
      }
      if (results.size() != op.getNumResults()) {
        op.emitError("shape inference gave ")
            << results.size() << " results for " << op.getNumResults();
        return signalPassFailure();
      }
      for (auto [res, t] : llvm::zip(op.getResults(), results)) {
        res.setType(getSymbolicTensorType(t.elementType, t.dims));
        known[res] = t;
      }
      if (op.getNumResults() == 1 && !isa<ConstantOp>(op)) {
        auto all = results[0].allValues();
        if (all)
          op.setAttr("onnx.sym", DimsAttr::get(&getContext(), *all));
        else
          op.removeAttr("onnx.sym");
      }
    }
    // The function returns what its terminator returns.
    Operation *ret = func.getBody().back().getTerminator();
    func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                   ret->getOperandTypes()));
  }
};

} // namespace
