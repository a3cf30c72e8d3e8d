// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(convert-onnx-to-linalg))' --verify-diagnostics | FileCheck %s

// A broadcast Add over a symbolic dim: the dim is read once from the argument,
// the bias is read through a map that drops the broadcast dim, and the types
// lose their #onnx.dims encoding.
// CHECK-LABEL: func.func @add_bias
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[B:.*]]: tensor<64xf32>) -> tensor<?x64xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %c0
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x64xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[BMAP:.*]], #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<?x64xf32>, tensor<64xf32>) outs(%[[E]] : tensor<?x64xf32>)
// CHECK: arith.addf
func.func @add_bias(%x: tensor<?x64xf32, #onnx.dims<[n, 64]>>, %b: tensor<64xf32>)
    -> tensor<?x64xf32, #onnx.dims<[n, 64]>> {
  %y = "onnx.Add"(%x, %b) : (tensor<?x64xf32, #onnx.dims<[n, 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #onnx.dims<[n, 64]>>
  return %y : tensor<?x64xf32, #onnx.dims<[n, 64]>>
}

// -----

// MatMul is a generic with the contraction dim as a reduction, accumulating
// into a zero fill with a separate multiply and add.
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NOT: math.fma
func.func @matmul(%x: tensor<?x?x16xf32, #onnx.dims<[b, s, 16]>>, %w: tensor<16x8xf32>)
    -> tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>> {
  %y = "onnx.MatMul"(%x, %w) : (tensor<?x?x16xf32, #onnx.dims<[b, s, 16]>>, tensor<16x8xf32>) -> tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>>
  return %y : tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>>
}

// -----

// Softmax decomposes into a max reduction, exp, a sum reduction and a divide.
// CHECK-LABEL: func.func @softmax
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: arith.divf
func.func @softmax(%x: tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> tensor<?x8xf32, #onnx.dims<[n, 8]>> {
  %y = "onnx.Softmax"(%x) {axis = -1 : i64} : (tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> tensor<?x8xf32, #onnx.dims<[n, 8]>>
  return %y : tensor<?x8xf32, #onnx.dims<[n, 8]>>
}

// -----

// Reshape sizes its result from the result's dims (4*s), not from the shape
// tensor, whose values shape inference already knows.
// CHECK-LABEL: func.func @reshape
// CHECK: %[[S:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[S4:.*]] = arith.muli %c4{{.*}}, %[[S]]
// CHECK: %[[SHAPE:.*]] = tensor.from_elements %{{.*}}, %[[S4]], %{{.*}} : tensor<3xindex>
// CHECK: tensor.reshape %arg0(%[[SHAPE]])
func.func @reshape(%x: tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>) -> tensor<?x?x16xf32, #onnx.dims<[b, 4*s, 16]>> {
  %shape = "onnx.Constant"() {value = dense<[0, -1, 16]> : tensor<3xi64>} : () -> tensor<3xi64>
  %r = "onnx.Reshape"(%x, %shape) {allowzero = 0 : i64} : (tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>, tensor<3xi64>) -> tensor<?x?x16xf32, #onnx.dims<[b, 4*s, 16]>>
  return %r : tensor<?x?x16xf32, #onnx.dims<[b, 4*s, 16]>>
}

// -----

// A shape computation with known symbolic values becomes those values.
// CHECK-LABEL: func.func @shape_values
// CHECK: %[[P:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[Q:.*]] = tensor.dim %arg1, %c1
// CHECK: %[[T:.*]] = arith.addi %[[P]], %[[Q]]
// CHECK: %[[I:.*]] = arith.index_cast %[[T]] : index to i64
// CHECK: tensor.from_elements %[[I]] : tensor<1xi64>
// CHECK-NOT: onnx.
func.func @shape_values(%a: tensor<1x?xf32, #onnx.dims<[1, p]>>, %b: tensor<1x?xf32, #onnx.dims<[1, q]>>) -> tensor<1xi64> {
  %c = "onnx.Concat"(%a, %b) {axis = 1 : i64} : (tensor<1x?xf32, #onnx.dims<[1, p]>>, tensor<1x?xf32, #onnx.dims<[1, q]>>) -> tensor<1x?xf32, #onnx.dims<[1, p + q]>>
  %s = "onnx.Shape"(%c) {start = 1 : i64, onnx.sym = #onnx.dims<[p + q]>} : (tensor<1x?xf32, #onnx.dims<[1, p + q]>>) -> tensor<1xi64>
  return %s : tensor<1xi64>
}

// -----

// Concat writes each input into its slot of one tensor.
// CHECK-LABEL: func.func @concat
// CHECK: %[[E:.*]] = tensor.empty
// CHECK: %[[A:.*]] = tensor.insert_slice %arg0 into %[[E]][0, 0] [%{{.*}}, 16] [1, 1]
// CHECK: tensor.insert_slice %arg1 into %[[A]][%{{.*}}, 0] [%{{.*}}, 16] [1, 1]
func.func @concat(%a: tensor<?x16xf32, #onnx.dims<[p, 16]>>, %b: tensor<?x16xf32, #onnx.dims<[s, 16]>>) -> tensor<?x16xf32, #onnx.dims<[p + s, 16]>> {
  %c = "onnx.Concat"(%a, %b) {axis = 0 : i64} : (tensor<?x16xf32, #onnx.dims<[p, 16]>>, tensor<?x16xf32, #onnx.dims<[s, 16]>>) -> tensor<?x16xf32, #onnx.dims<[p + s, 16]>>
  return %c : tensor<?x16xf32, #onnx.dims<[p + s, 16]>>
}

// -----

// Gather reads the table by index, wrapping negative indices.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: arith.index_cast
// CHECK: arith.select
// CHECK: tensor.extract %arg0
func.func @gather(%t: tensor<100x8xf32>, %ids: tensor<?x?xi64, #onnx.dims<[b, s]>>) -> tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>> {
  %e = "onnx.Gather"(%t, %ids) {axis = 0 : i64} : (tensor<100x8xf32>, tensor<?x?xi64, #onnx.dims<[b, s]>>) -> tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>>
  return %e : tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>>
}

// -----

// Weights become trailing arguments that say where their bytes are.
// CHECK-LABEL: func.func @weights
// CHECK-SAME: %arg1: tensor<512x64xf32> {lockstep.weight = {file = "m.onnx", length = 131072 : i64, name = "w", offset = 64 : i64}}
// CHECK: linalg.generic {{.*}}ins(%arg0, %arg1
func.func @weights(%x: tensor<?x512xf32, #onnx.dims<[n, 512]>>) -> tensor<?x64xf32, #onnx.dims<[n, 64]>> {
  %w = "onnx.Weight"() {name = "w", file = "m.onnx", offset = 64 : i64, length = 131072 : i64} : () -> tensor<512x64xf32>
  %y = "onnx.MatMul"(%x, %w) : (tensor<?x512xf32, #onnx.dims<[n, 512]>>, tensor<512x64xf32>) -> tensor<?x64xf32, #onnx.dims<[n, 64]>>
  return %y : tensor<?x64xf32, #onnx.dims<[n, 64]>>
}

// -----

// An op without a lowering yet is an error at the op, not a crash.
func.func @cumsum(%x: tensor<8xf32>, %a: tensor<i64>) -> tensor<8xf32> {
  // expected-error @+1 {{lowering of 'onnx.CumSum' is not supported yet}}
  %y = "onnx.CumSum"(%x, %a) : (tensor<8xf32>, tensor<i64>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
