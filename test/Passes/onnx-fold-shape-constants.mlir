// RUN: lockstep-opt %s --split-input-file --onnx-infer-shapes --onnx-fold-shape-constants | FileCheck %s

// A shape computation of constant dims becomes one constant, and the ops that
// computed it go.
// CHECK-LABEL: func.func @static_shape
// CHECK-NOT: "onnx.Shape"
// CHECK-NOT: "onnx.Concat"
// CHECK: %[[C:.*]] = "onnx.Constant"() <{value = dense<[8, 2, 4]> : tensor<3xi64>}>
// CHECK: "onnx.Reshape"(%{{.*}}, %[[C]])
func.func @static_shape(%x: tensor<8x8xf32>) -> tensor<*xf32> {
  %shape = "onnx.Shape"(%x) : (tensor<8x8xf32>) -> tensor<*xi64>
  %i0 = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<*xi64>
  %d0 = "onnx.Gather"(%shape, %i0) {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %rest = "onnx.Constant"() {value = dense<[2, 4]> : tensor<2xi64>} : () -> tensor<*xi64>
  %target = "onnx.Concat"(%d0, %rest) {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %r = "onnx.Reshape"(%x, %target) : (tensor<8x8xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// Symbolic values stay as ops, annotated; only the constant parts fold.
// CHECK-LABEL: func.func @symbolic_shape
// CHECK: "onnx.Shape"{{.*}}{onnx.sym = #onnx.dims<[b, 8]>}
// CHECK: "onnx.Reshape"
func.func @symbolic_shape(%x: tensor<?x8xf32, #onnx.dims<[b, 8]>>) -> tensor<*xf32> {
  %shape = "onnx.Shape"(%x) : (tensor<?x8xf32, #onnx.dims<[b, 8]>>) -> tensor<*xi64>
  %r = "onnx.Reshape"(%x, %shape) : (tensor<?x8xf32, #onnx.dims<[b, 8]>>, tensor<*xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// Ops whose results are unused are erased.
// CHECK-LABEL: func.func @dead
// CHECK-NOT: onnx.Exp
// CHECK: return
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "onnx.Exp"(%x) : (tensor<4xf32>) -> tensor<*xf32>
  return %x : tensor<4xf32>
}
