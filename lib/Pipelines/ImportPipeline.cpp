//===- ImportPipeline.cpp - From an imported module to the onnx form ------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Pass/PassManager.h"

void lockstep::buildImportPipeline(mlir::OpPassManager &pm) {
  pm.addNestedPass<mlir::func::FuncOp>(createONNXInferShapes());
  pm.addNestedPass<mlir::func::FuncOp>(createONNXFoldShapeConstants());
}
