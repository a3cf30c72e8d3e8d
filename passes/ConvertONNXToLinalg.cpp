//===- ConvertONNXToLinalg.cpp - The convert-onnx-to-linalg pass ----------===//
#include "lockstep/Conversion/ONNXToLinalg.h"
#include "lockstep/Passes/Passes.h"

namespace lockstep {
#define GEN_PASS_DEF_CONVERTONNXTOLINALG
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

struct ConvertONNXToLinalgPass
    : public lockstep::impl::ConvertONNXToLinalgBase<ConvertONNXToLinalgPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    LoweringState s(func);
    if (failed(s.init()))
      return signalPassFailure();
    Block &body = func.getBody().front();
    OpBuilder &b = s.builder();

    // Weights become trailing arguments.
    for (Operation &op : body.getOperations()) {
      auto w = dyn_cast<WeightOp>(op);
      if (!w)
        continue;
      RankedTensorType t = s.plainType(w.getOutput());
      unsigned idx = func.getNumArguments();
      if (failed(func.insertArgument(idx, t, {}, w.getLoc())))
        return signalPassFailure();
      NamedAttrList info;
      info.append("name", w.getNameAttr());
      info.append("file", w.getFileAttr());
      info.append("offset", w.getOffsetAttr());
      info.append("length", w.getLengthAttr());
      func.setArgAttr(idx, "lockstep.weight", info.getDictionary(&getContext()));
      s.set(w.getOutput(), func.getArgument(idx));
    }

    SmallVector<Operation *> lowered;
    for (Operation &op : body.getOperations()) {
      if (isa<WeightOp>(op)) {
        lowered.push_back(&op);
        continue;
      }
      if (op.hasTrait<OpTrait::IsTerminator>()) {
        for (OpOperand &use : op.getOpOperands()) {
          Value v = s.get(use.get());
          if (!v && !isa<BlockArgument>(use.get())) {
            op.emitError("a returned value was not lowered");
            return signalPassFailure();
          }
          if (v)
            use.set(v);
        }
        continue;
      }
      // Block arguments map to themselves.
      for (Value v : op.getOperands())
        if (isa<BlockArgument>(v) && !s.get(v))
          s.set(v, v);
      b.setInsertionPoint(&op);
      if (isa<ls::AttentionOp, ls::PagedAttentionOp>(op)) {
        // Carried over with plain types; lockstep-canonical-reductions
        // expands it.
        Operation *copy = b.clone(op);
        for (OpOperand &o : copy->getOpOperands())
          o.set(s.get(o.get()));
        copy->getResult(0).setType(s.plainType(op.getResult(0)));
        s.set(op.getResult(0), copy->getResult(0));
        lowered.push_back(&op);
        continue;
      }
      std::optional<LogicalResult> r = lowerShapeOp(&op, s);
      if (!r) r = lowerElementwise(&op, s);
      if (!r) r = lowerContraction(&op, s);
      if (!r) r = lowerReduction(&op, s);
      if (!r) r = lowerMovement(&op, s);
      if (!r) {
        op.emitError("lowering of '") << op.getName() << "' is not supported yet";
        return signalPassFailure();
      }
      if (failed(*r))
        return signalPassFailure();
      lowered.push_back(&op);
    }
    for (Operation *op : llvm::reverse(lowered)) {
      op->dropAllUses();
      op->erase();
    }
    // What the lowering made and nothing reads: a Transpose that a MatMul
    // reads through its map, say (lowerMatMul).
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body.getOperations())))
      if (isOpTriviallyDead(&op))
        op.erase();
    // Strip the encodings from the arguments, then fix the signature.
    for (BlockArgument arg : func.getArguments())
      if (auto t = dyn_cast<RankedTensorType>(arg.getType()))
        arg.setType(RankedTensorType::get(t.getShape(), t.getElementType()));
    func.setType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                   body.getTerminator()->getOperandTypes()));
  }
};

} // namespace
