// RUN: lockstep-opt %s --split-input-file --onnx-infer-shapes --verify-diagnostics | FileCheck %s

// Dims of graph inputs flow through elementwise ops; a shape computed by
// Shape/Gather/Concat folds to symbolic values, and Reshape's -1 is solved by
// polynomial division.
// CHECK-LABEL: func.func @reshape_from_shape
// CHECK: "onnx.Shape"{{.*}}{onnx.sym = #onnx.dims<[b, s, 64]>}
// CHECK: "onnx.Gather"{{.*}}{onnx.sym = #onnx.dims<[b]>}
// CHECK: "onnx.Concat"{{.*}}{onnx.sym = #onnx.dims<[b, -1, 16]>}
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x?x16xf32, #onnx.dims<[b, 4*s, 16]>>
// CHECK: return {{.*}} : tensor<?x?x16xf32, #onnx.dims<[b, 4*s, 16]>>
func.func @reshape_from_shape(%x: tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>) -> tensor<*xf32> {
  %a = "onnx.Add"(%x, %x) : (tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>, tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>) -> tensor<*xf32>
  %shape = "onnx.Shape"(%a) : (tensor<*xf32>) -> tensor<*xi64>
  %i0 = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<*xi64>
  %b = "onnx.Gather"(%shape, %i0) {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %rest = "onnx.Constant"() {value = dense<[-1, 16]> : tensor<2xi64>} : () -> tensor<*xi64>
  %target = "onnx.Concat"(%b, %rest) {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %r = "onnx.Reshape"(%a, %target) : (tensor<*xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// The KV-cache concat gives past + seq; attention scores against it, and a
// causal mask built with Range over the total length.
// CHECK-LABEL: func.func @kv_concat
// CHECK: "onnx.Concat"{{.*}} -> tensor<?x4x?x16xf32, #onnx.dims<[b, 4, p + s, 16]>>
// CHECK: "onnx.Transpose"{{.*}} -> tensor<?x4x16x?xf32, #onnx.dims<[b, 4, 16, p + s]>>
// CHECK: "onnx.MatMul"{{.*}} -> tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, p + s]>>
// CHECK: "onnx.Range"{{.*}} -> tensor<?xi64, #onnx.dims<[p + s]>>
func.func @kv_concat(%past: tensor<?x4x?x16xf32, #onnx.dims<[b, 4, p, 16]>>,
                     %new: tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>)
    -> (tensor<*xf32>, tensor<*xi64>) {
  %k = "onnx.Concat"(%past, %new) {axis = 2 : i64} : (tensor<?x4x?x16xf32, #onnx.dims<[b, 4, p, 16]>>, tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>) -> tensor<*xf32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<*xf32>) -> tensor<*xf32>
  %scores = "onnx.MatMul"(%new, %kt) : (tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>, tensor<*xf32>) -> tensor<*xf32>
  %shape = "onnx.Shape"(%k) {start = 2 : i64, end = 3 : i64} : (tensor<*xf32>) -> tensor<*xi64>
  %zero = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<*xi64>
  %one = "onnx.Constant"() {value = dense<1> : tensor<i64>} : () -> tensor<*xi64>
  %axes = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<*xi64>
  %total = "onnx.Squeeze"(%shape, %axes) : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %pos = "onnx.Range"(%zero, %total, %one) : (tensor<*xi64>, tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  return %scores, %pos : tensor<*xf32>, tensor<*xi64>
}

// -----

// Slice with an INT64_MAX end and a negative start, against a symbolic dim.
// CHECK-LABEL: func.func @slice_last
// CHECK: "onnx.Slice"{{.*}} -> tensor<?x1x64xf32, #onnx.dims<[b, 1, 64]>>
// CHECK: "onnx.Slice"{{.*}} -> tensor<?x?x32xf32, #onnx.dims<[b, s, 32]>>
func.func @slice_last(%x: tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>) -> (tensor<*xf32>, tensor<*xf32>) {
  %start = "onnx.Constant"() {value = dense<-1> : tensor<1xi64>} : () -> tensor<*xi64>
  %end = "onnx.Constant"() {value = dense<9223372036854775807> : tensor<1xi64>} : () -> tensor<*xi64>
  %axis = "onnx.Constant"() {value = dense<1> : tensor<1xi64>} : () -> tensor<*xi64>
  %last = "onnx.Slice"(%x, %start, %end, %axis) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>) -> tensor<*xf32>
  %s2 = "onnx.Constant"() {value = dense<32> : tensor<1xi64>} : () -> tensor<*xi64>
  %axis2 = "onnx.Constant"() {value = dense<-1> : tensor<1xi64>} : () -> tensor<*xi64>
  %half = "onnx.Slice"(%x, %s2, %end, %axis2) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>) -> tensor<*xf32>
  return %last, %half : tensor<*xf32>, tensor<*xf32>
}

// -----

// Zero-sized dims are valid: an empty past concatenated with new tokens.
// CHECK-LABEL: func.func @empty_past
// CHECK: "onnx.Concat"{{.*}} -> tensor<2x0x5xf32>
func.func @empty_past(%a: tensor<2x0x5xf32>, %b: tensor<2x0x5xf32>) -> tensor<*xf32> {
  %c = "onnx.Concat"(%a, %b) {axis = 1 : i64} : (tensor<2x0x5xf32>, tensor<2x0x5xf32>) -> tensor<*xf32>
  return %c : tensor<*xf32>
}

// -----

// Two different symbols cannot be broadcast together.
func.func @bad_broadcast(%a: tensor<?xf32, #onnx.dims<[s]>>, %b: tensor<?xf32, #onnx.dims<[p]>>) -> tensor<*xf32> {
  // expected-error @+1 {{cannot infer the shape of the result: cannot broadcast symbolic dims s and p}}
  %c = "onnx.Add"(%a, %b) : (tensor<?xf32, #onnx.dims<[s]>>, tensor<?xf32, #onnx.dims<[p]>>) -> tensor<*xf32>
  return %c : tensor<*xf32>
}

// -----

// A Reshape whose shape input is not known is an error, not a guess.
func.func @unknown_reshape(%x: tensor<4x4xf32>, %shape: tensor<2xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{the values of the shape input are not known}}
  %r = "onnx.Reshape"(%x, %shape) : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}
