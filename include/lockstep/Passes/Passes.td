//===- Passes.td - Lockstep passes -------------------------*- tablegen -*-===//
#ifndef LOCKSTEP_PASSES
#define LOCKSTEP_PASSES

include "mlir/Pass/PassBase.td"

def ONNXInferShapes : Pass<"onnx-infer-shapes", "mlir::func::FuncOp"> {
  let summary = "Infer element types and symbolic shapes of onnx ops";
  let description = [{
    Walks the ops of a function in order and computes, for every result, its
    element type and its dims as symbolic expressions over the named dims of
    the graph inputs (batch, sequence, past length, ...). The values of small
    integer tensors (shape tensors) are tracked too, through Shape, Gather,
    Unsqueeze, Concat, Slice, arithmetic, Range, Reshape, Expand and Where, so
    that shapes computed at run time by exporter subgraphs fold to
    expressions. Results get ranked types with an `#onnx.dims` encoding where
    any dim is symbolic; integer results whose values are known get an
    `onnx.sym` attribute. The function's result types are updated.

    A result whose rank or dims cannot be determined is an error located at
    the op.

    Example: with `%x : tensor<?x?xf32, #onnx.dims<[b, s]>>`,
    `"onnx.Shape"(%x)` gets `{onnx.sym = #onnx.dims<[b, s]>}` and a
    `"onnx.Reshape"(%x, %shape)` whose shape is `Concat(Shape(x)[0], [-1])`
    gets type `tensor<?x?xf32, #onnx.dims<[b, s]>>`.
  }];
  let dependentDialects = ["::lockstep::onnxir::ONNXDialect"];
}

def ONNXFoldShapeConstants : Pass<"onnx-fold-shape-constants", "mlir::func::FuncOp"> {
  let summary = "Replace shape computations with known values by constants";
  let description = [{
    After onnx-infer-shapes, an integer op whose `onnx.sym` values are all
    constants is replaced by an `onnx.Constant`, and ops left without uses are
    erased. Shape subgraphs whose values are symbolic stay, annotated.

    Example: `"onnx.Shape"(%w) {onnx.sym = #onnx.dims<[64, 16]>}` becomes
    `"onnx.Constant"() {value = dense<[64, 16]> : tensor<2xi64>}`.
  }];
  let dependentDialects = ["::lockstep::onnxir::ONNXDialect"];
}

#endif
