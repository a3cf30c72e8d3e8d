//===- OutputsToArguments.cpp - The lockstep-outputs-to-args pass ---------===//
#include "lockstep/Passes/Passes.h"

namespace lockstep {
#define GEN_PASS_DEF_OUTPUTSTOARGUMENTS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;

namespace {

struct OutputsToArgumentsPass
    : public lockstep::impl::OutputsToArgumentsBase<OutputsToArgumentsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    OpBuilder b(ret);
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t) {
        ret.emitError("result ") << i << " is not a ranked tensor";
        return signalPassFailure();
      }
      unsigned idx = func.getNumArguments();
      if (failed(func.insertArgument(idx, t, {}, ret.getLoc())))
        return signalPassFailure();
      if (DictionaryAttr attrs = func.getResultAttrDict(i))
        func.setArgAttrs(idx, attrs);
      bufferization::MaterializeInDestinationOp::create(
          b, ret.getLoc(), v, func.getArgument(idx));
    }
    func::ReturnOp::create(b, ret.getLoc());
    ret.erase();
    func.setType(FunctionType::get(&getContext(),
                                   func.getBody().getArgumentTypes(), {}));
    func.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
    // The entry wrapper calls main through its C interface.
    func->setAttr("llvm.emit_c_interface", UnitAttr::get(&getContext()));
  }
};

} // namespace
