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
      if (llvm::any_of(results, [](const SymTensor &t) {
            auto bad = [](const DimExpr &e) { return e.overflowed(); };
            return llvm::any_of(t.dims, bad) ||
                   (t.values && llvm::any_of(*t.values, [&](auto &v) {
                      return v && bad(*v);
                    }));
          })) {
        op.emitError("cannot infer the shape of the result: a dim or shape "
                     "value overflows int64");
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
    if (failed(checkDeclaredShapes(func)))
      signalPassFailure();
  }

  /// Compares the inferred result shapes with the shapes the model declares
  /// for its outputs (`onnx.declared_shape`, -1 for a symbolic dim).
  LogicalResult checkDeclaredShapes(func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto declared =
          func.getResultAttrOfType<DenseI64ArrayAttr>(i, "onnx.declared_shape");
      auto dims = getSymbolicDims(func.getResultTypes()[i]);
      if (!declared || !dims)
        continue;
      auto name = func.getResultAttrOfType<StringAttr>(i, "onnx.name");
      std::string what =
          "graph output '" + (name ? name.str() : std::to_string(i)) + "'";
      if (declared.size() != (int64_t)dims->size())
        return func.emitError(what) << " is declared with rank "
                                    << declared.size() << " but has rank "
                                    << dims->size();
      for (auto [j, d] : llvm::enumerate(declared.asArrayRef())) {
        auto inferred = (*dims)[j].getConstant();
        if (d < 0 || (inferred && *inferred == d))
          continue;
        if (inferred)
          return func.emitError(what) << " is declared with dim " << j << " = "
                                      << d << " but it is " << *inferred;
        func.emitWarning(what) << " is declared with dim " << j << " = " << d
                               << " but it is " << (*dims)[j].str();
      }
    }
    return success();
  }
};

} // namespace
