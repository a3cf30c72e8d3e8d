// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-outputs-to-args))' | FileCheck %s

// Each result becomes a trailing argument that the returned value is
// materialized into; the result's attributes move to the argument.
// CHECK-LABEL: func.func @two_results
// CHECK-SAME: (%[[X:.*]]: tensor<?xf32>, %[[O0:.*]]: tensor<?xf32> {onnx.name = "y"}, %[[O1:.*]]: tensor<4xi64> {onnx.name = "z"})
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: bufferization.materialize_in_destination %[[X]] in %[[O0]]
// CHECK: bufferization.materialize_in_destination %{{.*}} in %[[O1]]
// CHECK: return{{$}}
func.func @two_results(%x: tensor<?xf32>) -> (tensor<?xf32> {onnx.name = "y"}, tensor<4xi64> {onnx.name = "z"}) {
  %c = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  return %x, %c : tensor<?xf32>, tensor<4xi64>
}

// -----

// A function without results gains no arguments.
// CHECK-LABEL: func.func @none()
// CHECK-NEXT: return
func.func @none() {
  return
}
