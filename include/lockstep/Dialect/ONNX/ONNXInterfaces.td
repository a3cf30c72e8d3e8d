//===- ONNXInterfaces.td - onnx op interfaces --------------*- tablegen -*-===//
#ifndef LOCKSTEP_ONNX_INTERFACES
#define LOCKSTEP_ONNX_INTERFACES

include "mlir/IR/OpBase.td"

def ONNX_NodeOpInterface : OpInterface<"ONNXNodeOpInterface"> {
  let cppNamespace = "::lockstep::onnxir";
  let description = [{
    Implemented by every op that stands for an ONNX operator. It gives the
    importer the number of formal ONNX inputs, so that absent optional inputs
    in the middle of the input list can be encoded.
  }];
  let methods = [
    StaticInterfaceMethod<"The number of formal inputs of the operator.",
      "unsigned", "getNumOnnxInputs", (ins), [{}],
      [{ return ConcreteOp::kNumOnnxInputs; }]>,
  ];
}

#endif
