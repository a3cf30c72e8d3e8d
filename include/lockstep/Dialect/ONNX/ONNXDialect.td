//===- ONNXDialect.td - The onnx dialect -------------------*- tablegen -*-===//
#ifndef LOCKSTEP_ONNX_DIALECT
#define LOCKSTEP_ONNX_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def ONNX_Dialect : Dialect {
  let name = "onnx";
  let cppNamespace = "::lockstep::onnxir";
  let summary = "ONNX operators as imported from a model, before lowering";
  let description = [{
    One op per ONNX operator, with ONNX's own input order and attribute names.
    Inputs that ONNX moved from attributes to inputs between opsets 13 and 18
    (axes of the reductions, Squeeze and Unsqueeze, split sizes of Split) are
    accepted in both forms. Tensors carry symbolic dims in a `#onnx.dims`
    encoding once shapes are inferred. Weights are `onnx.Weight` ops that name
    an initializer and where its bytes live; their data never appears in IR.

    Example:

    ```mlir
    %0 = onnx.Weight {name = "embed", dtype = "float32", ...} : tensor<512x64xf32>
    %1 = "onnx.Gather"(%0, %ids) {axis = 0 : i64}
        : (tensor<512x64xf32>, tensor<?x?xi64, #onnx.dims<[batch, seq]>>)
        -> tensor<?x?x64xf32, #onnx.dims<[batch, seq, 64]>>
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

#endif
